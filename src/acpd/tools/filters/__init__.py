"""Declarative output filters: what the model and the editor see of a tool's output.

    from acpd.tools.filters import apply, build_filter_set, load_filter_set
    result = apply("cd x && cargo test 2>&1 | tail -80", output, exit_code)
    result.text, result.confidence, result.stats_line, result.raw_redacted

`apply` uses the embedded rules; the daemon builds its own set with `load_filter_set(settings)`
on start and again whenever config.toml or filters.toml changes (tools/outputreload.py), and
swaps it in with one assignment.
"""

from __future__ import annotations

from acpd.tools.filters.config import MAX_FILE_BYTES, Rule
from acpd.tools.filters.engine import (
    FilterSet,
    FilterSettings,
    build_filter_set,
    filters_file,
    load_filter_set,
)
from acpd.tools.filters.matching import last_segment
from acpd.tools.filters.metrics import FilterMetrics, RuleStats
from acpd.tools.filters.safety import MAX_PATTERN_CHARS, UnsafePatternError, compile_pattern
from acpd.tools.filters.sanitize import sanitize_output
from acpd.tools.filters.types import FilterConfidence, FilterResult

_default: FilterSet | None = None


def default_filter_set() -> FilterSet:
    """The embedded rules with default settings, built on first use."""
    global _default
    if _default is None:
        _default = build_filter_set()
    return _default


def apply(command: str, output: str, exit_code: int | None = None) -> FilterResult:
    """Filter `output` of `command` with the embedded rules (see FilterSet.apply)."""
    return default_filter_set().apply(command, output, exit_code)


__all__ = [
    "MAX_FILE_BYTES",
    "MAX_PATTERN_CHARS",
    "FilterConfidence",
    "FilterMetrics",
    "FilterResult",
    "FilterSet",
    "FilterSettings",
    "Rule",
    "RuleStats",
    "UnsafePatternError",
    "apply",
    "build_filter_set",
    "compile_pattern",
    "default_filter_set",
    "filters_file",
    "last_segment",
    "load_filter_set",
    "sanitize_output",
]
