"""What a strategy is, and the helpers every strategy shares (parameter parsing, matching)."""

# The regexes written in the strategies (module constants, built in) run on Python's `re`:
# each was reviewed as linear (no nested or overlapping unbounded quantifiers; anchored where
# they repeat), and tests/filters/test_builtin_regexes.py runs all of them over long hostile
# lines. Patterns from filters.toml or the config never come here uncompiled: they go through
# `safety.compile_pattern`, which uses RE2.

from __future__ import annotations

import re
import time
from collections.abc import Callable, Mapping
from typing import Any, Protocol

from acpd.tools.filters.safety import combine, compile_pattern
from acpd.tools.filters.types import StageResult


class FilterTimeoutError(Exception):
    """A rule ran past its time budget (a slow regex on hostile output)."""


class Budget:
    """Wall-clock budget for one filter run, checked every few thousand lines."""

    __slots__ = ("deadline",)

    def __init__(self, seconds: float) -> None:
        self.deadline = time.monotonic() + seconds

    def check(self) -> None:
        """Raises FilterTimeoutError once the budget is spent."""
        if time.monotonic() > self.deadline:
            raise FilterTimeoutError("filter ran out of time")


UNLIMITED = Budget(float("inf"))
CHECK_EVERY = 2048


class Strategy(Protocol):
    @property
    def type_name(self) -> str:
        """The `type` this strategy has in filters.toml."""
        ...

    def apply(self, lines: list[str], budget: Budget) -> StageResult:
        """Filter `lines` (sanitised, without newlines). Raises FilterTimeoutError."""
        ...


Builder = Callable[[Mapping[str, Any]], Strategy]


def patterns_param(table: Mapping[str, Any], key: str, *, required: bool) -> re.Pattern[str] | None:
    """A list of regexes, each checked, combined into one alternation.

    Raises ValueError (wrong type, missing) or UnsafePatternError.
    """
    value = table.get(key)
    if value is None:
        if required:
            raise ValueError(f"`{key}` is required")
        return None
    if not isinstance(value, list) or not all(isinstance(p, str) for p in value):
        raise ValueError(f"`{key}` must be a list of strings")
    if required and not value:
        raise ValueError(f"`{key}` must not be empty")
    for pattern in value:
        compile_pattern(pattern)
    return combine(value)


def int_param(table: Mapping[str, Any], key: str, default: int, *, minimum: int = 0) -> int:
    """Raises ValueError when the value is not an integer >= minimum."""
    value = table.get(key, default)
    if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
        raise ValueError(f"`{key}` must be an integer >= {minimum}")
    return value


def str_list_param(table: Mapping[str, Any], key: str, default: list[str]) -> list[str]:
    value = table.get(key, default)
    if not isinstance(value, list) or not all(isinstance(v, str) and v for v in value):
        raise ValueError(f"`{key}` must be a list of non-empty strings")
    return list(value)


def choice_param(table: Mapping[str, Any], key: str, choices: tuple[str, ...]) -> str:
    value = table.get(key, choices[0])
    if value not in choices:
        raise ValueError(f"`{key}` must be one of {', '.join(choices)}")
    return str(value)


def hit(pattern: re.Pattern[str], line: str) -> bool:
    """Search one whole line (configured patterns run on RE2: linear in the line)."""
    return pattern.search(line) is not None


def check_keys(table: Mapping[str, Any], allowed: set[str]) -> None:
    """Raises ValueError on an unknown strategy key (a typo must not pass silently)."""
    unknown = sorted(set(table) - allowed - {"type"})
    if unknown:
        raise ValueError(f"unknown key(s) {', '.join(unknown)}")


def omitted(count: int, what: str = "lines") -> str:
    return f"... {count} {what} omitted ..."
