"""Stored tool outputs past their retention go while the daemon runs, not only at its start.

A command's output past the limit is stored whole (`tool_overflow`) for `retention_days`;
it used to be expired only when the daemon started, so one that runs for weeks kept them
all. Here sessions make overflow entries; once the entries are older than the retention
(their time moved back in the real SQLite file) and a sweep is due, the next session that
ends deletes them, and only them."""

from __future__ import annotations

import sqlite3
from typing import Any

import anyio
import pytest

from acpd.daemon.agent import OVERFLOW_SWEEP
from acpd.daemon.store import DAY
from tests.leaks.harness import Place, Window, bash, caps, window

pytestmark = pytest.mark.anyio

TURNS: list[dict[str, Any]] = [{"tool_calls": [bash("seq 1 3000")]}, {"text": "done"}]


def entries(here: Place) -> int:
    with sqlite3.connect(here.data / "sessions.sqlite3") as db:
        return int(db.execute("SELECT count(*) FROM tool_overflow").fetchone()[0])


def age_all(here: Place, days: float) -> None:
    db = sqlite3.connect(here.data / "sessions.sqlite3")
    try:
        with db:
            db.execute("UPDATE tool_overflow SET created_at = created_at - ?", (days * DAY,))
    finally:
        db.close()


async def session_with_overflow(win: Window, here: Place) -> str:
    session_id = (await win.conn.new_session(cwd=str(here.workspace), mcp_servers=[])
                  ).session_id
    await win.raw("session/set_mode", {"sessionId": session_id, "modeId": "auto"})
    assert await win.prompt(session_id) == "end_turn"
    return session_id


async def test_expired_outputs_go_while_the_daemon_runs(here: Place) -> None:
    options = here.options(TURNS, "[tools.overflow]\nthreshold = 1000\nretention_days = 2\n")
    async with anyio.create_task_group() as tg, window(options, tg) as win:
        await win.conn.initialize(protocol_version=1, client_capabilities=caps())
        old = [await session_with_overflow(win, here) for _ in range(3)]
        assert entries(here) == 3
        age_all(here, 3)  # past the retention
        methods = win.agent.methods
        assert methods is not None
        fresh = await session_with_overflow(win, here)
        await win.raw("session/close", {"sessionId": old[0]})
        assert entries(here) == 4  # no sweep due yet (the daemon just started)
        methods.rt.overflow_swept -= OVERFLOW_SWEEP  # an hour later
        await win.raw("session/close", {"sessionId": old[1]})
        assert entries(here) == 1  # the three old ones went, the fresh one stays
        await win.raw("session/close", {"sessionId": fresh})
        assert entries(here) == 1
