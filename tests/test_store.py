"""SessionStore: metadata written behind, and never lost by a clean stop."""

from __future__ import annotations

import signal
import sqlite3
import time
from pathlib import Path
from typing import Any

import pytest

from acpd.daemon.store import SessionStore
from tests.helpers.daemon import raw_daemon, write_script


def on_disk(path: Path, session_id: str) -> tuple[Any, ...]:
    db = sqlite3.connect(path)
    try:
        row = db.execute(
            "SELECT mode, model, title, updated_at FROM sessions WHERE id = ?", (session_id,)
        ).fetchone()
        return tuple(row)
    finally:
        db.close()


@pytest.fixture
def store(tmp_path: Path) -> SessionStore:
    store = SessionStore(tmp_path / "s.sqlite3")
    store.create("a", str(tmp_path), "ask", None)
    store.create("b", str(tmp_path), "ask", None)
    return store


def test_a_change_is_kept_until_flushed_and_reads_see_it_at_once(
    store: SessionStore, tmp_path: Path
) -> None:
    store.update_meta("a", mode="auto")
    store.update_meta("a", title="first")
    assert store.pending_meta
    assert on_disk(store.path, "a")[:3] == ("ask", None, None)  # not written yet
    row = store.get("a")  # a read flushes first
    assert row is not None and (row.mode, row.title) == ("auto", "first")
    assert not store.pending_meta
    assert on_disk(store.path, "a")[:3] == ("auto", None, "first")


def test_many_changes_to_many_sessions_coalesce_into_one_write(store: SessionStore) -> None:
    for index in range(1000):
        store.update_meta("a" if index % 2 else "b", mode=("ask", "auto")[index % 2])
    statements: list[str] = []
    store._db.set_trace_callback(statements.append)
    store.flush_meta()
    updates = [s for s in statements if s.startswith("UPDATE")]
    assert len(updates) == 2 and statements.count("BEGIN ") <= 1
    assert on_disk(store.path, "a")[0] == "auto" and on_disk(store.path, "b")[0] == "ask"


def test_list_orders_by_the_pending_change(store: SessionStore) -> None:
    time.sleep(0.01)
    store.update_meta("a", mode="auto")  # "a" becomes the most recently updated
    rows, _ = store.list(None, None)
    assert [row.id for row in rows] == ["a", "b"]


def test_close_writes_what_is_pending(store: SessionStore) -> None:
    store.update_meta("b", model="openai:gpt-x")
    store.close()
    assert on_disk(store.path, "b")[1] == "openai:gpt-x"


def test_a_failed_flush_keeps_the_change_for_the_next_one(store: SessionStore) -> None:
    store.update_meta("a", mode="read-only")
    blocker = sqlite3.connect(store.path, timeout=0)
    blocker.execute("BEGIN IMMEDIATE")  # another writer holds the lock
    store._db.execute("PRAGMA busy_timeout = 0")
    store.flush_meta()  # refused: kept, logged and told once, never raised at the caller
    assert store.pending_meta
    assert "database is locked" in (store.take_problem() or "")
    assert store.take_problem() is None
    blocker.rollback()
    blocker.close()
    store.flush_meta()
    assert on_disk(store.path, "a")[0] == "read-only"


def test_only_session_metadata_is_accepted(store: SessionStore) -> None:
    with pytest.raises(ValueError, match="not session metadata: id"):
        store.update_meta("a", id="b")


def _new_session(peer: Any, cwd: Path) -> str:
    peer.initialize()
    reply = peer.request("session/new", {"cwd": str(cwd), "mcpServers": []})
    return str(reply["result"]["sessionId"])


def test_the_daemon_writes_a_mode_switch_shortly_after_without_a_stop(tmp_path: Path) -> None:
    data = tmp_path / "data"
    with raw_daemon(data) as peer:
        session_id = _new_session(peer, tmp_path)
        reply = peer.request("session/set_mode", {"sessionId": session_id, "modeId": "auto"})
        assert reply["result"] == {}
        deadline = time.monotonic() + 10
        while on_disk(data / "sessions.sqlite3", session_id)[0] != "auto":
            assert time.monotonic() < deadline, "the mode switch never reached the disk"
            time.sleep(0.02)
        assert peer.proc.poll() is None  # written while the daemon runs on


@pytest.mark.parametrize("stop", ["eof", "sigterm"])
def test_a_mode_switch_right_before_a_stop_is_on_disk(tmp_path: Path, stop: str) -> None:
    data = tmp_path / "data"
    with raw_daemon(data) as peer:
        session_id = _new_session(peer, tmp_path)
        peer.request("session/set_mode", {"sessionId": session_id, "modeId": "read-only"})
        if stop == "eof":
            assert peer.close(10) == 0
        else:
            peer.proc.send_signal(signal.SIGTERM)
            assert peer.proc.wait(10) == 0
    assert on_disk(data / "sessions.sqlite3", session_id)[0] == "read-only"


def stored_chunks(path: Path, session_id: str) -> list[bytes]:
    db = sqlite3.connect(path)
    try:
        rows = db.execute(
            "SELECT payload FROM updates WHERE session_id = ? ORDER BY seq", (session_id,)
        ).fetchall()
        return [row[0] for row in rows if b"agent_message_chunk" in row[0]]
    finally:
        db.close()


def test_text_streamed_before_a_crash_is_replayed(tmp_path: Path) -> None:
    """The model streams a first chunk, then stalls; the chunk is stored within half a
    second, and after a SIGKILL (nothing runs at exit) a new daemon replays it."""
    script = write_script(
        tmp_path / "s.json", [{"chunks": ["shown before the crash "], "stall": 60}]
    )
    data = tmp_path / "data"
    with raw_daemon(data, "--model", f"scripted:{script}") as peer:
        session_id = _new_session(peer, tmp_path)
        prompt = {"sessionId": session_id, "prompt": [{"type": "text", "text": "go"}]}
        peer.send({"jsonrpc": "2.0", "id": 1, "method": "session/prompt", "params": prompt})
        while True:
            message = peer.recv()
            assert message is not None, "the daemon ended"
            update = message.get("params", {}).get("update", {})
            if update.get("sessionUpdate") == "agent_message_chunk":
                break
        # The model stalls: no further chunk comes to trigger a write, the timer must.
        deadline = time.monotonic() + 10
        while not stored_chunks(data / "sessions.sqlite3", session_id):
            assert time.monotonic() < deadline, "the shown text never reached the store"
            time.sleep(0.05)
        peer.proc.kill()
        peer.proc.wait(10)
    with raw_daemon(data, "--model", f"scripted:{script}") as peer:
        peer.initialize()
        load = {"sessionId": session_id, "cwd": str(tmp_path), "mcpServers": []}
        peer.send({"jsonrpc": "2.0", "id": 2, "method": "session/load", "params": load})
        replayed = []
        while (message := peer.recv()) is not None and message.get("id") != 2:
            update = message["params"]["update"]
            if update["sessionUpdate"] == "agent_message_chunk":
                replayed.append(update["content"]["text"])
        assert message is not None and "result" in message, message
        assert "".join(replayed) == "shown before the crash "
