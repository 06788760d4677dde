"""Which of a fixed set of literal substrings occur in a text, in one pass.

The secret scanner and the preserved-lines pass each gate their regexes on a few dozen
literal triggers. Checking them one `in` at a time costs one pass over the text per trigger
(~0.5 ms/MB each, ~30 ms/MB for all of them); one Aho-Corasick pass (`ahocorasick-rs`, SIMD
prefilters) finds them all at once for ~2 ms/MB.

The text is searched in chunks of CHUNK characters (overlapping by the longest needle), so the
match list and the UTF-8 copy stay small whatever the size of the text, and once a needle has
been seen the automaton is rebuilt without it: a needle met on every line costs one chunk.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

_ac: Any
try:
    import ahocorasick_rs as _ac
except ImportError:  # pragma: no cover - the dependency is declared; `in` checks still work
    _ac = None

CHUNK = 1 << 18
"""Characters searched per call (256 K): bounds the transient match list and UTF-8 copy."""
SMALL = 1 << 14
"""Below this many characters, `in` checks are cheaper than building chunks."""


class SubstringSet:
    """A frozen set of non-empty literal needles; `present(text)` returns those in `text`."""

    __slots__ = ("_automata", "_longest", "needles")

    def __init__(self, needles: Iterable[str]) -> None:
        self.needles: tuple[str, ...] = tuple(sorted({n for n in needles if n}))
        self._longest = max((len(n) for n in self.needles), default=0)
        self._automata: dict[frozenset[str], Any] = {}

    def _automaton(self, remaining: frozenset[str]) -> Any:
        found = self._automata.get(remaining)
        if found is None:
            ordered = sorted(remaining)
            automaton = _ac.BytesAhoCorasick(
                [n.encode("utf-8", "surrogatepass") for n in ordered]
            )
            found = (automaton, ordered)
            if len(self._automata) < 256:  # the usual subsets recur; a bound all the same
                self._automata[remaining] = found
        return found

    def present(self, text: str) -> set[str]:
        """The needles that occur in `text`."""
        if not self.needles or not text:
            return set()
        if _ac is None or len(text) <= SMALL:
            return {n for n in self.needles if n in text}
        seen: set[str] = set()
        remaining = frozenset(self.needles)
        overlap = self._longest - 1
        size = len(text)
        start = 0
        while start < size and remaining:
            chunk = text[start : start + CHUNK + overlap].encode("utf-8", "surrogatepass")
            automaton, ordered = self._automaton(remaining)
            hits = {ordered[i] for i, _, _ in automaton.find_matches_as_indexes(chunk, True)}
            if hits:
                seen |= hits
                remaining = remaining - hits
            start += CHUNK
        return seen
