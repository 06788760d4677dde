"""`diagnostics` (core__diagnostics): run the workspace's checkers, return what they found.

Rules and limits:
- Checkers: cargo check, cargo clippy, ruff, mypy, tsc, eslint; detected from the workspace
  root (checkers.py) or fixed by `[tools.diagnostics] checkers`, or one named in the call.
- They run project code (cargo build scripts and proc macros, eslint and mypy plugins from
  the project's config), so they run as one bash line (each checker between two `echo`
  marker lines that carry its exit status), which the shell policy judges exactly as a bash
  command (`ToolSpec.commands`: a deny denies the call, an ask asks), and which the session's
  command runner runs: the same sandbox, environment hygiene, process group, editor terminal
  (embedded in the card while it runs) and timeout (`timeout_secs`, for the whole run) as
  bash. The tool is `state_change` (checkers write caches and build artefacts): ask mode
  asks, read-only mode does not offer it.
- A checker that is not installed gives no diagnostics and a warning, never an error; one
  that fails without diagnostics (a crash, a config error) adds a warning quoting its output.
- At most `max_diagnostics` come back, errors first; the result says when it cut, and how
  many there were. Each diagnostic is {severity, message, file, line, col, rule, source};
  the card's locations are the shown diagnostics' files and lines.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, ConfigDict, Field

from acpd.tools.capabilities import CommandRequest
from acpd.tools.diagnostics.checkers import ORDER, Checker, checker, detect, find_program
from acpd.tools.diagnostics.config import CheckerName, DiagnosticsConfig
from acpd.tools.diagnostics.parsers import Diagnostic
from acpd.tools.errors import ErrorCategory, ToolError
from acpd.tools.spec import (
    ContentItem,
    Effect,
    TerminalItem,
    ToolContext,
    ToolOutput,
    ToolSpec,
    redaction,
)

if TYPE_CHECKING:
    from acpd.tools.capabilities import Cleanup, CommandResult

MAX_LOCATIONS = 50
BEGIN = "::acpd-diagnostics-begin "
END = "::acpd-diagnostics-end "
LOGGED_RESULT = ("count", "shown", "capped", "checkers", "warnings")


class DiagnosticsParams(BaseModel):
    model_config = ConfigDict(extra="forbid")

    checker: CheckerName | None = Field(
        None, description="Run only this checker (default: those the workspace configures)")


def planned(args: DiagnosticsParams | dict[str, Any], root: str,
            config: DiagnosticsConfig) -> list[CheckerName]:
    one = args.get("checker") if isinstance(args, dict) else args.checker
    if one is not None:
        return [one] if one in ORDER else []
    return list(config.checkers) or detect(root)


@dataclass(frozen=True, slots=True)
class Plan:
    checkers: list[Checker]
    missing: list[str]
    """Warnings for the checkers whose program is not installed."""
    command: str | None
    """One bash line that runs them all, each between two marker lines (one terminal, one
    policy decision on exactly what runs); None when there is nothing to run."""


def plan(args: DiagnosticsParams | dict[str, Any], root: str,
         config: DiagnosticsConfig) -> Plan:
    checkers: list[Checker] = []
    missing: list[str] = []
    parts: list[str] = []
    for name in planned(args, root, config):
        spec = checker(name, root)
        program = find_program(spec.program, root)
        if program is None:
            missing.append(f"{name}: {spec.program} is not installed; skipped")
            continue
        checkers.append(spec)
        parts.append(f"echo {BEGIN}{name}; {spec.command(program)}; echo {END}{name} $?")
    return Plan(checkers, missing, "; ".join(parts) or None)


def commands(config: DiagnosticsConfig) -> Any:
    """The command line a call will run, for the shell policy."""

    def lines(args: dict[str, Any], cwd: str) -> list[str]:
        command = plan(args, cwd, config).command
        return [command] if command is not None else []

    return lines


def sections(output: str) -> tuple[dict[str, str], dict[str, int]]:
    """Each checker's output and exit status, split at the marker lines."""
    texts: dict[str, list[str]] = {}
    codes: dict[str, int] = {}
    current: str | None = None
    for line in output.splitlines():
        if line.startswith(BEGIN):
            current = line[len(BEGIN):].strip()
            texts.setdefault(current, [])
        elif line.startswith(END):
            name, _, code = line[len(END):].partition(" ")
            if code.strip().isdigit():
                codes[name] = int(code)
            current = None
        elif current is not None:
            texts[current].append(line)
    return {k: "\n".join(v) for k, v in texts.items()}, codes


class DiagnosticsTool:
    def __init__(self, config: DiagnosticsConfig) -> None:
        self.config = config

    async def __call__(self, args: DiagnosticsParams, ctx: ToolContext) -> ToolOutput:
        root = ctx.cwd
        todo = plan(args, root, self.config)
        warnings = list(todo.missing)
        if not todo.checkers and not todo.missing:
            warnings.append("no checker is configured in this workspace (Cargo.toml, ruff or "
                            "mypy config, tsconfig.json, eslint config); name one with "
                            "`checker`")
        found: list[Diagnostic] = []
        if todo.command is not None:
            result = await self._run(todo.command, ctx)
            texts, codes = sections(result.output)
            for spec in todo.checkers:
                diags = spec.parse(texts.get(spec.name, ""))
                warnings += _run_warnings(spec.name, texts.get(spec.name), codes.get(spec.name),
                                          diags)
                found += diags
            if result.timed_out:
                warnings.append(f"the checkers did not finish in {self.config.timeout_secs:g} "
                                "s and were stopped; the diagnostics may be incomplete")
            if result.truncated:
                warnings.append("the output was cut at the output limit; some diagnostics "
                                "are missing")
        return self._output(root, found, [c.name for c in todo.checkers], warnings)

    async def _run(self, command: str, ctx: ToolContext) -> CommandResult:
        shown: list[ContentItem] = []

        async def on_terminal(terminal_id: str, release: Cleanup) -> None:
            ctx.defer(release)  # after the final update, which still embeds it
            shown[:] = [TerminalItem(terminal_id)]
            await ctx.publish(list(shown))

        async def on_output(_text: str) -> None:
            return None

        request = CommandRequest(command, ctx.cwd, self.config.timeout_secs,
                                 ctx.output_byte_limit, roots=ctx.roots)
        try:
            result = await ctx.runner.run(request, on_terminal, on_output)
        except OSError as exc:
            raise ToolError(ErrorCategory.PERMANENT_FAILURE,
                            f"cannot run the checkers: {exc}") from None
        return result

    def _output(self, root: str, found: list[Diagnostic], ran: list[str],
                warnings: list[str]) -> ToolOutput:
        found = [_absolute(d, root) for d in found]
        found.sort(key=lambda d: {"error": 0, "warning": 1}.get(d.severity, 2))
        limit = self.config.max_diagnostics
        shown = found[:limit]
        errors = sum(d.severity == "error" for d in found)
        plural = "" if len(found) == 1 else "s"
        head = (f"{len(found)} diagnostic{plural} ({errors} errors, {len(found) - errors} "
                f"other) from {', '.join(ran) or 'no checker'}")
        if len(found) > limit:
            head += f"; showing the first {limit} (max_diagnostics): {len(found) - limit} more"
        lines = [head, *(_line(d, root) for d in shown)]
        lines += [f"warning: {w}" for w in warnings]
        raw = {"diagnostics": [d.to_json() for d in shown], "count": len(found),
               "shown": len(shown), "capped": len(found) > limit, "checkers": ran,
               "warnings": warnings}
        located = list(dict.fromkeys((d.file, d.line) for d in shown if d.file))
        return ToolOutput("\n".join(lines), raw=raw, locations=located[:MAX_LOCATIONS])


def _absolute(diag: Diagnostic, root: str) -> Diagnostic:
    if not diag.file or os.path.isabs(diag.file):
        return diag
    from dataclasses import replace

    return replace(diag, file=os.path.normpath(os.path.join(root, diag.file)))


def _line(d: Diagnostic, root: str) -> str:
    path = os.path.relpath(d.file, root) if d.file.startswith(root.rstrip("/") + "/") \
        else d.file
    where = ":".join(str(x) for x in (path, d.line, d.col) if x is not None)
    rule = f" [{d.rule}]" if d.rule else ""
    return f"{where}: {d.severity}{rule}: {d.message}"


def _run_warnings(name: str, text: str | None, code: int | None,
                  diags: list[Diagnostic]) -> list[str]:
    if text is None:
        return [f"{name} did not run (its output is missing: cut off or stopped before it)"]
    if code is None:
        return [f"{name} did not finish; its diagnostics may be incomplete"]
    if not diags and code not in (0, None):
        tail = text.strip()[-300:].replace("\n", " | ")
        return [f"{name} exited {code} without diagnostics: {tail}"]
    return []


def make_diagnostics_specs(config: DiagnosticsConfig | None = None) -> list[ToolSpec]:
    config = config or DiagnosticsConfig()
    return [ToolSpec(
        id="core__diagnostics", name="diagnostics",
        description="Run the project's checkers (cargo check/clippy, ruff, mypy, tsc, eslint; "
        "detected from the workspace) and return their diagnostics: severity, message, "
        "file, line, col, rule.",
        params=DiagnosticsParams, effect=Effect.STATE_CHANGE, kind="execute",
        execute=DiagnosticsTool(config),
        title=lambda a: f"Diagnostics ({a.checker})" if a.checker else "Diagnostics",
        redaction=redaction(("checker",), LOGGED_RESULT), retry_safe=False,
        commands=commands(config),
    )]
