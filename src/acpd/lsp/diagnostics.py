"""What goes out as `textDocument/publishDiagnostics`.

Two sources: the `diagnostics` tool's structured result (rawOutput `{"diagnostics": [...]}`,
files made absolute by the tool), and a refused call whose card names files (its locations):
the refusal is shown on those files as one error, so a status line that only reads
diagnostics still sees why. Lines are 1-based in acpd and 0-based in LSP. Each publish
replaces the file's earlier diagnostics from acpd (a file the tool no longer reports is
cleared with an empty list).
"""

from __future__ import annotations

from collections import defaultdict
from pathlib import Path
from typing import Any

from lsprotocol import types

SOURCE = "acpd"
SEVERITIES = {
    "error": types.DiagnosticSeverity.Error,
    "warning": types.DiagnosticSeverity.Warning,
    "info": types.DiagnosticSeverity.Information,
}


def _position(line: Any, col: Any) -> types.Position:
    row = line - 1 if isinstance(line, int) and not isinstance(line, bool) and line > 0 else 0
    column = col - 1 if isinstance(col, int) and not isinstance(col, bool) and col > 0 else 0
    return types.Position(line=row, character=column)


def _diagnostic(item: dict[str, Any]) -> types.Diagnostic:
    start = _position(item.get("line"), item.get("col"))
    checker = item.get("source")
    rule = item.get("rule")
    return types.Diagnostic(
        range=types.Range(start=start, end=types.Position(start.line, start.character + 1)),
        message=str(item.get("message") or "(no message)"),
        severity=SEVERITIES.get(str(item.get("severity")), types.DiagnosticSeverity.Error),
        source=f"{SOURCE}/{checker}" if isinstance(checker, str) and checker else SOURCE,
        code=rule if isinstance(rule, str) and rule else None,
    )


def uri(path: str) -> str:
    return Path(path).as_uri()


def from_tool_output(raw: Any) -> dict[str, list[types.Diagnostic]] | None:
    """The `diagnostics` tool's rawOutput by file URI; None if `raw` is not that shape."""
    if not isinstance(raw, dict) or not isinstance(raw.get("diagnostics"), list):
        return None
    found: dict[str, list[types.Diagnostic]] = defaultdict(list)
    for item in raw["diagnostics"]:
        path = item.get("file") if isinstance(item, dict) else None
        if isinstance(path, str) and path.startswith("/"):
            found[uri(path)].append(_diagnostic(item))
    return dict(found)


def from_refusal(
    message: str, locations: list[str], lines: list[int | None]
) -> dict[str, list[types.Diagnostic]]:
    """One error per named file: the reason the call was refused."""
    found: dict[str, list[types.Diagnostic]] = {}
    for index, path in enumerate(locations):
        if not path.startswith("/"):
            continue
        line = lines[index] if index < len(lines) else None
        item = {"message": message, "severity": "error", "line": line, "source": "policy"}
        found.setdefault(uri(path), []).append(_diagnostic(item))
    return found
