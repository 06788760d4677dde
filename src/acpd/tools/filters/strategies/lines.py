"""Line strategies: strip_noise, keep_matching, strip_annotated, truncate, dedup."""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from itertools import filterfalse
from typing import Any

from acpd.tools.filters.strategies.base import (
    CHECK_EVERY,
    Budget,
    Builder,
    check_keys,
    hit,
    int_param,
    omitted,
    patterns_param,
    str_list_param,
)
from acpd.tools.filters.strategies.normalize import block_keys
from acpd.tools.filters.types import FilterConfidence, StageResult

LONG_BLOCK_CHARS = 1 << 20
"""A block of lines longer than this in total is matched line by line, budget in between."""

FULL, PARTIAL, FALLBACK = FilterConfidence.FULL, FilterConfidence.PARTIAL, FilterConfidence.FALLBACK


def _select(
    lines: list[str], pattern: re.Pattern[str], keep_hits: bool, budget: Budget
) -> list[str]:
    out: list[str] = []
    search = pattern.search
    pick = filter if keep_hits else filterfalse
    for start in range(0, len(lines), CHECK_EVERY):
        budget.check()
        block = lines[start : start + CHECK_EVERY]
        if sum(map(len, block)) <= LONG_BLOCK_CHARS:
            # Select in C (`filter` calls `search` per line); RE2 is linear in the text.
            out.extend(pick(search, block))
            continue
        for line in block:  # long lines: the budget is checked between them
            budget.check()
            if hit(pattern, line) is keep_hits:
                out.append(line)
    return out


@dataclass(frozen=True, slots=True)
class StripNoise:
    """Remove lines matching any pattern. Full when lines were removed, Fallback otherwise."""

    pattern: re.Pattern[str]
    type_name: str = "strip_noise"

    @classmethod
    def build(cls, table: Mapping[str, Any]) -> StripNoise:
        check_keys(table, {"patterns"})
        pattern = patterns_param(table, "patterns", required=True)
        assert pattern is not None
        return cls(pattern)

    def apply(self, lines: list[str], budget: Budget) -> StageResult:
        out = _select(lines, self.pattern, False, budget)
        return StageResult(out, FULL if len(out) < len(lines) else FALLBACK)


@dataclass(frozen=True, slots=True)
class KeepMatching:
    """Keep only lines matching a pattern. When nothing matches the output is unexpected:
    keep it whole (Fallback). Dropping lines is a heuristic (Partial)."""

    pattern: re.Pattern[str]
    type_name: str = "keep_matching"

    @classmethod
    def build(cls, table: Mapping[str, Any]) -> KeepMatching:
        check_keys(table, {"patterns"})
        pattern = patterns_param(table, "patterns", required=True)
        assert pattern is not None
        return cls(pattern)

    def apply(self, lines: list[str], budget: Budget) -> StageResult:
        out = _select(lines, self.pattern, True, budget)
        if not out and lines:
            return StageResult(lines, FALLBACK)
        return StageResult(out, FULL if len(out) == len(lines) else PARTIAL)


@dataclass(frozen=True, slots=True)
class StripAnnotated:
    """Strip lines carrying an annotation such as `note:` or `help:` (after indentation and
    rustc's `=`/`|` gutters), with the indented lines that continue them."""

    annotations: tuple[str, ...]
    type_name: str = "strip_annotated"

    @classmethod
    def build(cls, table: Mapping[str, Any]) -> StripAnnotated:
        check_keys(table, {"annotations"})
        return cls(tuple(str_list_param(table, "annotations", ["note:", "help:"])))

    def apply(self, lines: list[str], budget: Budget) -> StageResult:
        out: list[str] = []
        depth = -1  # indentation of the annotation being skipped, -1 when none
        for i, line in enumerate(lines):
            if i % CHECK_EVERY == 0:
                budget.check()
            body = line.lstrip(" \t")
            indent = len(line) - len(body)
            if depth >= 0 and body and indent > depth and not body.startswith(("|", "-->")):
                continue
            depth = -1
            marker = body.lstrip("=| \t")
            if marker.startswith(self.annotations):
                depth = indent
                continue
            out.append(line)
        return StageResult(out, FULL if len(out) < len(lines) else FALLBACK)


@dataclass(frozen=True, slots=True)
class Truncate:
    """Keep the first `head` and last `tail` lines when there are more than `max_lines`."""

    max_lines: int
    head: int
    tail: int
    type_name: str = "truncate"

    @classmethod
    def build(cls, table: Mapping[str, Any]) -> Truncate:
        check_keys(table, {"max_lines", "head", "tail"})
        head = int_param(table, "head", 20)
        tail = int_param(table, "tail", 20)
        max_lines = int_param(table, "max_lines", max(head + tail, 100), minimum=1)
        if head + tail > max_lines:
            raise ValueError("`head + tail` must not exceed `max_lines`")
        return cls(max_lines, head, tail)

    def apply(self, lines: list[str], budget: Budget) -> StageResult:
        if len(lines) <= self.max_lines:
            return StageResult(lines, FULL)
        cut = len(lines) - self.head - self.tail
        tail = lines[len(lines) - self.tail :] if self.tail else []
        return StageResult([*lines[: self.head], omitted(cut), *tail], PARTIAL)


@dataclass(frozen=True, slots=True)
class Dedup:
    """Normalise timestamps, UUIDs and hex ids, then fold repeats into the first line with a
    `(repeated N times)` note. `window = 1` folds consecutive repeats only; a larger window also
    folds a line repeating one of the last `window` distinct lines (interleaved log streams).
    `normalize_numbers` also folds lines that differ only in numbers (durations, counters)."""

    normalize_numbers: bool
    window: int
    type_name: str = "dedup"

    @classmethod
    def build(cls, table: Mapping[str, Any]) -> Dedup:
        check_keys(table, {"normalize_numbers", "window"})
        numbers = table.get("normalize_numbers", False)
        if not isinstance(numbers, bool):
            raise ValueError("`normalize_numbers` must be true or false")
        return cls(numbers, int_param(table, "window", 1, minimum=1))

    def apply(self, lines: list[str], budget: Budget) -> StageResult:
        out: list[str] = []
        counts: list[int] = []
        recent: dict[str, int] = {}  # key -> index in out, at most `window` entries
        window, seen, add, count = self.window, recent.get, out.append, counts.append
        for start in range(0, len(lines), CHECK_EVERY):
            budget.check()
            block = lines[start : start + CHECK_EVERY]
            for line, key in zip(block, block_keys(block, self.normalize_numbers), strict=True):
                where = seen(key)
                if where is not None and line:
                    counts[where] += 1
                    continue
                if len(recent) >= window:
                    del recent[next(iter(recent))]
                recent[key] = len(out)
                add(line)
                count(1)
        folded = [
            f"{x}  (repeated {n} times)" if n > 1 else x for x, n in zip(out, counts, strict=True)
        ]
        return StageResult(folded, FULL if len(out) < len(lines) else FALLBACK)


BUILDERS: dict[str, Builder] = {
    "strip_noise": StripNoise.build,
    "keep_matching": KeepMatching.build,
    "strip_annotated": StripAnnotated.build,
    "truncate": Truncate.build,
    "dedup": Dedup.build,
}
