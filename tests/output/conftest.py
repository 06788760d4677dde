from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Any

import orjson
import pytest


@pytest.fixture
def anyio_backend() -> str:
    # The official Python SDK client of the e2e harness is asyncio-only.
    return "asyncio"


def db_rows(data_dir: Path, sql: str, *args: Any) -> list[tuple[Any, ...]]:
    """Read the daemon's session store from the outside (WAL: committed rows are visible)."""
    db = sqlite3.connect(data_dir / "sessions.sqlite3")
    try:
        return db.execute(sql, args).fetchall()
    finally:
        db.close()


def all_tables(data_dir: Path) -> dict[str, list[str]]:
    """Every row of every table of sessions.sqlite3, each as text (JSON payloads decoded)."""
    db = sqlite3.connect(data_dir / "sessions.sqlite3")
    try:
        names = [r[0] for r in db.execute("SELECT name FROM sqlite_master WHERE type='table'")]
        out: dict[str, list[str]] = {}
        for name in names:
            rows = db.execute(f"SELECT * FROM {name}").fetchall()
            out[name] = [" ".join(_text(v) for v in row) for row in rows]
        return out
    finally:
        db.close()


def _text(value: Any) -> str:
    if isinstance(value, bytes):
        try:
            return orjson.dumps(orjson.loads(value)).decode()
        except orjson.JSONDecodeError:
            return value.decode("utf-8", "replace")
    return str(value)


def messages(data_dir: Path, session_id: str) -> list[dict[str, Any]]:
    rows = db_rows(
        data_dir, "SELECT payload FROM messages WHERE session_id = ? ORDER BY seq", session_id
    )
    return [orjson.loads(r[0]) for r in rows]
