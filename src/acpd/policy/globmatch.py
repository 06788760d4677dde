"""`fnmatch.fnmatchcase`, with each pattern compiled once, for the compiled judge.

`fnmatch.fnmatchcase` is interpreted Python (with its own cached compile behind it); called
from compiled code it costs an interpreted frame per match. Here the match is a memo look-up
and a C regex call. Patterns come from the command line as well as the policy, so the memo is
bounded like fnmatch's own; `benchmarks/policy.py` empties it for every cold decision."""

from __future__ import annotations

import fnmatch
import re
from collections.abc import Callable
from functools import lru_cache

Matcher = Callable[[str], "re.Match[str] | None"]


@lru_cache(maxsize=4096)
def matcher(pattern: str) -> Matcher:
    """The compiled `fnmatch.fnmatchcase(name, pattern)` (pure: memoised per pattern)."""
    return re.compile(fnmatch.translate(pattern)).match


def fnmatchcase(name: str, pattern: str) -> bool:
    """`fnmatch.fnmatchcase(name, pattern)` for str arguments."""
    return matcher(pattern)(name) is not None
