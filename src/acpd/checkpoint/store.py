"""One workspace's checkpoints: `<data dir>/checkpoints/<key>/` with `index.sqlite3` and
`objects/` (the blob store).

`key` is a digest of the workspace's real path, so every session and every daemon working in
one workspace share its store (and its blobs). The index holds the current manifest (the
last checkpoint: path -> entry, written as a difference after each scan) and one row per
recorded call: its session, tool, title, the changes it made (before and after entries),
notes about what could not be saved, and which undo undid it.

Rules and limits:
- Every scan compares fresh lstats with the manifest; the manifest is a cache of digests,
  never a source of facts about the disk. Which paths a scan lstats (all of them, or only
  those a file watcher reported changed) is tracking.py's decision.
- Scans and undos of one workspace are serialised by `lock` (a thread lock: they run in
  worker threads). Calls that run at the same time in one workspace (two sessions) may see
  each other's changes between their two checkpoints; a change is then shown in both.
- Caps: `Limits.max_file_bytes` per file, `max_total_bytes` for all blobs of the store,
  `max_entries` per scan. When the total is reached, the oldest call records (never the
  current manifest) are dropped and the blobs nobody references removed; what still does
  not fit is not saved and each such file is noted.
- Connections are opened with `check_same_thread=False` and used under `lock`.
"""

from __future__ import annotations

import hashlib
import json
import os
import sqlite3
import threading
from collections import deque
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from acpd.checkpoint.blobs import BlobStore
from acpd.checkpoint.entries import Change, Entry
from acpd.checkpoint.scan import Limits, Scanner, ScanResult
from acpd.checkpoint.tracking import Tracker

SCHEMA = """
PRAGMA journal_mode = WAL;
PRAGMA synchronous = NORMAL;
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS manifest (path TEXT PRIMARY KEY, entry TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS blobs (digest TEXT PRIMARY KEY, size INTEGER NOT NULL);
CREATE TABLE IF NOT EXISTS calls (
    seq INTEGER PRIMARY KEY AUTOINCREMENT,
    id TEXT NOT NULL UNIQUE,
    session TEXT NOT NULL,
    tool TEXT NOT NULL,
    title TEXT NOT NULL,
    started REAL NOT NULL,
    ended REAL NOT NULL,
    changes TEXT NOT NULL,
    notes TEXT NOT NULL,
    complete INTEGER NOT NULL,
    undoes TEXT,
    undone_by TEXT
);
CREATE INDEX IF NOT EXISTS calls_by_session ON calls (session, seq);
"""
STORE_DIR = "checkpoints"
HISTORY = 64


def workspace_key(root: str) -> str:
    return hashlib.blake2b(os.fsencode(os.path.realpath(root)), digest_size=10).hexdigest()


@dataclass(slots=True)
class CallRecord:
    id: str
    session: str
    tool: str
    title: str
    started: float
    ended: float
    changes: list[Change]
    notes: list[str] = field(default_factory=list)
    complete: bool = True
    undoes: str | None = None
    """The call this record undid (an undo is recorded like any call, so it can be undone)."""
    undone_by: str | None = None
    seq: int = 0


class WorkspaceStore:
    """Raises OSError or sqlite3.Error from the constructor when the store cannot be opened."""

    def __init__(self, data_dir: Path, root: str, limits: Limits) -> None:
        self.root = os.path.realpath(root)
        self.directory = data_dir / STORE_DIR / workspace_key(self.root)
        self.directory.mkdir(parents=True, exist_ok=True, mode=0o700)
        self.limits = limits
        self.lock = threading.RLock()
        self._db = sqlite3.connect(
            self.directory / "index.sqlite3", isolation_level=None, check_same_thread=False,
            timeout=10.0,
        )
        self._db.executescript(SCHEMA)
        self._db.execute("INSERT OR IGNORE INTO meta VALUES ('workspace', ?)",
                         (_shown(self.root),))
        # The root exactly (a name that is not UTF-8 included), so `acpd undo` finds this store.
        self._db.execute("INSERT OR IGNORE INTO meta VALUES ('workspace_json', ?)",
                         (_key(self.root),))
        total = self._db.execute("SELECT COALESCE(SUM(size), 0) FROM blobs").fetchone()[0]
        self.blobs = BlobStore(str(self.directory / "objects"), limits.max_total_bytes, total)
        st = os.stat(self.directory)
        self.scanner = Scanner(self.root, self.blobs, limits, frozenset({(st.st_dev, st.st_ino)}))
        self.tracker = Tracker(self.scanner, limits)
        self.manifest = self._load_manifest()
        self.generation = 0
        """Counts the checkpoints; `_touched` holds what each recent one may have changed."""
        self._touched: deque[set[str] | None] = deque(maxlen=HISTORY)

    def close(self) -> None:
        with self.lock:
            self.tracker.close()
            self._db.close()

    # --- checkpoints ----------------------------------------------------------------------

    def checkpoint(
        self, scope: list[str] | None = None, *, budget: bool = True, trust_watch: bool = False,
    ) -> ScanResult:
        """Scan the workspace (or only the `scope` paths, see Scanner.scan_scope) against
        the manifest and make the result the new manifest. `budget`: read files for at most
        `max_read_seconds` (undo reads what it compares in full). `trust_watch`: only the
        paths the file watcher reported may be scanned (tracking.py says when). Raises
        OSError when the workspace cannot be opened."""
        with self.lock:
            result = self._scan(scope, budget, trust_watch)
            if self.blobs.total >= self.limits.max_total_bytes and self._prune():
                result = self._scan(scope, budget, False)  # room again: save what was left out
            self._save_manifest(result)
            self.generation += 1
            self._touched.append(result.touched)
            result.generation = self.generation
            return result

    def touched_since(self, generation: int) -> set[str] | None:
        """The paths the checkpoints after `generation` may have changed; None when any of
        them was a full scan (or is too old to tell)."""
        with self.lock:
            count = self.generation - generation
            if count > len(self._touched):
                return None
            paths: set[str] = set()
            for touched in list(self._touched)[len(self._touched) - count:]:
                if touched is None:
                    return None
                paths |= touched
            return paths

    def _scan(self, scope: list[str] | None, budget: bool, trust: bool) -> ScanResult:
        result = None
        if scope is not None:
            result = self.scanner.scan_scope(self.manifest, scope, budget=budget)
        if result is not None:
            result.scoped = True
        else:
            result = self.tracker.scan(self.manifest, budget=budget, trust=trust)
        if result.out_of_time:
            result.note(
                f"{result.out_of_time} files were not read within the checkpoint's time "
                f"budget ({self.limits.max_read_seconds:g} s); the next checkpoints save "
                "them, and until then their changes cannot be undone")
        return result

    def _save_manifest(self, result: ScanResult) -> None:
        old, new = self.manifest, result.entries
        if not result.complete:
            # Paths the scan never reached keep their last known entries.
            new = {**{p: e for p, e in old.items() if p not in new}, **new}
            result.entries = new
        # The scanner hands back the very object for an unchanged path: compare identities.
        if result.touched is not None:
            upserts = [(_key(p), _dump(e)) for p in result.touched
                       if (e := new.get(p)) is not None and old.get(p) is not e]
            deletes = [(_key(p),) for p in result.touched if p in old and p not in new]
        else:
            upserts = [(_key(p), _dump(e)) for p, e in new.items() if old.get(p) is not e]
            deletes = [(_key(p),) for p in old if p not in new]
        added = self.blobs.take_added()
        if not (upserts or deletes or added):
            self.manifest = new
            return
        with self._db:
            self._db.execute("BEGIN")
            self._db.executemany("INSERT OR REPLACE INTO manifest VALUES (?, ?)", upserts)
            self._db.executemany("DELETE FROM manifest WHERE path = ?", deletes)
            self._db.executemany("INSERT OR IGNORE INTO blobs VALUES (?, ?)", added)
        self.manifest = new

    def _load_manifest(self) -> dict[str, Entry]:
        rows = self._db.execute("SELECT path, entry FROM manifest").fetchall()
        manifest: dict[str, Entry] = {}
        for key, text in rows:
            manifest[json.loads(key)] = Entry(**json.loads(text))
        return manifest

    # --- call records ---------------------------------------------------------------------

    def record(self, call: CallRecord) -> None:
        with self.lock, self._db:
            self._db.execute("BEGIN")
            self._db.execute(
                "INSERT OR REPLACE INTO calls (id, session, tool, title, started, ended, "
                "changes, notes, complete, undoes) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (call.id, call.session, call.tool, _shown(call.title), call.started, call.ended,
                 json.dumps([c.to_json() for c in call.changes]), json.dumps(call.notes),
                 int(call.complete), call.undoes),
            )
            if call.undoes is not None:
                # Undoing an undo redoes the call: it is no longer undone.
                target = self.get(call.undoes)
                if target is not None and target.undoes is not None:
                    self._db.execute("UPDATE calls SET undone_by = NULL WHERE id = ?",
                                     (target.undoes,))
                self._db.execute("UPDATE calls SET undone_by = ? WHERE id = ?",
                                 (call.id, call.undoes))

    def get(self, call_id: str) -> CallRecord | None:
        with self.lock:
            row = self._db.execute(f"SELECT {COLUMNS} FROM calls WHERE id = ?",
                                   (call_id,)).fetchone()
        return _record(row) if row is not None else None

    def recent(self, session: str | None = None, limit: int = 20) -> list[CallRecord]:
        """Newest first."""
        query = f"SELECT {COLUMNS} FROM calls"
        args: tuple[Any, ...] = ()
        if session is not None:
            query += " WHERE session = ?"
            args = (session,)
        with self.lock:
            rows = self._db.execute(query + " ORDER BY seq DESC LIMIT ?",
                                    (*args, limit)).fetchall()
        return [_record(r) for r in rows]

    def later_than(self, seq: int) -> list[CallRecord]:
        with self.lock:
            rows = self._db.execute(f"SELECT {COLUMNS} FROM calls WHERE seq > ? ORDER BY seq",
                                    (seq,)).fetchall()
        return [_record(r) for r in rows]

    # --- the total cap ----------------------------------------------------------------------

    def _prune(self) -> bool:
        """Drop the oldest half of the call records and every blob no one references now;
        True when that freed something."""
        count = self._db.execute("SELECT COUNT(*) FROM calls").fetchone()[0]
        if count:
            self._db.execute(
                "DELETE FROM calls WHERE seq IN (SELECT seq FROM calls ORDER BY seq LIMIT ?)",
                (max(1, count // 2),),
            )
        keep = {e.blob for e in self.manifest.values() if e.blob is not None}
        for (text,) in self._db.execute("SELECT changes FROM calls"):
            for change in json.loads(text):
                keep.update(side["blob"] for side in change[1:] if side and "blob" in side)
        freed = False
        for digest, size in self._db.execute("SELECT digest, size FROM blobs").fetchall():
            if digest not in keep:
                self.blobs.remove(digest, size)
                self._db.execute("DELETE FROM blobs WHERE digest = ?", (digest,))
                freed = True
        return freed


COLUMNS = ("id, session, tool, title, started, ended, changes, notes, complete, undoes, "
           "undone_by, seq")


def _record(row: tuple[Any, ...]) -> CallRecord:
    (call_id, session, tool, title, started, ended, changes, notes, complete, undoes,
     undone_by, seq) = row
    return CallRecord(
        call_id, session, tool, title, started, ended,
        [Change.from_json(c) for c in json.loads(changes)], json.loads(notes),
        bool(complete), undoes, undone_by, seq,
    )


def _shown(path: str) -> str:
    """Text SQLite can store: bytes of a non-UTF-8 name (surrogate escapes) become U+FFFD."""
    return path.encode("utf-8", "surrogateescape").decode("utf-8", "replace")


def _key(path: str) -> str:
    """Paths are stored as JSON strings: a name that is not UTF-8 (read as surrogate escapes)
    cannot be stored as SQLite text as it is."""
    return json.dumps(path)


def _dump(entry: Entry) -> str:
    return json.dumps({
        k: getattr(entry, k) for k in Entry.__slots__
    })


def outermost(paths: list[str]) -> list[str]:
    """The paths none of whose ancestors is in the list (a scope covering all of them)."""
    chosen = set(paths)
    kept = []
    for path in sorted(chosen):
        parts = path.split("/")
        if not any("/".join(parts[:n]) in chosen for n in range(1, len(parts))):
            kept.append(path)
    return kept


def workspaces(data_dir: Path) -> list[str]:
    """The workspace roots that have a checkpoint store under `data_dir`. Stores that cannot
    be read are left out."""
    roots: list[str] = []
    base = data_dir / STORE_DIR
    if not base.is_dir():
        return roots
    for index in sorted(base.glob("*/index.sqlite3")):
        try:
            db = sqlite3.connect(f"{index.absolute().as_uri()}?mode=ro", uri=True)
            try:
                exact = db.execute(
                    "SELECT value FROM meta WHERE key = 'workspace_json'").fetchone()
                row = db.execute("SELECT value FROM meta WHERE key = 'workspace'").fetchone()
            finally:
                db.close()
        except sqlite3.Error:
            continue
        if exact is not None:
            roots.append(str(json.loads(exact[0])))
        elif row is not None:  # a store written before the exact root was kept
            roots.append(str(row[0]))
    return roots
