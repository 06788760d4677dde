"""Regexes from configuration, compiled on a linear-time engine so that none can hang the daemon.

Every pattern that comes from a file or the config (filters.toml rules, built-in and user,
and `[tools.filters.security] extra_patterns`) is compiled with RE2 (`google-re2`, imported
as `re2`): matching is linear in the length of the text whatever the pattern, so `(\\w|\\d)+$`
on a 1 MB line takes milliseconds instead of never ending. RE2 has no backreferences,
lookaround or conditional groups; a pattern using them (or any pattern RE2 cannot compile)
is refused with UnsafePatternError, whose message the loader puts next to the rule's name,
and the rule is skipped while the rest of the set (or the last good set) stays in force.
Matching still runs under the filter run's wall-clock budget (strategies check it between
lines), which bounds the total over many long lines.

The object `compile_pattern` returns is an RE2 regexp with the interface of `re.Pattern`
that the filters and the secret scanner use (search, finditer, subn, groups, pattern);
it is typed as `re.Pattern[str]` for them.

Regexes written in the code of the strategies and the secret scanner stay on `re`: each was
reviewed as linear (no nested or overlapping unbounded quantifiers; see the note next to
each group of them) and they match one line at a time.
"""

from __future__ import annotations

import re
from typing import Any, cast

MAX_PATTERN_CHARS = 512

_options: Any = None


class UnsafePatternError(ValueError):
    """The pattern is too long or RE2 cannot compile it."""


def _re2() -> tuple[Any, Any]:
    """The re2 module and quiet options (RE2 logs compile errors to stderr by default)."""
    global _options
    import re2  # type: ignore[import-untyped]  # no stubs; imported on first filter build

    if _options is None:
        options = re2.Options()
        options.log_errors = False
        _options = options
    return re2, _options


def compile_pattern(pattern: str, flags: int = 0) -> re.Pattern[str]:
    """Compile `pattern` with RE2 (`flags`: only re.IGNORECASE and re.MULTILINE, turned into
    inline flags). Raises UnsafePatternError (too long, or RE2 cannot compile it)."""
    if len(pattern) > MAX_PATTERN_CHARS:
        raise UnsafePatternError(
            f"regex is {len(pattern)} characters long (limit {MAX_PATTERN_CHARS})"
        )
    return _compile(pattern, flags)


def _compile(pattern: str, flags: int) -> re.Pattern[str]:
    re2, options = _re2()
    inline = ("i" if flags & re.IGNORECASE else "") + ("m" if flags & re.MULTILINE else "")
    source = f"(?{inline}){pattern}" if inline else pattern
    try:
        return cast("re.Pattern[str]", re2.compile(source, options))
    except re2.error as exc:
        detail = exc.args[0] if exc.args else exc
        if isinstance(detail, bytes):
            detail = detail.decode("utf-8", "replace")
        raise UnsafePatternError(
            f"invalid regex for the linear-time engine (RE2): {detail}"
        ) from None
    except (TypeError, ValueError) as exc:
        raise UnsafePatternError(f"invalid regex: {exc}") from None


def combine(patterns: list[str], flags: int = 0) -> re.Pattern[str] | None:
    """One alternation of already-checked patterns (each wrapped in a non-capturing group)."""
    if not patterns:
        return None
    return _compile("|".join(f"(?:{p})" for p in patterns), flags)
