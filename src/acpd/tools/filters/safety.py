"""Regexes from configuration, compiled so that a hostile one cannot hang the daemon.

We keep the standard `re` engine (fastest per call for line-by-line matching, full syntax) and
refuse, before compiling, the shapes that make a backtracking engine blow up:

* exponential: a quantifier over something that itself contains an unbounded quantifier
  (`(a+)+`, `(\\w*\\s?)*`), or over an alternation whose branches can start with the same
  character or match the empty string (`(a|ab)*`, `(x|)+`);
* high-degree polynomial: three or more unbounded quantifiers over overlapping character sets
  in one sequence (`.*.*.*x`);
* backreferences and conditional groups (they defeat any static bound).

What remains is at worst quadratic in the length of one line; the engine matches at most
`MAX_MATCH_CHARS` characters of a line and checks a time budget between lines, so the total
work stays bounded. The checker is conservative: it rejects some safe patterns, never the
reverse for the shapes above.
"""

from __future__ import annotations

import importlib
import re
from typing import Any

MAX_PATTERN_CHARS = 512
MAX_MATCH_CHARS = 2048
"""Lines are matched on their first MAX_MATCH_CHARS characters (the whole line is kept)."""

_parser: Any = importlib.import_module("re._parser")
_c: Any = importlib.import_module("re._constants")

_REPEATS = {_c.MAX_REPEAT, _c.MIN_REPEAT, getattr(_c, "POSSESSIVE_REPEAT", _c.MAX_REPEAT)}
_UNBOUNDED = _c.MAXREPEAT
_BIG = 64
"""A bounded repeat above this count is treated as unbounded (`(a{1,1000}){1,1000}`)."""


CharSet = tuple[bool, frozenset[int]]
"""(negated, chars): (False, s) is s, (True, s) is every character but s."""
ANYCHAR: CharSet = (True, frozenset())


class UnsafePatternError(ValueError):
    """The pattern is too long, invalid, or can backtrack catastrophically."""


def compile_pattern(pattern: str, flags: int = 0) -> re.Pattern[str]:
    """Check then compile `pattern`.

    Raises UnsafePatternError (too long, invalid syntax, backreference, or a nested or
    overlapping quantifier).
    """
    if len(pattern) > MAX_PATTERN_CHARS:
        raise UnsafePatternError(
            f"regex is {len(pattern)} characters long (limit {MAX_PATTERN_CHARS})"
        )
    try:
        tree = _parser.parse(pattern, flags)
    except re.error as exc:
        raise UnsafePatternError(f"invalid regex: {exc}") from None
    problem = _check_sequence(list(tree))
    if problem:
        raise UnsafePatternError(f"regex may backtrack catastrophically: {problem}")
    try:
        return re.compile(pattern, flags)
    except (re.error, RecursionError, OverflowError) as exc:
        raise UnsafePatternError(f"invalid regex: {exc}") from None


def combine(patterns: list[str], flags: int = 0) -> re.Pattern[str] | None:
    """One alternation of already-checked patterns (each wrapped in a non-capturing group)."""
    if not patterns:
        return None
    return re.compile("|".join(f"(?:{p})" for p in patterns), flags)


# --- the checker --------------------------------------------------------------------------

Item = tuple[Any, Any]


def _unbounded(max_count: int) -> bool:
    return bool(max_count == _UNBOUNDED or max_count > _BIG)


def _check_sequence(items: list[Item]) -> str | None:
    open_sets: list[CharSet] = []
    """Unbounded repeats not yet closed by a following mandatory character they cannot eat."""
    for op, av in items:
        problem = _check_item(op, av)
        if problem:
            return problem
        if op in _REPEATS:
            lo, hi, body = av[0], av[1], list(av[2])
            chars = _first_set(body)
            if _unbounded(hi):
                if sum(_overlap(chars, o) for o in open_sets) >= 2:
                    return "three or more overlapping unbounded quantifiers in sequence"
                open_sets.append(chars)
            if lo >= 1 and _single(body) is not None:
                open_sets = [o for o in open_sets if o is chars or _overlap(o, chars)]
        elif op in (_c.AT, _c.ASSERT, _c.ASSERT_NOT):
            continue
        elif not _can_be_empty([(op, av)]):
            first = _first_set([(op, av)])
            open_sets = [o for o in open_sets if _overlap(o, first)]
    return None


def _check_item(op: Any, av: Any) -> str | None:
    if op in (_c.GROUPREF, _c.GROUPREF_EXISTS):
        return "backreferences and conditional groups are not allowed"
    if op in _REPEATS:
        hi, body = av[1], list(av[2])
        inner = _max_inner_repeat(body)
        risky = _unbounded(hi) or _unbounded(inner) or hi * inner > _BIG
        if inner > 1 and hi > 1 and risky and not _delimited(body):
            return "nested quantifiers"
        if _unbounded(hi):
            if _has_ambiguous_branch(body):
                return "a quantified alternation whose branches overlap"
            if _can_be_empty(body):
                return "a quantifier over something that can match the empty string"
        return _check_sequence(body)
    for child in _children(op, av):
        problem = _check_sequence(child)
        if problem:
            return problem
    return None


def _children(op: Any, av: Any) -> list[list[Item]]:
    if op in _REPEATS:
        return [list(av[2])]
    if op is _c.SUBPATTERN:
        return [list(av[-1])]
    if op is _c.BRANCH:
        return [list(b) for b in av[1]]
    if op in (_c.ASSERT, _c.ASSERT_NOT):
        return [list(av[1])]
    if op is getattr(_c, "ATOMIC_GROUP", None):
        return [list(av)]
    return []


def _max_inner_repeat(items: list[Item]) -> int:
    best = 1
    for op, av in items:
        if op in _REPEATS:
            best = max(best, int(av[1]))
        for child in _children(op, av):
            best = max(best, _max_inner_repeat(child))
    return best


def _delimited(body: list[Item]) -> bool:
    """Each inner repeat is over one character and is followed by a character it cannot eat.

    `(\\d+\\.)+` and `(\\.\\w+)+` are delimited (a dot separates the rounds); `(a+)+` and
    `(\\w+\\s?)*` are not. The body is walked twice because a round's separator may come
    first: every repeat opened in the first round must be closed during the second.
    """
    while len(body) == 1 and body[0][0] is _c.SUBPATTERN:
        body = list(body[0][1][-1])
    open_sets: list[tuple[int, CharSet]] = []
    for round_no in (1, 2):
        for op, av in body:
            if op in (_c.AT, _c.ASSERT, _c.ASSERT_NOT):
                continue
            if op in _REPEATS:
                single = _single(list(av[2]))
                if single is None:
                    return False
                open_sets.append((round_no, single))
                continue
            if _max_inner_repeat([(op, av)]) > 1:
                return False
            if _can_be_empty([(op, av)]):
                open_sets.append((round_no, _first_set([(op, av)])))
                continue
            first = _first_set([(op, av)])
            open_sets = [(r, o) for r, o in open_sets if _overlap(o, first)]
    return all(r == 2 for r, _ in open_sets)


def _has_ambiguous_branch(items: list[Item]) -> bool:
    for op, av in items:
        if op is _c.BRANCH:
            branches = [list(b) for b in av[1]]
            if any(_can_be_empty(b) for b in branches):
                return True
            firsts = [_first_set(b) for b in branches]
            for i in range(len(firsts)):
                for j in range(i + 1, len(firsts)):
                    if _overlap(firsts[i], firsts[j]):
                        return True
        if op is _c.SUBPATTERN and _has_ambiguous_branch(list(av[-1])):
            return True
    return False


def _can_be_empty(items: list[Item]) -> bool:
    for op, av in items:
        if op in (_c.AT, _c.ASSERT, _c.ASSERT_NOT):
            continue
        if op in _REPEATS:
            if av[0] > 0 and not _can_be_empty(list(av[2])):
                return False
        elif op is _c.BRANCH:
            if not any(_can_be_empty(list(b)) for b in av[1]):
                return False
        elif op is _c.SUBPATTERN or op is getattr(_c, "ATOMIC_GROUP", None):
            if not _can_be_empty(_children(op, av)[0]):
                return False
        else:
            return False
    return True


def _single(items: list[Item]) -> CharSet | None:
    """The character set of a one-character item, else None."""
    if len(items) != 1:
        return None
    op, av = items[0]
    if op is _c.LITERAL:
        return (False, _fold(av))
    if op is _c.NOT_LITERAL:
        return (True, _fold(av))
    if op is _c.ANY:
        return ANYCHAR
    if op is _c.IN:
        return _in_set(av)
    return None


def _first_set(items: list[Item]) -> CharSet:
    """Characters the sequence can start with (an over-approximation)."""
    acc: CharSet = (False, frozenset())
    for op, av in items:
        if op in (_c.AT, _c.ASSERT, _c.ASSERT_NOT):
            continue
        single = _single([(op, av)])
        if single is not None:
            return _union(acc, single)
        if op in _REPEATS or op is _c.SUBPATTERN or op is getattr(_c, "ATOMIC_GROUP", None):
            acc = _union(acc, _first_set(_children(op, av)[0]))
        elif op is _c.BRANCH:
            for branch in av[1]:
                acc = _union(acc, _first_set(list(branch)))
        else:
            return ANYCHAR
        if not _can_be_empty([(op, av)]):
            return acc
    return acc


def _fold(code: int) -> frozenset[int]:
    ch = chr(code)
    return frozenset(ord(x) for x in {ch, ch.lower(), ch.upper()} if len(x) == 1)


_CATEGORIES = {
    "DIGIT": "0123456789",
    "SPACE": " \t\n\r\f\v",
    "WORD": "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_",
}


def _in_set(av: Any) -> CharSet:
    members = list(av)
    negated = bool(members and members[0][0] is _c.NEGATE)
    if negated:
        members = members[1:]
    chars: set[int] = set()
    not_category: str | None = None
    for op, val in members:
        if op is _c.LITERAL:
            chars |= _fold(val)
        elif op is _c.RANGE and val[1] - val[0] <= 1024:
            chars |= set(range(val[0], val[1] + 1))
        elif op is _c.CATEGORY:
            name = str(val).removeprefix("CATEGORY_").removeprefix("UNI_")
            if name.startswith("NOT_") and name[4:] in _CATEGORIES and len(members) == 1:
                not_category = name[4:]
            elif name in _CATEGORIES:
                chars |= {ord(x) for x in _CATEGORIES[name]}
            else:
                return ANYCHAR
        else:
            return ANYCHAR
    if not_category is not None:  # [\\S] or [^\\S]
        sample = frozenset(ord(x) for x in _CATEGORIES[not_category])
        return (False, sample) if negated else (True, sample)
    return (negated, frozenset(chars))


def _union(a: CharSet, b: CharSet) -> CharSet:
    if not a[0] and not b[0]:
        return (False, a[1] | b[1])
    if a[0] and b[0]:
        return (True, a[1] & b[1])
    neg, pos = (a, b) if a[0] else (b, a)
    return (True, neg[1] - pos[1])


def _overlap(a: CharSet, b: CharSet) -> bool:
    if a[0] and b[0]:
        return True
    if not a[0] and not b[0]:
        return not a[1].isdisjoint(b[1])
    neg, pos = (a, b) if a[0] else (b, a)
    return not pos[1] <= neg[1]
