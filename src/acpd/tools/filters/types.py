"""The values the filter engine hands back: confidence, one stage's result, the final result."""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import IntEnum


class FilterConfidence(IntEnum):
    """How sure a filter is that it kept what matters. Higher is worse; the worst stage wins."""

    FULL = 0
    """The filter recognised the output and handled it."""
    PARTIAL = 1
    """Heuristic: some content may have been over-filtered (truncation, keep_matching)."""
    FALLBACK = 2
    """The rule matched the command but the output did not look as expected."""

    @property
    def label(self) -> str:
        return self.name.capitalize()


def worst(*levels: FilterConfidence) -> FilterConfidence:
    return max(levels, default=FilterConfidence.FULL)


@dataclass(frozen=True, slots=True)
class StageResult:
    lines: list[str]
    confidence: FilterConfidence


@dataclass(frozen=True, slots=True)
class FilterResult:
    """What the pipeline gets for one tool output."""

    text: str
    """What the model and the editor see: filtered, preserved lines re-appended, secrets
    redacted, security warnings appended."""
    confidence: FilterConfidence
    rule_name: str | None
    """The rule that matched, or None (only sanitising and the security pass ran)."""
    lines_in: int
    lines_out: int
    stats_line: str | None
    """`[shell] 342 lines -> 28 lines, 91.8% filtered`, only when lines were removed."""
    warnings: tuple[str, ...] = ()
    """The warning lines appended to `text` (secrets hidden), for logs and the audit."""
    secret_kinds: tuple[str, ...] = ()
    raw_redacted: str | None = None
    """The unfiltered output with secrets redacted (for overflow, audit, session storage);
    None when nothing had to be redacted, so the caller can keep its original string."""
    preserved: tuple[str, ...] = field(default=())
    """Security-relevant lines the filter had removed and that were re-appended."""

    @property
    def removed_lines(self) -> int:
        return max(0, self.lines_in - self.lines_out)
