"""Session storage in SQLite: session rows, the update stream for replay, model history,
and the overflow entries of tool outputs too long to show whole (`tool_overflow`: scoped to
their session, deleted with it, expired on start after `retention_days`).

What is stored is what was shown: updates are kept as sent (after redaction), minus
transient streaming updates and terminal embeds (a replayed card must not name a terminal
that was released long ago).

Faults of the disk are not faults of the session: a data directory that cannot hold the
store gives a store in memory and a message naming the directory and the cause
(`open_store`); a write the disk refuses later (full, read-only, I/O error, locked too long)
is logged and kept for the user (`take_problem`), never raised at the request that wrote.
After `close()`, writes are dropped with a warning (a turn that outlived the stop).
"""

from __future__ import annotations

import base64
import builtins
import contextlib
import logging
import os
import sqlite3
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import orjson

log = logging.getLogger("acpd.store")

SCHEMA = """
PRAGMA foreign_keys = ON;
CREATE TABLE IF NOT EXISTS sessions (
    id TEXT PRIMARY KEY,
    cwd TEXT NOT NULL,
    title TEXT,
    mode TEXT NOT NULL,
    model TEXT,
    created_at REAL NOT NULL,
    updated_at REAL NOT NULL
);
CREATE INDEX IF NOT EXISTS sessions_by_update ON sessions (updated_at DESC, id);
CREATE TABLE IF NOT EXISTS updates (
    session_id TEXT NOT NULL REFERENCES sessions (id) ON DELETE CASCADE,
    seq INTEGER NOT NULL,
    payload BLOB NOT NULL,
    PRIMARY KEY (session_id, seq)
);
CREATE TABLE IF NOT EXISTS messages (
    session_id TEXT NOT NULL REFERENCES sessions (id) ON DELETE CASCADE,
    seq INTEGER NOT NULL,
    payload BLOB NOT NULL,
    PRIMARY KEY (session_id, seq)
);
CREATE TABLE IF NOT EXISTS tool_overflow (
    id TEXT PRIMARY KEY,
    session_id TEXT NOT NULL REFERENCES sessions (id) ON DELETE CASCADE,
    content TEXT NOT NULL,
    created_at REAL NOT NULL
);
CREATE INDEX IF NOT EXISTS tool_overflow_by_session ON tool_overflow (session_id);
CREATE INDEX IF NOT EXISTS tool_overflow_by_age ON tool_overflow (created_at);
CREATE TABLE IF NOT EXISTS session_settings (
    session_id TEXT PRIMARY KEY REFERENCES sessions (id) ON DELETE CASCADE,
    payload BLOB NOT NULL
);
"""
DAY = 86_400.0

PAGE_SIZE = 50
DB_FILE = "sessions.sqlite3"
META_FIELDS = frozenset({"title", "mode", "model", "cwd"})


@dataclass(frozen=True, slots=True)
class SessionRow:
    id: str
    cwd: str
    title: str | None
    mode: str
    model: str | None
    created_at: float
    updated_at: float


class BadCursor(ValueError):
    pass


def data_dir_problem(directory: Path) -> str | None:
    """Why `directory` cannot hold acpd's data (it need not exist yet), or None. Creates
    nothing: `acpd doctor` asks too."""
    existing = directory
    while not os.path.lexists(existing) and existing != existing.parent:
        existing = existing.parent
    if not existing.is_dir():
        return f"{existing} is not a directory"
    if os.statvfs(existing).f_flag & os.ST_RDONLY:
        return f"{existing} is on a read-only file system"
    if not os.access(existing, os.W_OK | os.X_OK):
        return f"{existing} is not writable (permission denied)"
    database = directory / DB_FILE
    if os.path.lexists(database) and not database.is_file():
        return f"{database} is not a regular file"
    if database.exists() and not os.access(database, os.R_OK | os.W_OK):
        return f"{database} is not writable (permission denied)"
    return None


def open_store(directory: Path) -> tuple[SessionStore, str | None]:
    """The store in `directory`; when that directory cannot hold it, a store in memory and
    a message that names the directory and the cause."""
    try:
        return SessionStore(directory / DB_FILE), None
    except (OSError, sqlite3.Error) as exc:
        cause = data_dir_problem(directory) or (
            f"{directory / DB_FILE}: {exc.strerror if isinstance(exc, OSError) else exc}"
        )
        return SessionStore(None), f"cannot use the data directory {directory}: {cause}"


class SessionStore:
    def __init__(self, path: Path | None) -> None:
        """Open (creating it) the database at `path`; None keeps it in memory. Raises
        OSError or sqlite3.Error when the file cannot be created or written."""
        self.path = path
        if path is None:
            self._db = sqlite3.connect(":memory:", isolation_level=None, check_same_thread=False)
        else:
            path.parent.mkdir(parents=True, exist_ok=True)
            self._db = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
            try:
                self._configure()
            except sqlite3.Error:
                self._db.close()
                raise
        self._db.executescript(SCHEMA)
        self.closed = False
        self.problem: str | None = None
        """A write failure not yet told to the user (see take_problem)."""
        self._failed: str | None = None
        """The last write failure, until a write succeeds (each is logged once)."""
        self._seq: dict[str, int] = {}
        self._meta: dict[str, dict[str, Any]] = {}
        """Metadata changes not yet written (see update_meta)."""

    @contextlib.contextmanager
    def _writing(self) -> Iterator[None]:
        """A write that the disk may refuse (full, read-only, I/O error, locked too long):
        the error is kept in `problem` (logged and told to the user once) instead of failing
        the request that wrote, and the next write tries again. What was not written is
        still in memory for the live session; only its replay after a restart lacks it."""
        try:
            yield
        except (sqlite3.OperationalError, sqlite3.IntegrityError) as exc:
            # IntegrityError: a row whose session could not be created when the disk failed.
            problem = f"cannot write to {self.path}: {exc}"
            if problem != self._failed:
                log.error("%s; the session goes on, but what it does is not saved", problem)
                self._failed = self.problem = problem
            return
        self._failed = None

    def take_problem(self) -> str | None:
        """A write failure not yet told to the user, once."""
        problem, self.problem = self.problem, None
        return problem

    def _configure(self) -> None:
        # WAL: readers (other daemons, `acpd doctor`) never wait for a writer, and a commit
        # costs no fsync. mmap_size 0 whatever the build's default: the database file is
        # read with read(2), whose errors are exceptions, never SIGBUS.
        self._db.execute("PRAGMA mmap_size = 0")
        self._db.execute("PRAGMA journal_mode = WAL")
        self._db.execute("PRAGMA synchronous = NORMAL")
        # Fails now, not at the first session: a database that cannot be written.
        self._db.execute("CREATE TABLE IF NOT EXISTS _probe (x)")
        self._db.execute("DROP TABLE _probe")

    def close(self) -> None:
        """Write what is pending and close. Later writes are dropped with a warning: a turn
        that outlived the daemon's stop grace must not end in a traceback."""
        if self.closed:
            return
        try:
            self.flush_meta()
        finally:
            self.closed = True
            self._db.close()

    def create(self, session_id: str, cwd: str, mode: str, model: str | None) -> None:
        self.flush_meta()
        now = time.time()
        with self._writing(), self._db:
            self._db.execute(
                "INSERT INTO sessions VALUES (?, ?, NULL, ?, ?, ?, ?)",
                (session_id, cwd, mode, model, now, now),
            )

    def get(self, session_id: str) -> SessionRow | None:
        self.flush_meta()
        row = self._db.execute("SELECT * FROM sessions WHERE id = ?", (session_id,)).fetchone()
        return SessionRow(*row) if row else None

    def update_meta(self, session_id: str, **fields: Any) -> None:
        """Change a session's title, mode, model or cwd, written behind: the change is kept
        here and written by the next flush_meta(), which every other read or write of the
        sessions table runs first (so reads see it) and which the daemon runs shortly after.
        A mode switch costs a dict update, not a transaction; a crash before the flush loses
        that metadata change, never a message or an update."""
        unknown = set(fields) - META_FIELDS
        if unknown:
            raise ValueError(f"not session metadata: {', '.join(sorted(unknown))}")
        pending = self._meta.setdefault(session_id, {})
        pending.update(fields)
        pending["updated_at"] = time.time()

    @property
    def pending_meta(self) -> bool:
        return bool(self._meta)

    def flush_meta(self) -> None:
        """Write the metadata changes kept by update_meta, in one transaction."""
        if not self._meta or self.closed:
            return
        with self._writing(), self._db:
            for session_id, fields in self._meta.items():
                sets = ", ".join(f"{name} = ?" for name in fields)
                self._db.execute(
                    f"UPDATE sessions SET {sets} WHERE id = ?", (*fields.values(), session_id)
                )
        if self._failed is None:  # only once written: a failed flush is tried again
            self._meta.clear()

    def forget(self, session_id: str) -> None:
        """The session is no longer live here: drop its cached sequence numbers (read again
        from the table by its next write, if it ever comes back)."""
        for table in ("updates", "messages"):
            self._seq.pop(f"{table}\0{session_id}", None)

    def delete(self, session_id: str) -> bool:
        self.flush_meta()
        deleted = 0
        with self._writing(), self._db:
            deleted = self._db.execute(
                "DELETE FROM sessions WHERE id = ?", (session_id,)
            ).rowcount
        self.forget(session_id)
        return deleted > 0

    # --- per-session settings (config switches, extra roots, cost: daemon/settings.py) ----

    def settings(self, session_id: str) -> dict[str, Any]:
        """The session's stored settings; {} when it has none (or the row is unreadable)."""
        row = self._db.execute(
            "SELECT payload FROM session_settings WHERE session_id = ?", (session_id,)
        ).fetchone()
        value = orjson.loads(row[0]) if row else {}
        return value if isinstance(value, dict) else {}

    def save_settings(self, session_id: str, settings: dict[str, Any]) -> None:
        if self.closed:
            return
        self.flush_meta()
        with self._writing(), self._db:
            self._db.execute(
                "INSERT INTO session_settings VALUES (?, ?) ON CONFLICT (session_id) "
                "DO UPDATE SET payload = excluded.payload", (session_id, orjson.dumps(settings))
            )

    # --- overflow (the tools get it as tools.overflow.SessionOverflow) ---------------------

    def save_overflow(self, session_id: str, entry_id: str, content: str) -> None:
        """Raises sqlite3.IntegrityError when the session does not exist."""
        with self._db:
            self._db.execute(
                "INSERT INTO tool_overflow VALUES (?, ?, ?, ?)",
                (entry_id, session_id, content, time.time()),
            )

    def load_overflow(self, session_id: str, entry_id: str) -> str | None:
        # Both ids in the query: an entry of another session is simply not found.
        row = self._db.execute(
            "SELECT content FROM tool_overflow WHERE id = ? AND session_id = ?",
            (entry_id, session_id),
        ).fetchone()
        return str(row[0]) if row else None

    def expire_overflow(self, retention_days: float, now: float | None = None,
                        limit: int | None = None) -> int:
        """Delete entries older than `retention_days` (at most `limit` of them, the oldest
        first); returns how many went."""
        cutoff = (time.time() if now is None else now) - retention_days * DAY
        if self.closed:
            return 0
        with self._writing(), self._db:
            if limit is None:
                cursor = self._db.execute(
                    "DELETE FROM tool_overflow WHERE created_at < ?", (cutoff,))
            else:
                cursor = self._db.execute(
                    "DELETE FROM tool_overflow WHERE id IN (SELECT id FROM tool_overflow "
                    "WHERE created_at < ? ORDER BY created_at LIMIT ?)", (cutoff, limit))
            return cursor.rowcount
        return 0

    def append_update(self, session_id: str, update: dict[str, Any]) -> None:
        self._append("updates", session_id, update)

    def append_message(self, session_id: str, message: dict[str, Any]) -> None:
        self._append("messages", session_id, message)

    def replace_messages(self, session_id: str, messages: builtins.list[dict[str, Any]]) -> None:
        """Rewrite a session's model history in one transaction (seq renumbered from 1)."""
        with self._writing(), self._db:
            self._db.execute("DELETE FROM messages WHERE session_id = ?", (session_id,))
            self._db.executemany(
                "INSERT INTO messages VALUES (?, ?, ?)",
                [(session_id, seq, orjson.dumps(m)) for seq, m in enumerate(messages, 1)],
            )
        # Read again by the next append: a failed rewrite left the old rows.
        self._seq.pop(f"messages\0{session_id}", None)

    def clear_messages(self, session_id: str) -> None:
        with self._writing(), self._db:
            self._db.execute("DELETE FROM messages WHERE session_id = ?", (session_id,))

    def updates(self, session_id: str) -> list[dict[str, Any]]:
        return self._load("updates", session_id)

    def update_count(self, session_id: str) -> int:
        """How many updates are stored for the session (what a replay would send)."""
        row = self._db.execute(
            "SELECT count(*) FROM updates WHERE session_id = ?", (session_id,)
        ).fetchone()
        return int(row[0])

    def messages(self, session_id: str) -> list[dict[str, Any]]:
        return self._load("messages", session_id)

    def list(
        self, cwd: str | None, cursor: str | None
    ) -> tuple[list[SessionRow], str | None]:
        """One page, newest first; raises BadCursor for a cursor this store did not issue."""
        self.flush_meta()
        where: list[str] = ["1 = 1"]
        args: list[Any] = []
        if cwd is not None:
            where.append("cwd = ?")
            args.append(cwd)
        if cursor:
            updated_at, last_id = _decode_cursor(cursor)
            where.append("(updated_at < ? OR (updated_at = ? AND id > ?))")
            args += [updated_at, updated_at, last_id]
        rows = self._db.execute(
            f"SELECT * FROM sessions WHERE {' AND '.join(where)} "
            "ORDER BY updated_at DESC, id LIMIT ?",
            (*args, PAGE_SIZE + 1),
        ).fetchall()
        page = [SessionRow(*row) for row in rows[:PAGE_SIZE]]
        more = len(rows) > PAGE_SIZE
        return page, _encode_cursor(page[-1]) if more else None

    def _append(self, table: str, session_id: str, payload: dict[str, Any]) -> None:
        if self.closed:
            log.warning("the session store is closed (acpd stopped): %s of %s not stored",
                        table[:-1], session_id)
            return
        self.flush_meta()
        seq = self._next_seq(table, session_id)
        with self._writing(), self._db:
            self._db.execute(
                f"INSERT INTO {table} VALUES (?, ?, ?)", (session_id, seq, orjson.dumps(payload))
            )
            self._db.execute(
                "UPDATE sessions SET updated_at = ? WHERE id = ?", (time.time(), session_id)
            )

    def _next_seq(self, table: str, session_id: str) -> int:
        key = f"{table}\0{session_id}"
        if key not in self._seq:
            row = self._db.execute(
                f"SELECT COALESCE(MAX(seq), 0) FROM {table} WHERE session_id = ?", (session_id,)
            ).fetchone()
            self._seq[key] = int(row[0])
        self._seq[key] += 1
        return self._seq[key]

    # `builtins.list`: inside this class, `list` names the method above.
    def _load(self, table: str, session_id: str) -> builtins.list[dict[str, Any]]:
        rows = self._db.execute(
            f"SELECT payload FROM {table} WHERE session_id = ? ORDER BY seq", (session_id,)
        ).fetchall()
        return [orjson.loads(row[0]) for row in rows]


def _encode_cursor(row: SessionRow) -> str:
    raw = orjson.dumps([row.updated_at, row.id])
    return base64.urlsafe_b64encode(raw).decode("ascii")


def _decode_cursor(cursor: str) -> tuple[float, str]:
    try:
        value = orjson.loads(base64.urlsafe_b64decode(cursor.encode("ascii")))
        updated_at, last_id = value
        if not isinstance(updated_at, int | float) or not isinstance(last_id, str):
            raise ValueError
        return float(updated_at), last_id
    except (ValueError, TypeError, orjson.JSONDecodeError, UnicodeEncodeError) as exc:
        raise BadCursor("invalid cursor") from exc
