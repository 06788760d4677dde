"""The dedup key of a log line: timestamps, UUIDs, hex ids (and numbers) replaced by tokens,
so that lines differing only in those fold together.

`line_key` is the definition, one line at a time. `block_keys` gives the same keys for a
block of lines, joined, with no regex scanning the whole block: a scan by a pattern that
starts with `\b` or a digit costs ~50 ns a character. Each pattern is instead tried only
where a match can start, positions found with `str.find`, `str.translate` and literal-led
patterns (which run at memchr speed); numbers in ASCII text are collapsed with `translate`
and `str.replace` instead of a substitution that pays ~0.2 us for each of the millions of
numbers in a build log. None of the patterns can match across a newline, so one pass over
the joined block equals one per line.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

_TIMESTAMP = re.compile(
    r"\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}:\d{2}(?:[.,]\d+)?(?:Z|[+-]\d{2}:?\d{2})?"
    r"|\b(?:Jan|Feb|Mar|Apr|May|Jun|Jul|Aug|Sep|Oct|Nov|Dec) [ \d]\d \d{2}:\d{2}:\d{2}"
    r"|\b\d{2}:\d{2}:\d{2}(?:[.,]\d+)?\b"
    r"|\b1[5-9]\d{8}(?:\.\d+)?\b"  # epoch seconds 2017..2033
)
_UUID = re.compile(
    r"\b[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}\b"
)
_HEX_ID = re.compile(r"\b(?:0x[0-9a-fA-F]+|[0-9a-f]{12,64})\b")
_NUMBER = re.compile(r"\d+(?:\.\d+)?")
_DIGIT = re.compile(r"\d")
_TS_HINT = re.compile(r"\d\d:\d\d:\d\d|1[5-9]\d{8}")
"""What any _TIMESTAMP match contains (a clock time or an epoch), found far faster."""
_HEX_HINT = re.compile(r"0x|[0-9a-f]{12}")
"""What any _HEX_ID match contains."""
_UUID_AT = re.compile(r"-(?=[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-)")
"""The first `-` of a UUID (overlapping ones found too); a literal first character makes the
engine skip from `-` to `-`."""

SHORT = 64
"""`line_key` leaves a line of at most this many characters without a digit as it is."""

# Block tests for ASCII text. `_MARK` stands for a digit: a block that already holds it
# takes the regex path.
_MARK = "\x00"
_DIGITS = str.maketrans("0123456789", _MARK * 10)
_HEX_RUN = str.maketrans("0123456789abcdef\x01", "\x01" * 16 + "\x02")
_CLOCK = f"{_MARK * 2}:{_MARK * 2}:{_MARK * 2}"
_EPOCH = _MARK * 10
_HEX_RUN_AT = re.compile("\x01{12,}")


def line_key(line: str, numbers: bool) -> str:
    """One line's key (the definition `block_keys` must agree with)."""
    # Each guard is one C-level test that rules a pattern out for most lines.
    if len(line) <= SHORT and _DIGIT.search(line) is None:
        return line
    if _TS_HINT.search(line) is not None:
        line = _TIMESTAMP.sub("<ts>", line)
    if line.count("-") >= 4:
        line = _UUID.sub("<uuid>", line)
    if _HEX_HINT.search(line) is not None:
        line = _HEX_ID.sub("<id>", line)
    if numbers:
        line = _NUMBER.sub("<n>", line)
    return line


def block_keys(lines: list[str], numbers: bool) -> list[str]:
    """`[line_key(x, numbers) if x else x for x in lines]`, for lines without newlines (as
    `str.splitlines` gives them), computed block-wise."""
    if not lines:
        return []
    text = "\n".join(lines)
    fast = text.isascii() and _MARK not in text
    if fast:
        # With ASCII text `\d` is [0-9]: a match can only start 11, 7 or 0 characters before
        # a clock time (date, month name, bare time) or where a 10-digit run starts (epoch).
        marked = text.translate(_DIGITS)
        text = _sub_at(_TIMESTAMP, text, _timestamp_starts(marked), "<ts>")[0]
        del marked
    elif _TS_HINT.search(text) is not None:
        text = _TIMESTAMP.sub("<ts>", text)
    # A UUID starts 8 characters before its `-XXXX-XXXX-XXXX-`; a hex id at `0x` or where a
    # run of 12 or more [0-9a-f] starts.
    uuids = [m.start() - 8 for m in _UUID_AT.finditer(text) if m.start() >= 8]
    text, replaced = _sub_at(_UUID, text, uuids, "<uuid>")
    hexes = _find_all(text, "0x")
    if "\x01" * 12 in (runs := text.translate(_HEX_RUN)):
        hexes = sorted([*hexes, *(m.start() for m in _HEX_RUN_AT.finditer(runs))])
    del runs
    text, count = _sub_at(_HEX_ID, text, hexes, "<id>")
    replaced += count
    if numbers:
        text = _collapse_numbers(text) if fast else _NUMBER.sub("<n>", text)
    keys = text.split("\n")
    if len(keys) != len(lines):  # a line with a newline in it (a stage's own output)
        return [line_key(x, numbers) if x else x for x in lines]
    if replaced:
        # `line_key` leaves short lines without digits alone; here a UUID or hex id made of
        # letters only (the other patterns need a digit) may have been replaced in one.
        for i, line in enumerate(lines):
            if len(line) <= SHORT and keys[i] != line and _DIGIT.search(line) is None:
                keys[i] = line
    return keys


def _sub_at(
    pattern: re.Pattern[str], text: str, starts: Iterable[int], token: str
) -> tuple[str, int]:
    """`pattern.subn(token, text)` when every match starts at one of `starts` (ascending):
    the same left-to-right, non-overlapping matches, tried only where they can begin."""
    parts: list[str] = []
    last = count = 0
    match = pattern.match
    for start in starts:
        if start < last:
            continue
        m = match(text, start)  # `\b` and lookbehinds still see the text before `start`
        if m is not None:
            parts.append(text[last:start])
            parts.append(token)
            last = m.end()
            count += 1
    if not count:
        return text, 0
    parts.append(text[last:])
    return "".join(parts), count


def _find_all(text: str, needle: str) -> list[int]:
    """Every start of `needle` in `text`, overlapping ones included."""
    out: list[int] = []
    at = text.find(needle)
    while at >= 0:
        out.append(at)
        at = text.find(needle, at + 1)
    return out


def _timestamp_starts(marked: str) -> list[int]:
    starts: set[int] = set()
    for c in _find_all(marked, _CLOCK):
        # `dddd-dd-dd[T ]` before the clock has `-` 4 characters back, `Mon dd ` a space.
        back = marked[c - 4] if c >= 7 else ""
        if back == "-" and c >= 11:
            starts.add(c - 11)
        elif back == " ":
            starts.add(c - 7)
        starts.add(c)
    # An epoch starts a run of digits (`\b` before it): the start of each run of 10 or more.
    end = len(marked)
    at = marked.find(_EPOCH)
    while at >= 0:
        starts.add(at)
        at += 10
        while at < end and marked[at] == _MARK:
            at += 1
        at = marked.find(_EPOCH, at)
    return sorted(starts)


def _collapse_numbers(text: str) -> str:
    """`_NUMBER.sub("<n>", text)` for ASCII text without `_MARK`: each run of digits becomes
    one mark, then `mark.mark` (the regex's optional fraction, taken greedily left to right as
    `str.replace` does) one mark, then each mark `<n>`."""
    text = text.translate(_DIGITS)
    double = _MARK * 2
    while double in text:
        text = text.replace(double, _MARK)
    return text.replace(f"{_MARK}.{_MARK}", _MARK).replace(_MARK, "<n>")
