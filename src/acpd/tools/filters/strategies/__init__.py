"""The nine strategies, by their `type` name in filters.toml."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from acpd.tools.filters.strategies import diagnostics, git, lines, testsummary
from acpd.tools.filters.strategies.base import Budget, Builder, FilterTimeoutError, Strategy

BUILDERS: dict[str, Builder] = {
    **lines.BUILDERS,
    **testsummary.BUILDERS,
    **diagnostics.BUILDERS,
    **git.BUILDERS,
}
STRATEGY_TYPES = tuple(sorted(BUILDERS))


def build_strategy(table: Mapping[str, Any]) -> Strategy:
    """Raises ValueError (unknown type, bad parameter) or UnsafePatternError (a bad regex)."""
    kind = table.get("type")
    if not isinstance(kind, str) or kind not in BUILDERS:
        raise ValueError(f"strategy type must be one of {', '.join(STRATEGY_TYPES)}, not {kind!r}")
    return BUILDERS[kind](table)


__all__ = ["STRATEGY_TYPES", "Budget", "FilterTimeoutError", "Strategy", "build_strategy"]
