"""Parsing a command line into a `Script` (see `script`): a plain line by `fastparse`
(no tree-sitter), any other by the tree-sitter walk (`treewalk`), memoised on the exact text.

tree-sitter is imported on first use (the daemon must start fast). A parse is a pure function
of the text (never a file-system fact), so `parse_memo` may keep it across decisions; the
benchmark's cold figure empties the memo before each decision (`clear_memo`).
"""

from __future__ import annotations

from typing import Final

from acpd.policy.fastparse import parse_simple
from acpd.policy.script import Redirect, Script, SimpleCommand
from acpd.policy.treewalk import MAX_NODES, parse_full, ready, warm

__all__ = ["MAX_NODES", "MEMO_ENTRIES", "MEMO_MAX_CHARS", "Redirect", "Script",
           "SimpleCommand", "clear_memo", "parse", "parse_full", "parse_memo", "ready", "warm"]

MEMO_MAX_CHARS: Final = 4096
MEMO_ENTRIES: Final = 512
_memo: dict[str, Script] = {}


def parse_memo(source: str) -> Script:
    """`parse`, memoised on the exact text (a pure function of it; never a file-system
    fact). The Script handed back is shared: callers only read it. Texts longer than
    MEMO_MAX_CHARS are parsed every time (their parse is the cost the budget is for)."""
    script = _memo.get(source)
    if script is None:
        script = parse(source)
        if len(source) <= MEMO_MAX_CHARS:
            if len(_memo) >= MEMO_ENTRIES:
                _memo.clear()
            _memo[source] = script
    return script


def clear_memo() -> None:
    """Forget every memoised parse (the benchmark's cold figures, tests)."""
    _memo.clear()


def parse(source: str) -> Script:
    """Parse a command line: a plain line by `fastparse` (the same Script, without
    tree-sitter), any other by `parse_full`."""
    if source.isascii():
        fast = parse_simple(source)
        if fast is not None:
            return fast
    return parse_full(source)
