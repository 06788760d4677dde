"""Bash brace expansion (`{a,b}`, `{1..5}`, `{a..e}`) over the unquoted parts of a word,
bounded so that a hostile word cannot make it explode.

The judge looks at the first MAX_BRACE_WORDS words only, but bash builds every one of them
before the command starts: `word_count` gives a word's full count without building it, and
expansion.py sums it over a command line (the engine asks past its MAX_WORDS).
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Final, NamedTuple

from acpd.policy.budget import TooComplex, check

MAX_BRACE_WORDS: Final = 256
"""The judge reads every word a field makes up to this many, and asks past it (a word it did
not read could name `.git/hooks/...`). A sequence longer than this counts as its two ends."""
MAX_BRACE_DEPTH: Final = 16
"""Alternatives nested deeper than this ask (TooComplex)."""
MAX_BRACE_CHARS: Final = 1024
MAX_UNMATCHED: Final = 64
SEQUENCE_CHARS: Final = 64
"""A sequence expression is never longer (two 20-digit ends and a step)."""
WORDS_CAP: Final = 10**15
"""Counts are clamped here: past it the exact figure does not matter."""

Chars = list[tuple[str, bool]]
"""A field's characters, each with whether it was quoted (or escaped, or came out of an
expansion: never special to brace expansion)."""


def brace_expand(pieces: list[tuple[str, bool]]) -> list[str]:
    """Bash brace expansion over the unquoted parts of a field: every word, in bash's order.
    Raises TooComplex for a field with braces longer than MAX_BRACE_CHARS, one that makes
    more than MAX_BRACE_WORDS words, or nests deeper than MAX_BRACE_DEPTH (the judge asks)."""
    if not any(not q and "{" in text for text, q in pieces):
        return ["".join(text for text, _ in pieces)]
    if sum(len(text) for text, _ in pieces) > MAX_BRACE_CHARS:  # before building the list
        raise TooComplex("a word with braces is too long to expand")
    return _expand(chars_of(pieces), 0, None, 0)


def word_count(chars: Chars) -> int:
    """How many words bash's brace expansion makes of this field, without making them.
    Raises TooComplex as `brace_expand` does (too long, nested too deeply)."""
    if len(chars) > MAX_BRACE_CHARS and any(c == "{" and not q for c, q in chars):
        raise TooComplex("a word with braces is too long to expand")
    return _count(chars, 0, len(chars), 0)


def chars_of(pieces: list[tuple[str, bool]]) -> Chars:
    """A field's pieces (text, quoted) as characters."""
    chars: Chars = []
    for text, quoted in pieces:
        if text:
            chars.extend((c, quoted) for c in text)
        elif quoted:
            chars.append(("", True))  # `''{}`: the brace is not the field's first character
    return chars


# Bash's reading (braces.c), on index ranges [lo, hi) of one field: the first `{` that has
# a matching `}` starts the expression; inside it only commas and `..` at its own level
# count, and a `}` at that level before any of them does not close it (`{x}1,}` is `x}1`
# and ``); a `{}` at the start of the text being expanded is literal (`find -exec {} \;`,
# and the start of every alternative and of the rest after an expression); the parts are
# the text before, the alternatives (or a sequence, or the braces kept as they are when
# neither), and the rest after, expanded the same way.

def _gobble(chars: Chars, lo: int, hi: int, i: int, satisfy: str) -> int | None:
    """The index of the character that ends the search for `satisfy` from `i`, or None."""
    level = 0
    commas = 0 if satisfy == "}" else 1
    while i < hi:
        if not i & 1023:
            check()
        c, quoted = chars[i]
        if quoted:
            i += 1
            continue
        if c == satisfy and level == 0 and commas > 0:
            if c == "{" and i == lo and i + 1 < hi and chars[i + 1] == ("}", False):
                i += 1
                continue
            return i
        if c == "{":
            level += 1
        elif c == "}":
            level = max(0, level - 1)
        elif satisfy == "}" and level == 0 and (c == "," or (
                c == "." and i + 1 < hi and chars[i + 1] == (".", False)
                and not (i + 2 < hi and chars[i + 2] == ("}", False)))):
            commas += 1
        i += 1
    return None


def _expression(chars: Chars, lo: int, hi: int) -> tuple[int, int] | None:
    """(open, close) of the first brace expression in [lo, hi), or None. Each `{` without
    a match costs a scan to the end: past MAX_UNMATCHED of them, TooComplex."""
    i = lo
    for _ in range(MAX_UNMATCHED):
        opened = _gobble(chars, lo, hi, i, "{")
        if opened is None:
            return None
        closed = _gobble(chars, lo, hi, opened + 1, "}")
        if closed is not None:
            return opened, closed
        i = opened + 1
    raise TooComplex("too many braces without a match")


def _alternatives(chars: Chars, lo: int, hi: int) -> list[tuple[int, int]] | None:
    """The alternatives of the amble [lo, hi), or None when it holds no comma. bash looks
    for a comma here skipping only backslash-escaped characters (a comma in quotes counts,
    though it never separates); a field does not keep that difference, so an amble whose
    only commas are quoted is not judged (TooComplex: ask)."""
    commas = [q for c, q in chars[lo:hi] if c == ","]
    if not commas:
        return None
    if all(commas):
        raise TooComplex("a quoted comma inside braces")
    parts = []
    while True:
        comma = _gobble(chars, lo, hi, lo, ",")
        if comma is None:
            parts.append((lo, hi))
            return parts
        parts.append((lo, comma))
        lo = comma + 1


def _sequence_at(chars: Chars, lo: int, hi: int) -> _Sequence | None:
    if hi - lo > SEQUENCE_CHARS or any(q for _, q in chars[lo:hi]):
        return None
    return _parse_sequence("".join(c for c, _ in chars[lo:hi]))


_SPECIAL_LETTERS: Final = frozenset(range(ord("Z") + 1, ord("a")))
"""`[ \\ ] ^ _` and the backquote: a letter range from upper to lower case goes through
them, and bash reads the words it makes again (`.{Y..a..3}env` makes `.\\env`, which is
`.env` once the backslash is removed)."""


def _count(chars: Chars, lo: int, hi: int, depth: int) -> int:
    if depth > MAX_BRACE_DEPTH:
        raise TooComplex("braces nested too deeply to count")
    total = 1
    while lo < hi:
        found = _expression(chars, lo, hi)
        if found is None:
            break
        opened, closed = found
        parts = _alternatives(chars, opened + 1, closed)
        if parts is not None:
            made = sum(_count(chars, a, b, depth + 1) for a, b in parts)
        else:
            seq = _sequence_at(chars, opened + 1, closed)
            if seq is None and closed + 1 >= hi:
                break  # the rest is one literal word
            made = 1 if seq is None else seq.size()
        total = min(total * made, WORDS_CAP)
        lo = closed + 1
    return total


def _expand(chars: Chars, lo: int, hi: int | None, depth: int) -> list[str]:
    if depth > MAX_BRACE_DEPTH:
        raise TooComplex("braces nested too deeply to expand")
    hi = len(chars) if hi is None else hi
    words = [""]
    while lo < hi:
        found = _expression(chars, lo, hi)
        if found is None:
            break
        opened, closed = found
        before = _text(chars, lo, opened)
        parts = _alternatives(chars, opened + 1, closed)
        if parts is not None:
            made = [w for a, b in parts for w in _expand(chars, a, b, depth + 1)]
        else:
            seq = _sequence_at(chars, opened + 1, closed)
            if seq is None and closed + 1 >= hi:
                break
            if seq is not None and seq.letters and _SPECIAL_LETTERS.intersection(
                    range(min(seq.first, seq.last), max(seq.first, seq.last) + 1)):
                raise TooComplex("a letter range through characters bash reads again")
            made = [_text(chars, opened, closed + 1)] if seq is None else \
                seq.words(MAX_BRACE_WORDS)
        if len(words) * len(made) > MAX_BRACE_WORDS:
            raise TooComplex(f"brace expansion makes more than {MAX_BRACE_WORDS} words, "
                             "more than the judge reads")
        words = [w + before + m for w in words for m in made]
        lo = closed + 1
    rest = _text(chars, lo, hi)
    if depth == 0 and lo > 0 and any(c == "~" and not q for c, q in chars):
        # bash expands a `~` that starts a word brace expansion made (`{~/.bashrc,}`);
        # the judge expanded the tilde of the word as written only.
        raise TooComplex("a tilde inside braces")
    return [w + rest for w in words]


def _text(chars: Chars, lo: int, hi: int) -> str:
    return "".join(c for c, _ in chars[lo:hi])


_NUMBERS: Final = re.compile(r"([+-]?\d+)\.\.([+-]?\d+)(?:\.\.([+-]?\d+))?")
_LETTERS: Final = re.compile(r"([A-Za-z])\.\.([A-Za-z])(?:\.\.([+-]?\d+))?")
_PADDED: Final = re.compile(r"-?0\d")


class _Sequence(NamedTuple):
    """A sequence expression as bash reads it: `{1..5}`, `{+1..9..+2}`, `{01..10}` (zero
    padded to the wider end), `{a..z..3}`, `{Z..a}` (through the characters between); a step
    of 0 is 1, its sign is ignored."""

    first: int
    last: int
    step: int
    width: int
    letters: bool

    def size(self) -> int:
        """How many words it makes. (Not `__len__`: compiled, `len()` of a NamedTuple is
        its field count, whatever the class says.)"""
        return abs(self.last - self.first) // self.step + 1

    def words(self, limit: int) -> list[str]:
        """All its words, or only the two ends when there are more than `limit`."""
        ends = (self.first, self.last)
        if self.size() > limit:
            values: Iterable[int] = ends
        else:
            down = self.last < self.first
            values = range(self.first, self.last + (-1 if down else 1),
                           -self.step if down else self.step)
        if self.letters:
            return [chr(v) for v in values]
        return [f"{v:0{self.width}d}" for v in values]


def _parse_sequence(inner: str) -> _Sequence | None:
    m = _NUMBERS.fullmatch(inner)
    letters = m is None
    if m is None:
        m = _LETTERS.fullmatch(inner)
        if m is None:
            return None
        first, last = ord(m.group(1)), ord(m.group(2))
        width = 0
    else:
        first, last = int(m.group(1)), int(m.group(2))
        ends = (m.group(1), m.group(2))
        width = max(map(len, ends)) if any(_PADDED.match(e) for e in ends) else 0
    step = abs(int(m.group(3) or 1)) or 1
    return _Sequence(first, last, step, width, letters)


def _sequence_length(inner: str) -> int | None:
    """How many words `{inner}` makes as a sequence expression, or None when it is not one."""
    seq = _parse_sequence(inner)
    return None if seq is None else seq.size()


