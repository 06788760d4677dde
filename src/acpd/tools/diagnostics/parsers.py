"""Parsers from each checker's machine-readable output to `Diagnostic`s.

Every parser reads the whole combined output of one run (an editor terminal cannot separate
stdout from stderr) and keeps only what it recognises: progress lines, npm notices and the
like are skipped, a line that looks like JSON but does not parse is skipped, and nothing in
the output can raise. Paths are kept as the checker printed them (relative to the checker's
working directory, or absolute); `resolve` in specs.py makes them absolute.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any, Literal

import orjson

Severity = Literal["error", "warning", "info"]


@dataclass(frozen=True, slots=True)
class Diagnostic:
    severity: Severity
    message: str
    file: str
    line: int | None
    col: int | None
    rule: str | None
    source: str
    """The checker: cargo, clippy, ruff, mypy, tsc, eslint."""

    def to_json(self) -> dict[str, Any]:
        return {"severity": self.severity, "message": self.message, "file": self.file,
                "line": self.line, "col": self.col, "rule": self.rule, "source": self.source}


def _json_lines(output: str) -> Iterator[Any]:
    for line in output.splitlines():
        line = line.strip()
        if line[:1] in ("{", "["):
            try:
                yield orjson.loads(line)
            except orjson.JSONDecodeError:
                continue


def _int(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _str(value: Any) -> str:
    return value if isinstance(value, str) else ""


def parse_cargo(output: str, source: str = "cargo") -> list[Diagnostic]:
    """`cargo check|clippy --message-format=json`: compiler-message lines, primary span."""
    found: list[Diagnostic] = []
    for item in _json_lines(output):
        if not isinstance(item, dict) or item.get("reason") != "compiler-message":
            continue
        msg = item.get("message")
        if not isinstance(msg, dict):
            continue
        level = _str(msg.get("level"))
        if level not in ("error", "warning") or not _str(msg.get("message")):
            continue
        spans = [s for s in msg.get("spans") or [] if isinstance(s, dict)]
        span = next((s for s in spans if s.get("is_primary")), spans[0] if spans else {})
        code = msg.get("code")
        rule = _str(code.get("code")) or None if isinstance(code, dict) else None
        found.append(Diagnostic(
            "error" if level == "error" else "warning", _str(msg["message"]),
            _str(span.get("file_name")), _int(span.get("line_start")),
            _int(span.get("column_start")), rule, source))
    return found


def parse_ruff(output: str) -> list[Diagnostic]:
    """`ruff check --output-format=json-lines` (or `json`: one array)."""
    found: list[Diagnostic] = []
    for item in _json_lines(output):
        for entry in item if isinstance(item, list) else [item]:
            if not isinstance(entry, dict) or "filename" not in entry:
                continue
            where = entry.get("location")
            loc: dict[str, Any] = where if isinstance(where, dict) else {}
            code = _str(entry.get("code")) or None
            found.append(Diagnostic(
                "warning" if code else "error", _str(entry.get("message")),
                _str(entry.get("filename")), _int(loc.get("row")), _int(loc.get("column")),
                code, "ruff"))
    return found


MYPY_LINE = re.compile(
    r"^(?P<file>[^:\n]+?):(?P<line>\d+):(?:(?P<col>\d+):)? (?P<sev>error|warning|note): "
    r"(?P<msg>.*?)(?:  \[(?P<code>[a-z0-9-]+)\])?$")


def parse_mypy(output: str) -> list[Diagnostic]:
    """mypy's text lines (`--show-column-numbers --show-error-codes`); notes are dropped."""
    found: list[Diagnostic] = []
    for line in output.splitlines():
        m = MYPY_LINE.match(line.rstrip())
        if m is None or m["sev"] == "note":
            continue
        found.append(Diagnostic(
            "error" if m["sev"] == "error" else "warning", m["msg"], m["file"],
            int(m["line"]), int(m["col"]) if m["col"] else None, m["code"], "mypy"))
    return found


TSC_LINE = re.compile(
    r"^(?P<file>.+?)\((?P<line>\d+),(?P<col>\d+)\): (?P<sev>error|warning|message) "
    r"(?P<code>TS\d+): (?P<msg>.*)$")


def parse_tsc(output: str) -> list[Diagnostic]:
    """`tsc --noEmit --pretty false`: `file(line,col): error TSxxxx: message`."""
    found: list[Diagnostic] = []
    for line in output.splitlines():
        m = TSC_LINE.match(line.strip())
        if m is None:
            continue
        severity: Severity = "error" if m["sev"] == "error" else (
            "warning" if m["sev"] == "warning" else "info")
        found.append(Diagnostic(severity, m["msg"], m["file"], int(m["line"]), int(m["col"]),
                                m["code"], "tsc"))
    return found


def parse_eslint(output: str) -> list[Diagnostic]:
    """`eslint -f json`: an array of {filePath, messages: [{ruleId, severity, ...}]}."""
    found: list[Diagnostic] = []
    for item in _json_lines(output):
        for result in item if isinstance(item, list) else []:
            if not isinstance(result, dict):
                continue
            path = _str(result.get("filePath"))
            for msg in result.get("messages") or []:
                if not isinstance(msg, dict):
                    continue
                level = msg.get("severity")
                found.append(Diagnostic(
                    "error" if level == 2 else "warning", _str(msg.get("message")), path,
                    _int(msg.get("line")), _int(msg.get("column")),
                    _str(msg.get("ruleId")) or None, "eslint"))
    return found
