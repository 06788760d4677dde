"""The glob dialect of the policy's path patterns (`deny_read`, `deny_write`, roots), as a
regular expression. Shared by the policy (which judges paths) and the sandbox (which masks
and binds them), so both read a pattern the same way; it imports nothing but `re`, so the
sandbox launcher stays light.

`**/` matches any number of directories (none included), `**` anything, `*` and `?` within
one path component, `[...]` a class (`[!...]` negated); everything else is literal.
"""

from __future__ import annotations

import re


def glob_regex(pattern: str) -> str:
    """The regex source (unanchored) for `pattern`."""
    out: list[str] = []
    i, n = 0, len(pattern)
    while i < n:
        ch = pattern[i]
        if pattern.startswith("**/", i):
            out.append("(?:.*/)?")
            i += 3
        elif pattern.startswith("**", i):
            out.append(".*")
            i += 2
        elif ch == "*":
            out.append("[^/]*")
            i += 1
        elif ch == "?":
            out.append("[^/]")
            i += 1
        elif ch == "[" and (end := pattern.find("]", i + 2)) >= 0:
            body = pattern[i + 1 : end].replace("\\", "\\\\")
            out.append("[" + ("^" + body[1:] if body.startswith("!") else body) + "]")
            i = end + 1
        else:
            out.append(re.escape(ch))
            i += 1
    return "".join(out)
