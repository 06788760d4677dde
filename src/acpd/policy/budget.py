"""The time budget of one decision: judging stops cooperatively when it runs out.

A decision gets a deadline (`[policy] budget_ms`, 50 ms by default). The parser walk, the
engine's loops and the word computation call `check()` at points that bound the work between
two calls; past the deadline `check` raises `OverBudget` and the judge answers ask with a
reason (never allow: what was not judged was not found safe). Inputs too deep or too wide to
model (nesting past the limits below) raise `TooComplex`, which ends the same way.

The deadline lives in a thread-local so that deep helpers need no extra parameter; one judge
call sets it and clears it, and judges on other threads have their own.
"""

from __future__ import annotations

import threading
import time

_local = threading.local()


class OverBudget(Exception):
    """The decision ran past its deadline."""


class TooComplex(Exception):
    """The input nests deeper (or expands wider) than the judge models."""


def start(budget_ms: float) -> float | None:
    """Set this thread's deadline `budget_ms` from now; return the previous one (restore it
    with `restore`, so that nested judges keep the outer deadline)."""
    previous: float | None = getattr(_local, "deadline", None)
    deadline = time.perf_counter() + budget_ms / 1000.0
    if previous is not None:
        deadline = min(deadline, previous)
    _local.deadline = deadline
    return previous


def restore(previous: float | None) -> None:
    _local.deadline = previous


def check() -> None:
    """Raise OverBudget when this thread's deadline has passed (no deadline: never)."""
    deadline = getattr(_local, "deadline", None)
    if deadline is not None and time.perf_counter() > deadline:
        raise OverBudget
