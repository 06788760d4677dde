"""Bash brace expansion (`{a,b}`, `{1..5}`, `{a..e}`) over the unquoted parts of a word,
bounded so that a hostile word cannot make it explode."""

from __future__ import annotations

import re

from acpd.policy.budget import TooComplex, check

MAX_BRACE_WORDS = 64
MAX_BRACE_DEPTH = 8
MAX_BRACE_CHARS = 1024


def brace_expand(pieces: list[tuple[str, bool]]) -> list[str]:
    """Bash brace expansion over the unquoted parts of a field (bounded). Raises TooComplex
    for a field with braces longer than MAX_BRACE_CHARS (the judge asks)."""
    if not any(not q and "{" in text for text, q in pieces):
        return ["".join(text for text, _ in pieces)]
    if sum(len(text) for text, _ in pieces) > MAX_BRACE_CHARS:  # before building the list
        raise TooComplex("a word with braces is too long to expand")
    chars: list[tuple[str, bool]] = [(c, q) for text, q in pieces for c in text]
    out = _brace(chars, 0)
    if len(out) > MAX_BRACE_WORDS:
        return out[:MAX_BRACE_WORDS]
    return out


def _pairs(chars: list[tuple[str, bool]]) -> list[tuple[int, int, list[int]]]:
    """Every balanced unquoted `{...}` as (start, end, top-level comma positions), by start;
    one pass with a stack (8,000 nested braces cost 8,000 steps, not 8,000 scans)."""
    stack: list[tuple[int, list[int]]] = []
    pairs: list[tuple[int, int, list[int]]] = []
    for j, (c, q) in enumerate(chars):
        if q:
            continue
        if c == "{":
            stack.append((j, []))
        elif c == "}" and stack:
            start, commas = stack.pop()
            pairs.append((start, j, commas))
        elif c == "," and stack:
            stack[-1][1].append(j)
    pairs.sort()
    return pairs


def _brace(chars: list[tuple[str, bool]], depth: int) -> list[str]:
    check()
    if depth > MAX_BRACE_DEPTH:
        return ["".join(c for c, _ in chars)]
    for start, end, commas in _pairs(chars):
        prefix, suffix = chars[:start], chars[end + 1 :]
        options: list[list[tuple[str, bool]]]
        if commas:
            bounds = [start, *commas, end]
            options = [chars[bounds[k] + 1 : bounds[k + 1]] for k in range(len(bounds) - 1)]
        else:
            if end - start > 64:
                continue
            seq = _sequence("".join(c for c, _ in chars[start + 1 : end]))
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
