"""How many words brace expansion makes in one parsed command line.

bash builds every word of a brace expansion in memory before the command runs (about 280
bytes each), so `echo {1..2000000000}` or thirty `{a,b}` in a row take hundreds of GB, while
the judge itself looks at the first few words only (braces.py). Brace expansion is done on
the words as written, before any parameter expansion (a `{` that comes out of a variable is
never expanded), so the count is taken once per word of the parse: command words, the
values of `for`/`select`, array assignments `x=(...)` and redirect targets (built before bash
finds the redirect ambiguous). Not here-strings, here-documents,
scalar assignments or `[[ ]]`, where bash does not brace-expand. Each word occurrence counts
once, however many times the judge expands it.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Final

from acpd.policy.braces import Chars, chars_of, word_count
from acpd.policy.script import Script
from acpd.policy.words import Lit, lex

MAX_WORDS: Final = 100_000
"""More words than this from brace expansion in one command asks (`input.expansion`):
100,000 words take about 30 MB; a million, 280 MB."""


def brace_words(script: Script, home: str) -> int:
    """The words brace expansion makes in `script`, counting only words it expands (> 1)."""
    total = 0
    for text in _expanded_words(script):
        if "{" in text:
            made = word_count(_chars(text, home))
            if made > 1:
                total += made
    return total


def _expanded_words(script: Script) -> Iterator[str]:
    for command in script.commands:
        yield from command.words
        # bash builds a redirect target's words before it finds the redirect ambiguous.
        yield from (r.target for r in command.redirects if r.kind == "file" and r.target)
    arrays = [(name, value) for name, value in script.assigns if value.startswith("(")]
    if arrays:  # `declare -a x=(...)` is one of the command's words already
        words = {word for command in script.commands for word in command.words}
        yield from (value for name, value in arrays if f"{name}={value}" not in words)
    for values in script.for_vars.values():
        yield from values


def _chars(text: str, home: str) -> Chars:
    """The word's characters with whether each is quoted; an expansion (`$x`, `$(...)`) is
    one opaque quoted character: it adds no brace and breaks a sequence, as in bash."""
    return chars_of([(seg.text, seg.quoted) if isinstance(seg, Lit) else ("\x00", True)
                     for seg in lex(text, home)])
