"""What the tree walk reads from the raw text rather than from the tree.

- The substitution net: tree-sitter-bash does not see every substitution bash runs (a
  backtick in a here-document body or inside `${x:-...}` is plain text to it). So every
  `` ` `` and `$(` that is not escaped, not inside a single-quoted or `$'...'` string or a
  comment in a plain (not double-quoted) context, and not in the body of a quoted here-document,
  is reported as a substitution (`$((` only where the tree has an arithmetic expansion there).
- The fallback of an ERROR node: its text cut into commands by plain tokenizing (judged in
  addition to what the tree shows).
- Background jobs: which commands lie inside a statement followed by `&`.

Every loop checks the decision's time budget every 256 steps.
"""

from __future__ import annotations

import bisect
import re
from typing import Final

from acpd.policy.budget import check
from acpd.policy.script import Script, SimpleCommand

_SITE: Final = re.compile(rb"`|\$\(")


def substitution_sites(data: bytes, masks: list[tuple[int, int]],
                       arith_starts: set[int]) -> list[tuple[str, str]]:
    """Substitutions bash would run that the tree did not show (see the module docstring)."""
    masks = sorted(masks)
    starts = [m[0] for m in masks]
    found: dict[str, tuple[str, str]] = {}
    for k, m in enumerate(_SITE.finditer(data)):
        if not k & 255:
            check()
        pos = m.start()
        k = bisect.bisect_right(starts, pos) - 1
        if k >= 0 and masks[k][0] <= pos < masks[k][1]:
            continue
        slashes = 0
        while pos - slashes - 1 >= 0 and data[pos - slashes - 1] == 0x5C:
            slashes += 1
        if slashes % 2:
            continue
        if m.group(0) == b"`":
            found["b"] = ("blocklist.backticks", "backtick substitution")
        elif not (data.startswith(b"$((", pos) and pos in arith_starts):
            found["c"] = ("blocklist.command-substitution", "command substitution $(...)")
        if len(found) == 2:
            break
    return list(found.values())


def mark_background(script: Script, jobs: list[tuple[int, int]]) -> None:
    """Commands inside a statement followed by `&` (byte ranges from the walk). The ranges
    nest or are disjoint, so one sweep with a stack of open ranges answers every command."""
    jobs.sort()
    open_ends: list[int] = []
    j = 0
    for cmd in sorted((c for c in script.commands if c.start >= 0), key=lambda c: c.start):
        while j < len(jobs) and jobs[j][0] <= cmd.start:
            while open_ends and open_ends[-1] <= jobs[j][0]:
                open_ends.pop()
            open_ends.append(jobs[j][1])
            j += 1
        while open_ends and open_ends[-1] <= cmd.start:
            open_ends.pop()
        cmd.background = bool(open_ends)


_TOKEN: Final = re.compile(
    r"""(?:[^\s;&|()'"\\]|\\.|'[^']*'?|"(?:[^"\\]|\\.)*"?)+|&&|\|\||[;&|()]""")


def fallback(text: str, fn: str | None) -> list[SimpleCommand]:
    """Best-effort commands from text tree-sitter could not parse (judged in addition)."""
    out: list[SimpleCommand] = []
    current: list[str] = []
    for k, m in enumerate(_TOKEN.finditer(text)):
        if not k & 255:
            check()
        tok = m.group(0)
        if tok in (";", "&", "|", "&&", "||", "(", ")"):
            if current:
                out.append(SimpleCommand(current, function=fn, fallback=True))
            current = []
        elif tok not in ("{", "}"):
            current.append(tok)
    if current:
        out.append(SimpleCommand(current, function=fn, fallback=True))
    return out
