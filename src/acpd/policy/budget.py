"""The time budget of one decision: judging stops cooperatively when it runs out.

A decision gets a budget (`[policy] budget_ms`, 50 ms by default). The parser (through
tree-sitter's progress callback), the parser walk, the engine's loops and the word
computation call `check()` at points that bound the work between two calls; once the budget
is spent `check` raises `OverBudget` and the judge answers ask with a reason (never allow:
what was not judged was not found safe). Inputs too deep or too wide to model (nesting past
the limits of `words` and `braces`) raise `TooComplex`, which ends the same way.

The budget counts the CPU time of the judging thread (`time.thread_time`), so a decision on a
busy machine or behind other threads waiting for the GIL is not cut short for time it did not
use. The thread's CPU clock is read when the decision starts and then only when the cheap wall
clock says the budget could be spent (wall time never runs slower than CPU time).
The checks stop work at CHECKED_SHARE of the budget, so that what runs between two checks
and the answer itself fit in the rest.

Garbage collection is not the command's cost either: a full collection in a large process can
take tens of milliseconds on whatever thread triggers it, so the time the collector spends on
the judging thread (measured with `gc.callbacks` on the wall clock) is left out. So is work
that depends on the policy and the caller but not on the command (`uncounted`): building the
path rules for a new workspace or home compiles about 45 regexes, 5 to 30 ms on a loaded
machine, which once made a workspace's first command ask "over budget".

A long command line (over GC_PAUSE_CHARS) is judged with the collector paused: its parse
makes tens of thousands of live objects, and every collection during the decision walks them
all to free nothing (up to 80 ms of collections on a 64 KiB line, measured). What the
decision allocates is freed by reference counting when it ends; a pause is at most one
decision long (the budget), and concurrent judges share it (the last one out resumes).

The state lives in a context variable (`_slot`) so that deep helpers need
no extra parameter; one judge call sets it and restores the previous one, and judges on other
threads have their own.
"""

from __future__ import annotations

import gc
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from typing import TYPE_CHECKING, Any, Final

if TYPE_CHECKING:
    from acpd.policy.sandbox import _Decision

CHECKED_SHARE: Final = 0.6


class Slot:
    """What one decision on a thread keeps where deep helpers find it: its budget, and its
    file-system memos (sandbox.open_decision). Made when the decision starts, unset when it
    ends (one context variable set each time, a look-up each read)."""

    __slots__ = ("budget", "memo")

    def __init__(self) -> None:
        self.budget: _Budget | None = None
        self.memo: _Decision | None = None


_slot: Final[ContextVar[Slot | None]] = ContextVar("acpd.policy.decision", default=None)
"""This thread's decision. A context variable rather than a `threading.local`: each thread runs
in a context of its own, so what one thread's decision sets is seen by that thread only, as
with a thread-local, but a read is a cached look-up (a thread-local attribute costs about as
much as a small function, and the judge reads this a few dozen times a decision; a compiled
subclass of threading.local also crashes the process when a second thread reads it). Only a
Slot made for one decision is set, and unset when the decision ends: a context copied while
no decision runs (anyio's `to_thread` copies the caller's) holds none, so no two threads
share one."""


def current_slot() -> Slot | None:
    """This thread's decision, or None outside one."""
    return _slot.get()


def _current() -> _Budget | None:
    slot = _slot.get()
    return None if slot is None else slot.budget


def _publish(budget: _Budget | None) -> None:
    """Make `budget` this thread's (None: no decision)."""
    slot = _slot.get()
    _store(slot, budget, None if slot is None else slot.memo)


def publish_memo(memo: _Decision | None) -> None:
    """Make `memo` this thread's decision's file-system memo (None: none); sandbox.py's."""
    slot = _slot.get()
    _store(slot, None if slot is None else slot.budget, memo)


def _store(slot: Slot | None, budget: _Budget | None, memo: _Decision | None) -> None:
    if budget is None and memo is None:
        if slot is not None:
            _slot.set(None)  # the decision is over
        return
    if slot is None:
        slot = Slot()
        _slot.set(slot)
    slot.budget = budget
    slot.memo = memo


_thread_time: Final = time.thread_time
_perf_counter: Final = time.perf_counter


class OverBudget(Exception):
    """The decision used up its time budget."""


class TooComplex(Exception):
    """The input nests deeper (or expands wider) than the judge models."""


def _gc_clock(phase: str, _info: dict[str, Any]) -> None:
    """Account the collector's time to the thread it runs on (while it judges)."""
    current: _Budget | None = _current()
    if current is None:
        return
    if phase == "start":
        current.gc_started = time.perf_counter()
    elif current.gc_started:
        current.uncounted += time.perf_counter() - current.gc_started
        current.gc_started = 0.0


@contextmanager
def uncounted() -> Iterator[None]:
    """Leave the CPU time of the block out of this thread's decision (work the command did
    not cause: the caller's set-up, made once per workspace and home). No check inside the
    block can stop it."""
    current: _Budget | None = _current()
    if current is None:
        yield
        return
    _publish(None)
    began = _thread_time()
    try:
        yield
    finally:
        current.uncounted += _thread_time() - began
        _publish(current)


class _Budget:
    """One decision's budget (a plain slotted class: made once per decision, on the hot path)."""

    __slots__ = ("allowed", "cpu_start", "gc_started", "next_look", "uncounted", "words")

    def __init__(self, cpu_start: float, allowed: float, next_look: float) -> None:
        self.cpu_start = cpu_start
        self.allowed = allowed
        """Seconds of this thread's CPU time the decision may use."""
        self.next_look = next_look
        """No check before this wall-clock time can find the budget spent."""
        self.uncounted = 0.0
        """Seconds left out: collections (`_gc_clock`) and `uncounted` blocks."""
        self.gc_started = 0.0
        self.words = 0
        """Words brace expansion makes in the command (expansion.py): bash's memory for it."""


def start(budget_ms: float) -> _Budget | None:
    """Give this thread's decision `budget_ms`; return the previous budget (restore it with
    `restore`, so that a nested judge keeps the outer one)."""
    previous: _Budget | None = _current()
    if previous is not None:
        return previous  # a nested judge spends the outer decision's budget
    allowed = max(0.0, budget_ms) * CHECKED_SHARE / 1000.0
    _publish(_Budget(_thread_time(), allowed, _perf_counter() + allowed))
    return None


GC_PAUSE_CHARS: Final = 4096
_gc_lock = threading.Lock()
_gc_holders = 0
_gc_resume = False


def pause_gc() -> None:
    """Stop automatic collections until the matching `resume_gc` (nests across threads)."""
    global _gc_holders, _gc_resume
    with _gc_lock:
        if _gc_holders == 0:
            _gc_resume = gc.isenabled()
            gc.disable()
        _gc_holders += 1


def resume_gc() -> None:
    global _gc_holders
    with _gc_lock:
        _gc_holders -= 1
        if _gc_holders == 0 and _gc_resume:
            gc.enable()


def restore(previous: _Budget | None) -> None:
    _publish(previous)


def expired() -> bool:
    """Has this thread's decision used up its budget? (No budget: never.)"""
    current: _Budget | None = _current()
    if current is None:
        return False
    now = _perf_counter()
    if now <= current.next_look:
        return False
    return _spent(current, now)


def _spent(current: _Budget, now: float) -> bool:
    """The wall clock says the budget could be spent: read the CPU clock."""
    used = _thread_time() - current.cpu_start - current.uncounted
    if used >= current.allowed:
        return True
    # Not spent yet (the thread waited, or the collector ran): look again when it could be.
    current.next_look = now + (current.allowed - used)
    return False


def note_words(count: int) -> None:
    """Add the words brace expansion makes in one parsed text (expansion.py) to this
    decision's tally."""
    current: _Budget | None = _current()
    if current is not None and count > 1:
        current.words += count


def words_made() -> int:
    """The decision's tally so far (0 without a decision)."""
    current: _Budget | None = _current()
    return current.words if current is not None else 0


def active() -> bool:
    return _current() is not None


def check() -> None:
    """Raise OverBudget when this thread's decision has used up its budget. (Called often
    on the hot path: `expired` inlined, the CPU clock read only when it could be spent.)"""
    current: _Budget | None = _current()
    if current is not None:
        now = _perf_counter()
        if now > current.next_look and _spent(current, now):
            raise OverBudget


if _gc_clock not in gc.callbacks:
    gc.callbacks.append(_gc_clock)
