"""The runner's output stage: what the model, the editor, the audit and the store get of a
tool's output.

    filters (bash, or any tool a rule names as `tool:<name>`) -> secrets redacted, with a
    warning line naming the kinds -> overflow (stored whole, the model gets head + tail and
    `overflow:<uuid>`) -> the tool's own notes (exit code, timeout) appended unfiltered ->
    the stats line, for the card only.

Every output passes the secret scanner, whatever the tool: the structured output (rawOutput)
and the streaming card content too, so a credential a command prints reaches nobody but the
process that printed it. The work is split in two: `prepare` is pure computation (run in a
worker thread for large outputs), `store` touches the session store (on the caller's
thread, which owns the database connection).
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from typing import Any

from acpd.tools.filters import FilterSet, sanitize_output
from acpd.tools.overflow import (
    OverflowAccess,
    OverflowSettings,
    cap_bytes,
    head_and_tail,
    new_entry_id,
    reference,
)
from acpd.tools.secrets import (
    SecretFinding,
    SecretScanner,
    hold_point,
    key_open_at,
    redact_cut_key_head,
    redact_key_remainder,
    scan_secrets,
    warning_line,
)
from acpd.tools.spec import ContentItem, TextItem, ToolOutput, ToolSpec

log = logging.getLogger("acpd.tools.output")

NOT_STORED = "(the whole output could not be stored)"
NO_OVERFLOW_TOOLS = frozenset({"core__read_overflow"})
"""Tools whose output is itself an overflow entry: never stored again."""


@dataclass(slots=True)
class Prepared:
    """The output as everyone but the tool will see it."""

    text: str
    """For the model: filtered, redacted, cut when it overflowed, notes appended."""
    card: str
    """For the editor's card: `text` plus the stats line when a filter removed lines."""
    raw: Any
    """rawOutput: the structured output with its strings filtered and redacted."""
    info: dict[str, Any] = field(default_factory=dict)
    """For the audit line: rule, lines in/out, confidence, secret kinds, overflow id."""
    entry_id: str | None = None
    entry: str | None = None
    """The whole (redacted) output to store under `entry_id`, when it overflowed."""


class OutputStage:
    """Built at start and on each reload (tools/outputreload.py), published with one
    assignment (`pipeline.output = stage`); a call reads `pipeline.output` once, so an output
    in flight is filtered by one stage whole. Its only mutable state is whether its warnings
    were shown."""

    def __init__(
        self, filters: FilterSet | None = None, overflow: OverflowSettings | None = None,
        *, warnings: tuple[str, ...] | None = None,
    ) -> None:
        self.filters = filters
        self.overflow = overflow or OverflowSettings()
        self._scanner: SecretScanner | None = filters.scanner if filters is not None else None
        self._secure = filters is None or filters.scanner is not None
        self._warnings = warnings
        self._warned = False

    @property
    def warnings(self) -> tuple[str, ...]:
        """What to tell the user once: the filter set's load warnings, unless given (a reload
        that kept the current set says why instead)."""
        if self._warnings is not None:
            return self._warnings
        return self.filters.warnings if self.filters is not None else ()

    def take_warnings(self) -> str | None:
        """The load warnings as one note, the first time only (then None): the daemon shows
        them to the user once, in the first session that prompts."""
        if self._warned or not self.warnings:
            return None
        self._warned = True
        lines = "\n".join(f"- {w}" for w in self.warnings)
        return f"[acpd] The output filters loaded with problems:\n{lines}"

    def redact(self, text: str) -> tuple[str, list[SecretFinding]]:
        """(text with secrets replaced, what was found); the identity with security off."""
        if not self._secure or not text:
            return text, []
        return self._scanner.scan(text) if self._scanner is not None else scan_secrets(text)

    def scrub_items(self, items: list[ContentItem]) -> list[ContentItem]:
        """Streaming card content (live command output, from either runner): its live view
        (bounded, without a trailing word that may be a credential's first half), with
        secrets replaced."""
        return [
            TextItem(self.redact(live_view(i.text))[0]) if isinstance(i, TextItem) else i
            for i in items
        ]

    def prepare(self, spec: ToolSpec, args: dict[str, Any], output: ToolOutput) -> Prepared:
        """Filter, redact and cut one output. Never raises for any output."""
        end = output.body_end if output.body_end is not None else len(output.text)
        body, notes = output.text[:end], output.text[end:]
        command = _command(spec, args)
        raw = output.raw
        if isinstance(raw, dict) and raw.get("truncated") and self._secure:
            # Cut by a byte limit acpd did not apply (an editor terminal's): it may start
            # inside a key whose BEGIN line went with the cut.
            body = redact_cut_key_head(body)[0]
            raw = {k: redact_cut_key_head(v)[0] if k in ("stdout", "stderr")
                   and isinstance(v, str) else v for k, v in raw.items()}
        exit_code = raw.get("exit_code") if isinstance(raw, dict) else None
        core, warnings, info, whole = self._filter(spec, command, body, exit_code)
        stats = info.pop("stats", None)
        entry_id = entry = None
        budget = self.overflow.threshold
        if len(body) > budget and spec.id not in NO_OVERFLOW_TOOLS:
            entry_id = new_entry_id()
            entry = cap_bytes(sanitize_output(whole), self.overflow.max_bytes)
            info["overflow"] = entry_id
            ref = reference(entry_id)
            if len(core) > budget:
                core = head_and_tail(core, budget, ref)
            else:
                note = f"[the unfiltered output ({len(body)} characters) is stored as {ref}]"
                warnings = [note, *warnings]
        # Joined so that an output with nothing to add comes back exactly as the tool gave it.
        text = _join(_join(core, "\n".join(warnings)), notes)
        card = f"{text}\n{stats}" if stats else text
        new_raw = self._raw(spec, command, raw, body, core, entry_id)
        return Prepared(text, card, new_raw, info, entry_id, entry)

    def store(self, prepared: Prepared, access: OverflowAccess | None) -> Prepared:
        """Save the overflow entry; when there is nowhere to save it, or the save fails, the
        reference is taken out again so the model is not sent after something absent."""
        if prepared.entry_id is None or prepared.entry is None:
            return prepared
        ref = reference(prepared.entry_id)
        try:
            if access is None:
                raise LookupError("no overflow storage in this context")
            access.save(prepared.entry_id, prepared.entry)
        except Exception as exc:  # storage trouble must not lose the output itself
            log.warning("overflow entry not stored: %s", exc)
            prepared.text = prepared.text.replace(ref, NOT_STORED)
            prepared.card = prepared.card.replace(ref, NOT_STORED)
            prepared.raw = _replace_strings(prepared.raw, ref, NOT_STORED)
            prepared.info["overflow"] = None
        prepared.entry = None  # the caller may keep `prepared`; the big string can go
        return prepared

    # --- the steps ------------------------------------------------------------------------

    def _filter(
        self, spec: ToolSpec, command: str, body: str, exit_code: Any
    ) -> tuple[str, list[str], dict[str, Any], str]:
        """(filtered and redacted text, warning lines, audit info, whole redacted text)."""
        fs = self.filters
        if fs is not None and (spec.kind == "execute" or fs.match(command) is not None):
            code = exit_code if isinstance(exit_code, int) else None
            # The seeds' stats line names the shell: `[shell] 342 lines -> 28 lines, ...`.
            r = fs.apply(command, body, code, tool="shell" if spec.kind == "execute" else spec.name)
            joined = "\n".join(r.warnings)
            core = r.text[: len(r.text) - len(joined)] if joined else r.text
            info: dict[str, Any] = {
                "rule": r.rule_name, "lines_in": r.lines_in, "lines_out": r.lines_out,
                "confidence": r.confidence.label, "stats": r.stats_line,
            }
            if r.secret_kinds:
                info["secrets"] = sorted(set(r.secret_kinds))
            return core, list(r.warnings), info, r.raw_redacted or body
        clean, findings = self.redact(body)
        info = {"secrets": sorted({f.kind for f in findings})} if findings else {}
        warning = warning_line(findings)
        return clean, [warning] if warning else [], info, clean

    def _raw(
        self, spec: ToolSpec, command: str, raw: Any, body: str, core: str, entry_id: str | None
    ) -> Any:
        if raw is None:
            return None
        if isinstance(raw, dict) and isinstance(raw.get("stdout"), str):
            out = dict(raw)
            for key in ("stdout", "stderr"):
                value = raw.get(key)
                if isinstance(value, str) and value:
                    out[key] = self._stream(spec, command, value, body, core, entry_id)
            return out
        return _map_strings(raw, lambda s: self.redact(s)[0])

    def _stream(
        self, spec: ToolSpec, command: str, value: str, body: str, core: str,
        entry_id: str | None,
    ) -> str:
        """One envelope stream, filtered and redacted like the text (not its notes)."""
        if value == body or value + "\n" == body:
            text = core  # an editor terminal: stdout is the whole output, already done
        else:
            text = self._filter(spec, command, value, None)[0]
        if entry_id is not None and len(text) > self.overflow.threshold:
            text = head_and_tail(text, self.overflow.threshold, reference(entry_id))
        return text


LIVE_CHARS = 32 * 1024
"""The most of a running command's output one streaming update carries (its tail): a
1 MiB output is not sent again every quarter second, only its last part."""


def live_view(text: str) -> str:
    """What a card shows of output that is still growing: the tail (at most LIVE_CHARS,
    from a line start where there is one), up to the trailing word, which is held back
    until it cannot be the first half of a credential (`hold_point`). When the tail starts
    inside a private key whose BEGIN line is before it, the key's lines are hidden."""
    end = hold_point(text)
    start = max(0, end - LIVE_CHARS)
    if start > 0:
        line = text.find("\n", start, end)
        start = line + 1 if line >= 0 else start
    view = text[start:end]
    if start > 0 and key_open_at(text, start):
        view = redact_key_remainder(view)
    return view


def _join(text: str, more: str) -> str:
    if not more:
        return text
    if not text:
        return more
    return text + more if text.endswith("\n") or more.startswith("\n") else f"{text}\n{more}"


def _command(spec: ToolSpec, args: dict[str, Any]) -> str:
    """What the filter rules match: the command of a shell call, else `tool:<name>` (so a
    built-in shell rule never fires on another tool by accident, and a user rule can opt a
    tool in with `match = { exact = "tool:grep" }`)."""
    command = args.get("command")
    if spec.kind == "execute" and isinstance(command, str):
        return command
    return f"tool:{spec.name}"


def _map_strings(value: Any, fn: Any) -> Any:
    if isinstance(value, str):
        return fn(value)
    if isinstance(value, dict):
        return {k: _map_strings(v, fn) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_map_strings(v, fn) for v in value]
    return value


def _replace_strings(value: Any, old: str, new: str) -> Any:
    return _map_strings(value, lambda s: s.replace(old, new))
