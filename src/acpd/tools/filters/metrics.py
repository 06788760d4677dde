"""Per-rule counters: hits, lines in and out, confidence distribution (F/P/B), timeouts."""

from __future__ import annotations

import threading
from dataclasses import dataclass

from acpd.tools.filters.types import FilterConfidence


@dataclass(slots=True)
class RuleStats:
    hits: int = 0
    lines_in: int = 0
    lines_out: int = 0
    full: int = 0
    partial: int = 0
    fallback: int = 0
    timeouts: int = 0

    @property
    def savings(self) -> float:
        return 0.0 if not self.lines_in else 100.0 * (1 - self.lines_out / self.lines_in)


class FilterMetrics:
    """Shared by successive filter sets, so counters survive a reload. Thread-safe: a large
    output may be filtered in a worker thread."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._stats: dict[str, RuleStats] = {}
        self._tripped: set[str] = set()

    def record(
        self, rule: str, lines_in: int, lines_out: int, confidence: FilterConfidence
    ) -> None:
        with self._lock:
            s = self._stats.setdefault(rule, RuleStats())
            s.hits += 1
            s.lines_in += lines_in
            s.lines_out += lines_out
            if confidence is FilterConfidence.FULL:
                s.full += 1
            elif confidence is FilterConfidence.PARTIAL:
                s.partial += 1
            else:
                s.fallback += 1

    def record_timeout(self, rule: str) -> None:
        """The rule ran out of time: it is skipped from now on (until a reload rebuilds it)."""
        with self._lock:
            self._stats.setdefault(rule, RuleStats()).timeouts += 1
            self._tripped.add(rule)

    def is_tripped(self, rule: str) -> bool:
        return rule in self._tripped

    def reset_tripped(self) -> None:
        with self._lock:
            self._tripped.clear()

    def snapshot(self) -> dict[str, RuleStats]:
        with self._lock:
            return {
                name: RuleStats(**{k: getattr(s, k) for k in s.__slots__})
                for name, s in self._stats.items()
            }
