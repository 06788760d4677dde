"""Redaction for logs: per-tool allowlists, then the secret scanner on whatever is kept.

An argument not on its tool's allowlist is logged as its size only (a file's content, an
edit's strings); a result field not on the list is left out. What is kept goes through
`scan_secrets`, so a token pasted into a command is still masked. A tool with no allowlist
cannot be registered (the registry checks `ToolSpec.redaction`).
"""

from __future__ import annotations

from typing import Any

# Imported before acpd.tools.secrets on purpose: secrets imports filters.safety, whose package
# imports filters.engine, which imports secrets; entered from secrets, that cycle fails.
import acpd.tools.filters  # noqa: F401
from acpd.tools.secrets import scan_secrets
from acpd.tools.spec import Redaction, ToolOutput, ToolSpec

MAX_STRING = 2000
"""Longest kept string in a log line; longer ones are cut with their full length noted."""


def _allowlist(spec: ToolSpec) -> Redaction:
    found = spec.redaction
    if found is None:  # the registry refuses such a tool; a direct caller gets an error
        raise LookupError(f"tool {spec.id!r} has no redaction config")
    return found


def redact_args(spec: ToolSpec, args: dict[str, Any]) -> dict[str, Any]:
    """The arguments as they may be logged. Raises LookupError without a redaction config."""
    allowed = _allowlist(spec).args
    return {
        key: scrub(value) if key in allowed else _size(value) for key, value in args.items()
    }


def summarize_result(spec: ToolSpec, output: ToolOutput) -> dict[str, Any]:
    """A loggable summary: sizes, status and the allowlisted structured fields."""
    allowed = _allowlist(spec).result
    text = output.text
    summary: dict[str, Any] = {
        "chars": len(text), "lines": text.count("\n") + (1 if text and text[-1] != "\n" else 0),
        "failed": output.failed,
    }
    if isinstance(output.raw, dict):
        for key, value in output.raw.items():
            if key in allowed:
                summary[key] = scrub(value)
    return summary


def scrub(value: Any) -> Any:
    """Mask secrets in every string inside `value` (dicts and lists recursed), cut long ones."""
    if isinstance(value, str):
        clean = scan_secrets(value)[0] if value else value
        if len(clean) > MAX_STRING:
            return clean[:MAX_STRING] + f"...[{len(clean)} chars]"
        return clean
    if isinstance(value, dict):
        return {str(scrub(k)): scrub(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [scrub(v) for v in value]
    if value is None or isinstance(value, bool | int | float):
        return value
    return scrub(str(value))


def _size(value: Any) -> str:
    if isinstance(value, str):
        return f"[redacted: {len(value)} chars]"
    if isinstance(value, list | dict):
        return f"[redacted: {len(value)} items]"
    return "[redacted]"
