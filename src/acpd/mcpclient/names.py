"""Tool names the model is shown: `mcp__<server>__<tool>`, which every provider accepts.

Each part keeps [A-Za-z0-9_-] (anything else becomes `_`, runs of `_` collapse to one so the
`__` separators stay unambiguous); the whole is at most 64 characters (a long tool part is cut
and given a digest of the original, so two long names stay apart). Two servers or two tools
that sanitize alike get `_2`, `_3`, ... in the order they were listed.
"""

from __future__ import annotations

import hashlib
import re

MAX_NAME = 64
PREFIX = "mcp__"
_BAD = re.compile(r"[^A-Za-z0-9_-]")
_RUNS = re.compile(r"_{2,}")


def part(name: str, limit: int = 24) -> str:
    """One sanitized part, at most `limit` characters (never empty)."""
    clean = _RUNS.sub("_", _BAD.sub("_", name)).strip("_") or "x"
    if len(clean) <= limit:
        return clean
    digest = hashlib.sha256(name.encode("utf-8", "surrogatepass")).hexdigest()[:6]
    return f"{clean[: limit - 7]}_{digest}"


def unique(name: str, taken: set[str], limit: int) -> str:
    """`name`, or `name_2`, `name_3`... (cut to `limit`) if taken; adds the result to `taken`."""
    candidate, n = name, 1
    while candidate in taken:
        n += 1
        suffix = f"_{n}"
        candidate = name[: limit - len(suffix)] + suffix
    taken.add(candidate)
    return candidate


def tool_name(server_part: str, tool: str, taken: set[str]) -> str:
    """The full `mcp__<server>__<tool>` name, unique among `taken` (which it joins)."""
    head = f"{PREFIX}{server_part}__"
    room = MAX_NAME - len(head)
    mine = {t[len(head):] for t in taken if t.startswith(head)}
    name = head + unique(part(tool, room), mine, room)
    taken.add(name)
    return name
