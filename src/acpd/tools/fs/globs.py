"""Glob patterns as regular expressions, and the deny_read/allow_read policy built on them.

Syntax: `*` and `?` stay inside one path component, `[...]` is a character class (`[!...]`
negates), `**` as a whole component matches any number of components (`**/x`, `a/**`, `a/**/b`),
`\\` escapes the next character.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass, field


def glob_to_regex(pattern: str) -> str:
    """The regular expression (for fullmatch) that `pattern` stands for."""
    out: list[str] = []
    i, n = 0, len(pattern)
    while i < n:
        c = pattern[i]
        if c == "*":
            j = i
            while j < n and pattern[j] == "*":
                j += 1
            whole = j - i >= 2 and (i == 0 or pattern[i - 1] == "/") and (
                j == n or pattern[j] == "/"
            )
            if whole and j < n:
                out.append("(?:.*/)?")
                j += 1
            elif whole:
                out.append(".*")
            else:
                out.append("[^/]*")
            i = j
            continue
        if c == "?":
            out.append("[^/]")
        elif c == "[":
            end = pattern.find("]", i + 2 if i + 1 < n and pattern[i + 1] in "!^" else i + 1)
            if end < 0 or (end == i + 1):
                out.append(re.escape(c))
            else:
                body = pattern[i + 1 : end]
                negate = body[:1] in ("!", "^")
                if negate:
                    body = body[1:]
                body = body.replace("\\", "\\\\").replace("[", "\\[")
                out.append(f"[{'^' if negate else ''}{body}]")
                i = end + 1
                continue
        elif c == "\\" and i + 1 < n:
            i += 1
            out.append(re.escape(pattern[i]))
        else:
            out.append(re.escape(c))
        i += 1
    return "".join(out)


def compile_glob(pattern: str, *, ignore_case: bool = False) -> re.Pattern[str]:
    """Compile `pattern`; raises re.error for a pattern that does not translate."""
    return re.compile(glob_to_regex(pattern), re.IGNORECASE if ignore_case else 0)


def _policy_glob(pattern: str, *, ignore_case: bool) -> re.Pattern[str]:
    # A pattern without a slash names a file anywhere: ".env" means "**/.env".
    return compile_glob(pattern if "/" in pattern else f"**/{pattern}", ignore_case=ignore_case)


@dataclass(frozen=True)
class ReadPolicy:
    """deny_read / allow_read, matched on the real path of an opened file.

    Deny first: a path matched by a deny pattern is refused, whatever allow says. Then, when
    allow patterns exist, a path must match one. Deny patterns match case-insensitively (so
    `**/.env` also refuses `.ENV` and `.Env`: a denial can only get broader); allow patterns
    match case-sensitively (an exception can only get narrower). Each pattern is tried on the
    absolute real path and on the path relative to the workspace root it lies under.
    Directories (listing, searching) are checked against deny only, with a trailing slash.
    """

    deny: tuple[str, ...] = ()
    allow: tuple[str, ...] = ()
    _deny: tuple[re.Pattern[str], ...] = field(init=False, repr=False, compare=False)
    _allow: tuple[re.Pattern[str], ...] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(
            self, "_deny", tuple(_policy_glob(p, ignore_case=True) for p in self.deny)
        )
        object.__setattr__(
            self, "_allow", tuple(_policy_glob(p, ignore_case=False) for p in self.allow)
        )

    @property
    def unrestricted(self) -> bool:
        return not self._deny and not self._allow

    def refusal(self, real: str, root_real: str, *, is_dir: bool = False) -> str | None:
        """Why reading `real` is refused, or None when it is allowed."""
        if self.unrestricted:
            return None
        candidates = list(_candidates(real, root_real, is_dir))
        for pattern, regex in zip(self.deny, self._deny, strict=True):
            if any(regex.fullmatch(c) for c in candidates):
                return f"{real} matches deny_read pattern {pattern!r}"
        if is_dir:
            return None  # allow patterns name files; a directory is only subject to deny
        if self._allow and not any(r.fullmatch(c) for r in self._allow for c in candidates):
            return f"{real} matches no allow_read pattern"
        return None


def _candidates(real: str, root_real: str, is_dir: bool) -> Iterable[str]:
    paths = [real]
    prefix = root_real.rstrip("/") + "/"
    if real.startswith(prefix):
        paths.append(real[len(prefix) :])
    for path in paths:
        yield path
        if is_dir:
            yield path + "/"
