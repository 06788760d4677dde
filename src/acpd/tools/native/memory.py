"""memory_save / memory_search: notes the model keeps for a project, across sessions and runs.

Storage: one SQLite database per project (the workspace's real path, hashed) under
`<data dir>/native/memory/`, with an FTS5 index (`porter unicode61`: case folded, diacritics
removed, English stemming), so "how are tests run" finds "Run the tests with ./scripts/test".

Rules and limits:
  - a query is never FTS syntax: it is cut into words (letters and digits; everything else,
    quotes, `*`, `-`, `NEAR(`, `:` and `^` included, is a separator), each word is quoted as
    a literal term, and the terms are ORed, ranked by bm25. A query with no word finds nothing
    and says so; no query can make SQLite raise a syntax error;
  - at most MAX_QUERY_TERMS distinct words a query; `limit` 1..MAX_LIMIT; content up to
    `[tools.native.memory] max_content_chars`; at most `max_entries` a project (a save past it
    is refused, nothing is evicted behind the model's back); saving a note already stored
    returns the existing one;
  - every query runs in a worker thread and is interrupted after `budget_secs` (db.py).
"""

from __future__ import annotations

import hashlib
import os
import re
import sqlite3
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TypeVar

from pydantic import BaseModel, ConfigDict, Field

from acpd.tools.errors import ErrorCategory, ToolError
from acpd.tools.native.config import MemoryConfig
from acpd.tools.native.db import DbTimeout, immediate, run_db
from acpd.tools.spec import Effect, ToolContext, ToolOutput, ToolSpec, redaction

SCHEMA = """
CREATE TABLE IF NOT EXISTS project (path TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS notes (
    id INTEGER PRIMARY KEY,
    content TEXT NOT NULL,
    digest TEXT NOT NULL UNIQUE,
    created_at REAL NOT NULL
);
CREATE VIRTUAL TABLE IF NOT EXISTS notes_fts USING fts5(
    content, content='notes', content_rowid='id', tokenize='porter unicode61 remove_diacritics 2'
);
CREATE TRIGGER IF NOT EXISTS notes_ai AFTER INSERT ON notes BEGIN
    INSERT INTO notes_fts (rowid, content) VALUES (new.id, new.content);
END;
CREATE TRIGGER IF NOT EXISTS notes_ad AFTER DELETE ON notes BEGIN
    INSERT INTO notes_fts (notes_fts, rowid, content) VALUES ('delete', old.id, old.content);
END;
"""
MAX_LIMIT = 50
DEFAULT_LIMIT = 5
MAX_QUERY_CHARS = 2_000
MAX_QUERY_TERMS = 32
T = TypeVar("T")
SHOWN_CHARS = 1_000
"""A found note longer than this is shown cut (the whole note stays stored)."""
_WORD = re.compile(r"[^\W_]+")
"""Letters and digits only: the separators of FTS5's unicode61 tokenizer, more or less."""


def memory_path(data_dir: Path, cwd: str) -> Path:
    """The project's database: one per workspace (its real path), under the data dir."""
    project = os.path.realpath(cwd)
    digest = hashlib.sha256(project.encode("utf-8", "surrogatepass")).hexdigest()[:24]
    return data_dir / "native" / "memory" / f"{digest}.sqlite3"


def match_expression(query: str) -> str | None:
    """The FTS5 MATCH text for a natural-language query: its distinct words, each a quoted
    literal, ORed; None when it has no word. Quotes cannot occur inside a word, so no word
    can end its literal early."""
    words = list(dict.fromkeys(w.lower() for w in _WORD.findall(query)))[:MAX_QUERY_TERMS]
    return " OR ".join(f'"{w}"' for w in words) if words else None


@dataclass(frozen=True, slots=True)
class Note:
    id: int
    content: str
    created_at: float


class MemoryStore:
    """The per-project notes, reached from the event loop (each call runs in a thread)."""

    def __init__(self, data_dir: Path, settings: MemoryConfig) -> None:
        self.data_dir = data_dir
        self.settings = settings

    async def save(self, cwd: str, content: str) -> tuple[int, bool]:
        """Store `content` for the project; (id, created). Raises ToolError."""
        digest = hashlib.sha256(content.encode("utf-8", "surrogatepass")).hexdigest()
        limit = self.settings.max_entries

        def work(db: sqlite3.Connection) -> tuple[int, bool]:
            project = os.path.realpath(cwd)
            with immediate(db):
                if db.execute("SELECT count(*) FROM project").fetchone()[0] == 0:
                    db.execute("INSERT INTO project VALUES (?)", (project,))
                row = db.execute("SELECT id FROM notes WHERE digest = ?", (digest,)).fetchone()
                if row is not None:
                    return int(row[0]), False
                if db.execute("SELECT count(*) FROM notes").fetchone()[0] >= limit:
                    raise ToolError(
                        ErrorCategory.PERMANENT_FAILURE,
                        f"this project already holds {limit} memories "
                        "([tools.native.memory] max_entries)",
                        suggestion="Tell the user; nothing was saved.",
                    )
                cursor = db.execute(
                    "INSERT INTO notes (content, digest, created_at) VALUES (?, ?, ?)",
                    (content, digest, time.time()),
                )
                return int(cursor.lastrowid or 0), True

        return await self._run(cwd, work)

    async def search(self, cwd: str, query: str, limit: int) -> list[Note]:
        """The best `limit` notes for `query`, best first (bm25). Raises ToolError."""
        expression = match_expression(query)
        if expression is None:
            return []

        def work(db: sqlite3.Connection) -> list[Note]:
            rows = db.execute(
                "SELECT n.id, n.content, n.created_at FROM notes_fts JOIN notes n "
                "ON n.id = notes_fts.rowid WHERE notes_fts MATCH ? ORDER BY rank, n.id LIMIT ?",
                (expression, limit),
            ).fetchall()
            return [Note(int(r[0]), str(r[1]), float(r[2])) for r in rows]

        return await self._run(cwd, work)

    async def _run(self, cwd: str, work: Callable[[sqlite3.Connection], T]) -> T:
        import anyio.to_thread

        budget = self.settings.budget_secs
        try:
            path = await anyio.to_thread.run_sync(memory_path, self.data_dir, cwd)
            return await run_db(path, SCHEMA, budget, work)
        except DbTimeout:
            raise ToolError(
                ErrorCategory.TIMEOUT, f"the memory store did not answer within {budget:g} s "
                "([tools.native.memory] budget_secs)",
            ) from None
        except (sqlite3.Error, OSError) as exc:
            raise ToolError(
                ErrorCategory.PERMANENT_FAILURE, f"the memory store cannot be used: {exc}"
            ) from None


# --- the tools -----------------------------------------------------------------------------


class SaveParams(BaseModel):
    model_config = ConfigDict(extra="forbid")

    content: str = Field(
        min_length=1, max_length=200_000,
        description="The note to keep for this project (a fact, a decision, a command)",
    )


class SearchParams(BaseModel):
    model_config = ConfigDict(extra="forbid")

    query: str = Field(
        min_length=1, max_length=MAX_QUERY_CHARS,
        description="What to look for, in plain words (any note sharing a word is found, "
        "best matches first)",
    )
    limit: int = Field(DEFAULT_LIMIT, ge=1, le=MAX_LIMIT, description="Most notes to return")


def make_memory_specs(store: MemoryStore | None) -> list[ToolSpec]:
    """memory_save and memory_search over `store` (None: no data dir, every call refused)."""

    def need_store() -> MemoryStore:
        if store is None:
            raise ToolError(ErrorCategory.PERMANENT_FAILURE,
                            "memory needs a data directory, and acpd runs without one here")
        return store

    async def save(args: SaveParams, ctx: ToolContext) -> ToolOutput:
        active = need_store()
        cap = active.settings.max_content_chars
        if len(args.content) > cap:
            raise ToolError(
                ErrorCategory.INVALID_PARAMETERS,
                f"content: {len(args.content)} characters, more than the {cap} a memory may "
                "hold ([tools.native.memory] max_content_chars); save a shorter note",
            )
        if not args.content.strip():
            raise ToolError(ErrorCategory.INVALID_PARAMETERS, "content: only whitespace")
        note_id, created = await active.save(ctx.cwd, args.content)
        text = f"saved as memory #{note_id}" if created else \
            f"already saved as memory #{note_id} (nothing new stored)"
        return ToolOutput(text, raw={"id": note_id, "created": created})

    async def search(args: SearchParams, ctx: ToolContext) -> ToolOutput:
        notes = await need_store().search(ctx.cwd, args.query, args.limit)
        if match_expression(args.query) is None:
            return ToolOutput("no memories found: the query has no words to look for",
                              raw={"count": 0, "ids": []})
        if not notes:
            return ToolOutput("no memories match", raw={"count": 0, "ids": []})
        lines = [f"{len(notes)} {'memory' if len(notes) == 1 else 'memories'}, best match first:"]
        for note in notes:
            when = time.strftime("%Y-%m-%d", time.localtime(note.created_at))
            shown = note.content if len(note.content) <= SHOWN_CHARS else (
                note.content[:SHOWN_CHARS] + f" [... {len(note.content)} characters in all]"
            )
            lines.append(f"#{note.id} ({when}): {shown}")
        return ToolOutput("\n".join(lines), raw={"count": len(notes), "ids": [n.id for n in notes]})

    return [
        ToolSpec(
            id="core__memory_save", name="memory_save",
            description="Keep a note for this project across sessions (facts, decisions, "
            "commands worth remembering); memory_search finds it later.",
            params=SaveParams, effect=Effect.STATE_CHANGE, kind="other", execute=save,
            workspace_files=False,
            title=lambda a: f"Remember: {a.content[:60]}",
            redaction=redaction((), ("id", "created")),
        ),
        ToolSpec(
            id="core__memory_search", name="memory_search",
            description="Search this project's saved notes (memory_save) by words; returns "
            "the best matches first.",
            params=SearchParams, effect=Effect.READ_ONLY, kind="search", execute=search,
            title=lambda a: f"Recall: {a.query[:60]}",
            redaction=redaction(("limit",), ("count", "ids")),
        ),
    ]
