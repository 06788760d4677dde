"""group_by_rule: linter and type-checker diagnostics, one block per rule.

Formats: rustc/clippy, ruff (full and concise), mypy, eslint (stylish), tsc. Each block says how
often the rule fired, its first message and where; errors keep the first full diagnostic (the
snippet is what the model needs to fix it). Lines that are neither a diagnostic nor known
progress noise (a crash, `could not compile`, the tool's own summary) are kept as they are.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from acpd.tools.filters.strategies.base import Budget, Builder, check_keys, choice_param, int_param
from acpd.tools.filters.types import FilterConfidence, StageResult

FULL, PARTIAL, FALLBACK = FilterConfidence.FULL, FilterConfidence.PARTIAL, FilterConfidence.FALLBACK
FORMATS = ("auto", "rustc", "ruff", "mypy", "eslint", "tsc")


@dataclass(slots=True)
class Diagnostic:
    rule: str
    severity: str
    message: str
    location: str
    block: list[str] = field(default_factory=list)


@dataclass(slots=True)
class Parsed:
    diagnostics: list[Diagnostic]
    other: list[str]


# --- rustc / clippy ---------------------------------------------------------------------------

_RUST_HEAD = re.compile(r"^(warning|error)(?:\[(E\d+)\])?: (.+)$")
_RUST_LOC = re.compile(r"^\s*--> (\S+)")
_RUST_LINT = re.compile(r"#\[(?:warn|deny|forbid)\(([\w:]+)\)\]|index\.html#(\w+)|`-D ([\w:-]+)`")
_RUST_NOISE = re.compile(
    r"^\s*(?:Compiling|Checking|Downloaded|Downloading|Blocking|Updating"
    r"|Locking|Adding|Fresh|Finished|Documenting)\b|^\s*$"
)
_RUST_SUMMARY = re.compile(
    r"^(?:warning|error): .*(?:generated \d+ warnings?|could not compile"
    r"|aborting due to|\d+ warnings? emitted|build failed)"
)


def _rustc(lines: list[str]) -> Parsed:
    diags: list[Diagnostic] = []
    other: list[str] = []
    current: Diagnostic | None = None
    for line in lines:
        head = _RUST_HEAD.match(line)
        if head and not _RUST_SUMMARY.match(line):
            severity, code, message = head.groups()
            current = Diagnostic(code or "", severity, message, "", [line])
            diags.append(current)
            continue
        if (
            current is not None
            and line
            and (line[0] in " |=" or line[:1].isdigit() or line.startswith(("help:", "note:")))
        ):
            current.block.append(line)
            loc = _RUST_LOC.match(line)
            if loc and not current.location:
                current.location = loc.group(1)
            lint = _RUST_LINT.search(line)
            if lint and not current.rule:
                name = next(g for g in lint.groups() if g)
                current.rule = (
                    name
                    if "::" in name or name.startswith("E")
                    else (f"clippy::{name}" if "index.html" in line else name)
                )
            continue
        current = None
        if not _RUST_NOISE.match(line):
            other.append(line)
    for d in diags:
        d.rule = d.rule or f"{d.severity}: {d.message}"
    return Parsed(diags, other)


# --- ruff -------------------------------------------------------------------------------------

_RUFF_CONCISE = re.compile(r"^(\S+?:\d+:\d+): ([A-Z]+\d+) (?:\[\*\] )?(.+)$")
_RUFF_FULL_HEAD = re.compile(r"^([A-Z]+\d+) (?:\[\*\] )?(.+)$")
_RUFF_FULL_LOC = re.compile(r"^\s*--> (\S+)")


def _ruff(lines: list[str]) -> Parsed:
    diags: list[Diagnostic] = []
    other: list[str] = []
    current: Diagnostic | None = None
    for line in lines:
        concise = _RUFF_CONCISE.match(line)
        if concise:
            loc, code, message = concise.groups()
            diags.append(Diagnostic(code, "error", message, loc, [line]))
            current = None
            continue
        head = _RUFF_FULL_HEAD.match(line)
        if head:
            current = Diagnostic(head.group(1), "error", head.group(2), "", [line])
            diags.append(current)
            continue
        if current is not None and (
            line[:1] in (" ", "|") or line.startswith("help:") or line[:1].isdigit()
        ):
            current.block.append(line)
            loc = _RUFF_FULL_LOC.match(line)
            if loc and not current.location:
                current.location = loc.group(1)
            continue
        current = None
        if line.strip():
            other.append(line)
    return Parsed(diags, other)


# --- mypy -------------------------------------------------------------------------------------

_MYPY = re.compile(r"^(\S+?:\d+(?::\d+)?): (error|warning|note): (.*?)(?:  \[([\w-]+)\])?$")


def _mypy(lines: list[str]) -> Parsed:
    diags: list[Diagnostic] = []
    other: list[str] = []
    for line in lines:
        m = _MYPY.match(line)
        if m:
            loc, severity, message, code = m.groups()
            if severity == "note":
                if diags and diags[-1].location.split(":")[0] == loc.split(":")[0]:
                    diags[-1].block.append(line)
                continue
            diags.append(Diagnostic(code or "misc", severity, message, loc, [line]))
        elif line.strip():
            other.append(line)
    return Parsed(diags, other)


# --- eslint (stylish) ---------------------------------------------------------------------------

_ESLINT_FILE = re.compile(r"^(/\S+|[A-Za-z]:\\\S+|\S+\.(?:[cm]?[jt]sx?|vue|svelte))$")
_ESLINT_ROW = re.compile(r"^\s+(\d+:\d+)\s+(error|warning)\s+(.+?)\s{2,}(\S+)$")


def _eslint(lines: list[str]) -> Parsed:
    diags: list[Diagnostic] = []
    other: list[str] = []
    current_file = ""
    for line in lines:
        row = _ESLINT_ROW.match(line)
        if row:
            pos, severity, message, rule = row.groups()
            diags.append(Diagnostic(rule, severity, message, f"{current_file}:{pos}", [line]))
            continue
        if _ESLINT_FILE.match(line):
            current_file = line
            continue
        if line.strip():
            other.append(line)
    return Parsed(diags, other)


# --- tsc --------------------------------------------------------------------------------------

_TSC = re.compile(
    r"^(\S+?)(?:\((\d+),(\d+)\)|:(\d+):(\d+)) ?:? - ?(error|warning) (TS\d+): (.*)$"
    r"|^(\S+?)\((\d+),(\d+)\): (error|warning) (TS\d+): (.*)$"
)


def _tsc(lines: list[str]) -> Parsed:
    diags: list[Diagnostic] = []
    other: list[str] = []
    current: Diagnostic | None = None
    for line in lines:
        m = _TSC.match(line)
        if m:
            g = m.groups()
            if g[8] is not None:
                loc, severity, code, message = f"{g[8]}:{g[9]}:{g[10]}", g[11], g[12], g[13]
            else:
                row, col = (g[1], g[2]) if g[1] else (g[3], g[4])
                loc, severity, code, message = f"{g[0]}:{row}:{col}", g[5], g[6], g[7]
            current = Diagnostic(code, severity, message, loc, [line])
            diags.append(current)
            continue
        if current is not None and line.startswith(" "):
            current.block.append(line)
            continue
        current = None
        if line.strip():
            other.append(line)
    return Parsed(diags, other)


_PARSERS = {"rustc": _rustc, "ruff": _ruff, "mypy": _mypy, "eslint": _eslint, "tsc": _tsc}


def _detect(lines: list[str]) -> str | None:
    for line in lines[:400]:
        if _MYPY.match(line):
            return "mypy"
        if _RUFF_CONCISE.match(line) or _RUFF_FULL_HEAD.match(line):
            return "ruff"
        if _TSC.match(line):
            return "tsc"
        if _ESLINT_ROW.match(line):
            return "eslint"
        if _RUST_HEAD.match(line):
            return "rustc"
    return None


@dataclass(frozen=True, slots=True)
class GroupByRule:
    format: str
    max_locations: int
    max_block_lines: int
    type_name: str = "group_by_rule"

    @classmethod
    def build(cls, table: Mapping[str, Any]) -> GroupByRule:
        check_keys(table, {"format", "max_locations", "max_block_lines"})
        return cls(
            choice_param(table, "format", FORMATS),
            int_param(table, "max_locations", 8, minimum=1),
            int_param(table, "max_block_lines", 16, minimum=1),
        )

    def apply(self, lines: list[str], budget: Budget) -> StageResult:
        budget.check()
        fmt = _detect(lines) if self.format == "auto" else self.format
        if fmt is None:
            return StageResult(lines, FALLBACK)
        parsed = _PARSERS[fmt](lines)
        budget.check()
        if not parsed.diagnostics:
            return StageResult(lines, FULL if len(lines) <= 3 else FALLBACK)
        out = self._render(parsed.diagnostics)
        out.extend(parsed.other)
        return StageResult(out, FULL)

    def _render(self, diags: list[Diagnostic]) -> list[str]:
        groups: dict[str, list[Diagnostic]] = {}
        for d in diags:
            groups.setdefault(d.rule, []).append(d)
        # Errors first, then the most frequent rules.
        order = sorted(
            groups.items(),
            key=lambda kv: (not any(d.severity == "error" for d in kv[1]), -len(kv[1]), kv[0]),
        )
        out: list[str] = []
        for rule, items in order:
            first = items[0]
            severity = "error" if any(d.severity == "error" for d in items) else first.severity
            count = f" ({len(items)}x)" if len(items) > 1 else ""
            message = "" if rule.endswith(first.message) else f": {first.message}"
            out.append(f"{severity}[{rule}]{count}{message}")
            if severity == "error" or len(items) == 1:
                block = first.block[: self.max_block_lines]
                out.extend(f"  {b}" for b in block)
                if len(first.block) > len(block):
                    out.append(f"  ... {len(first.block) - len(block)} more lines")
            locations = [d.location for d in items if d.location]
            if len(items) > 1 and locations:
                shown = ", ".join(locations[: self.max_locations])
                more = len(locations) - self.max_locations
                out.append(f"  at {shown}" + (f" (+{more} more)" if more > 0 else ""))
        return out


BUILDERS: dict[str, Builder] = {"group_by_rule": GroupByRule.build}
