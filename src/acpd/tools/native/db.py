"""SQLite for the native tools: a connection per piece of work, run in a worker thread, with a
time budget.

Rules:
  - never on the event loop: `run_db` hands the work to a worker thread (anyio), so a slow disk
    or a large index stalls only the call that asked;
  - never longer than its budget: a progress handler interrupts SQLite once the budget is spent
    (`sqlite3.OperationalError: interrupted`), and waiting for another writer's lock counts
    against the same budget; the caller gets `DbTimeout`;
  - a connection per call, opened and closed in the worker: nothing is shared between threads,
    and two daemons on one data dir meet only through SQLite's own locking (WAL mode).
"""

from __future__ import annotations

import contextlib
import sqlite3
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TypeVar

T = TypeVar("T")

PROGRESS_STEPS = 1_000
"""SQLite virtual-machine steps between two looks at the clock (a few microseconds)."""


class DbTimeout(Exception):
    """The work ran past its budget and was interrupted (nothing it began was committed)."""


def connect(path: Path, budget: float, schema: str) -> sqlite3.Connection:
    """Open (creating it and its folder) the database at `path`, WAL mode, `schema` applied.
    Raises OSError or sqlite3.Error when the file cannot be used."""
    path.parent.mkdir(parents=True, exist_ok=True)
    db = sqlite3.connect(path, timeout=budget, isolation_level=None, check_same_thread=False)
    try:
        db.execute("PRAGMA mmap_size = 0")  # read(2) errors are exceptions, never SIGBUS
        db.execute("PRAGMA journal_mode = WAL")
        db.execute("PRAGMA synchronous = NORMAL")
        db.executescript(schema)
    except BaseException:
        db.close()
        raise
    return db


def run_with_budget(
    path: Path, schema: str, budget: float, work: Callable[[sqlite3.Connection], T]
) -> T:
    """`work(db)` on a fresh connection, interrupted after `budget` seconds (DbTimeout)."""
    deadline = time.monotonic() + budget
    db = connect(path, budget, schema)
    db.set_progress_handler(lambda: int(time.monotonic() > deadline), PROGRESS_STEPS)
    try:
        return work(db)
    except sqlite3.OperationalError as exc:
        if time.monotonic() > deadline or "interrupted" in str(exc):
            raise DbTimeout(f"gave up after {budget:g} s") from None
        raise
    finally:
        db.close()


async def run_db(
    path: Path, schema: str, budget: float, work: Callable[[sqlite3.Connection], T]
) -> T:
    """`run_with_budget` in a worker thread. Raises DbTimeout, sqlite3.Error, OSError."""
    import anyio.to_thread

    return await anyio.to_thread.run_sync(run_with_budget, path, schema, budget, work)


@contextlib.contextmanager
def immediate(db: sqlite3.Connection) -> Iterator[None]:
    """One write transaction, taken at once (BEGIN IMMEDIATE): a check and the write that
    depends on it (a count before an insert) see no other writer in between."""
    db.execute("BEGIN IMMEDIATE")
    try:
        yield
    except BaseException:
        with contextlib.suppress(sqlite3.Error):  # an interrupt may have rolled back already;
            db.execute("ROLLBACK")  # closing the connection rolls back what is left
        raise
    db.execute("COMMIT")
