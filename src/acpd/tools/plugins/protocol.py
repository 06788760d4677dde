"""The wire between acpd and a plugin tool: one JSON request on stdin, one JSON response on
stdout (version 1; zigclaw's protocol carried the same idea at version 0).

Request:  {"protocol_version": 1, "request_id": "...", "tool": "echo", "args": {...},
           "cwd": "..."}
Response: {"protocol_version": 1, "ok": true, "output": "text for the model", "data": ...}
          {"protocol_version": 1, "ok": false, "error": "what went wrong"}

Rules: the response is one JSON object (leading and trailing whitespace allowed) of at most
`max_stdout_bytes`; `protocol_version` must be 1 when present; `output` and `error` are
strings; `data` is any JSON and goes to the card's rawOutput. Anything else is a
PermanentFailure that quotes the start of what the tool printed.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import orjson

from acpd.tools.errors import ErrorCategory, ToolError

PROTOCOL_VERSION = 1
QUOTE_CHARS = 300


@dataclass(frozen=True, slots=True)
class Reply:
    ok: bool
    output: str
    data: Any = None


def encode_request(request_id: str, tool: str, args: dict[str, Any], cwd: str) -> bytes:
    return orjson.dumps({"protocol_version": PROTOCOL_VERSION, "request_id": request_id,
                         "tool": tool, "args": args, "cwd": cwd}) + b"\n"


def decode_reply(tool: str, stdout: bytes) -> Reply:
    """Raises ToolError(PermanentFailure) for anything but a well-formed response."""
    try:
        raw = orjson.loads(stdout.strip() or b"null")
    except orjson.JSONDecodeError:
        raise _bad(tool, "is not JSON", stdout) from None
    if not isinstance(raw, dict):
        raise _bad(tool, "is not a JSON object", stdout)
    version = raw.get("protocol_version", PROTOCOL_VERSION)
    if version != PROTOCOL_VERSION:
        raise _bad(tool, f"speaks protocol_version {version!r}, not {PROTOCOL_VERSION}", stdout)
    ok = raw.get("ok")
    if not isinstance(ok, bool):
        raise _bad(tool, "has no boolean 'ok'", stdout)
    text = raw.get("output" if ok else "error", "")
    if not isinstance(text, str):
        raise _bad(tool, f"has a non-string {'output' if ok else 'error'!r}", stdout)
    return Reply(ok, text, raw.get("data"))


def _bad(tool: str, why: str, stdout: bytes) -> ToolError:
    quoted = stdout[:QUOTE_CHARS].decode("utf-8", "replace")
    return ToolError(ErrorCategory.PERMANENT_FAILURE,
                     f"plugin {tool}: its response {why}: {quoted!r}")
