"""Bash brace expansion (`{a,b}`, `{1..5}`, `{a..e}`) over the unquoted parts of a word,
bounded so that a hostile word cannot make it explode."""

from __future__ import annotations

import re

MAX_BRACE_WORDS = 64
MAX_BRACE_DEPTH = 8


def brace_expand(pieces: list[tuple[str, bool]]) -> list[str]:
    """Bash brace expansion over the unquoted parts of a field (bounded)."""
    chars: list[tuple[str, bool]] = [(c, q) for text, q in pieces for c in text]
    text = "".join(c for c, _ in chars)
    if not any(c == "{" and not q for c, q in chars):
        return [text]
    out = _brace(chars, 0)
    if len(out) > MAX_BRACE_WORDS:
        return out[:MAX_BRACE_WORDS]
    return out


def _brace(chars: list[tuple[str, bool]], depth: int) -> list[str]:
    if depth > MAX_BRACE_DEPTH:
        return ["".join(c for c, _ in chars)]
    n = len(chars)
    for start in range(n):
        if chars[start] != ("{", False):
            continue
        level, commas, end = 0, [], -1
        for j in range(start, n):
            c, q = chars[j]
            if q:
                continue
            if c == "{":
                level += 1
            elif c == "}":
                level -= 1
                if level == 0:
                    end = j
                    break
            elif c == "," and level == 1:
                commas.append(j)
        if end < 0:
            break
        prefix, suffix = chars[:start], chars[end + 1 :]
        inner = "".join(c for c, _ in chars[start + 1 : end])
        options: list[list[tuple[str, bool]]]
        if commas:
            bounds = [start, *commas, end]
            options = [chars[bounds[k] + 1 : bounds[k + 1]] for k in range(len(bounds) - 1)]
        else:
            seq = _sequence(inner)
            if seq is None:
                continue
            options = [[(c, True) for c in item] for item in seq]
        words: list[str] = []
        for opt in options:
            words.extend(_brace(prefix + opt + suffix, depth + 1))
            if len(words) > MAX_BRACE_WORDS:
                break
        return words
    return ["".join(c for c, _ in chars)]


def _sequence(inner: str) -> list[str] | None:
    m = re.fullmatch(r"(-?\d+)\.\.(-?\d+)(?:\.\.(-?\d+))?", inner)
    if m:
        a, b = int(m.group(1)), int(m.group(2))
        step = abs(int(m.group(3) or 1)) or 1
        if abs(b - a) // step > MAX_BRACE_WORDS:
            return [str(a), str(b)]
        rng = range(a, b + 1, step) if a <= b else range(a, b - 1, -step)
        return [str(x) for x in rng]
    m = re.fullmatch(r"([A-Za-z])\.\.([A-Za-z])", inner)
    if m:
        a, b = ord(m.group(1)), ord(m.group(2))
        rng = range(a, b + 1) if a <= b else range(a, b - 1, -1)
        return [chr(x) for x in rng]
    return None
