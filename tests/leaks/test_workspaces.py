"""Workspaces no session works in any more do not keep their checkpoint stores open.

A daemon serves many projects over its life (the shared daemon: every window's). Each
round works in a workspace of its own: a session there runs a call that changes files (so
the workspace gets a checkpoint store: a database and a file watcher), then the session
ends (closed, deleted, or its window goes away). After a warm-up round, K more rounds must
not leave an open store, an open fd, or a live acpd object per round; a workspace still in
use keeps its store."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import anyio
import pytest

from acpd.checkpoint.book import IDLE_STORES
from tests.leaks.harness import Place, Window, bash, caps, grown, held, settle, shared, window

pytestmark = pytest.mark.anyio

ROUNDS = 5
WARM = IDLE_STORES + 1
"""Warm-up rounds: the few stores kept open for recent workspaces are then all taken."""
TURNS: list[dict[str, Any]] = [
    {"tool_calls": [{"name": "write", "arguments": {"path": "out.txt", "content": "x\n"}},
                    bash("echo made > made.txt")]},
    {"text": "done"},
]


FOREIGN = ("acpd.sandbox.", "acpd.policy.")
"""Per-root caches of the sandbox walk and the path rules (another owner's modules; see
the leak report): not counted here."""


def ours(grew: dict[str, int]) -> dict[str, int]:
    return {name: n for name, n in grew.items() if not name.startswith(FOREIGN)}


def private_tmps() -> int:
    """The workspaces' private /tmp directories the daemon keeps, counted on disk."""
    from acpd.daemon import confine

    return sum(os.path.isdir(p) for p in confine._tmp_dirs.values())


def open_fds() -> int:
    return len(os.listdir("/proc/self/fd"))


def project(here: Place, n: int) -> Path:
    path = here.root / f"project-{n}"
    path.mkdir()
    (path / "src").mkdir()
    return path


def stores(win: Window) -> int:
    methods = win.agent.methods
    assert methods is not None and methods.rt.pipeline.checkpoints is not None
    return len(methods.rt.pipeline.checkpoints._stores)


async def work(win: Window, cwd: Path) -> str:
    session_id = (await win.conn.new_session(cwd=str(cwd), mcp_servers=[])).session_id
    await win.raw("session/set_mode", {"sessionId": session_id, "modeId": "auto"})
    assert await win.prompt(session_id) == "end_turn"
    assert (cwd / "made.txt").exists()
    return session_id


@pytest.mark.parametrize("ending", ["close", "delete"])
async def test_one_connection(here: Place, ending: str) -> None:
    options = here.options(TURNS)
    async with anyio.create_task_group() as tg, window(options, tg) as win:
        await win.conn.initialize(protocol_version=1, client_capabilities=caps())
        kept = await work(win, here.workspace)  # a workspace in use all along
        assert stores(win) == 1

        async def one_round(n: int) -> None:
            session_id = await work(win, project(here, n))
            assert stores(win) <= 2 + IDLE_STORES
            await win.raw(f"session/{ending}", {"sessionId": session_id})

        for n in range(WARM):
            await one_round(n)
        await settle()
        objects, fds, tmps = held(), open_fds(), private_tmps()
        for n in range(WARM, WARM + ROUNDS):
            await one_round(n)
        await settle()
        assert stores(win) == 1 + IDLE_STORES  # the one in use, the recent ones
        assert open_fds() <= fds
        assert private_tmps() <= tmps <= 1  # only the workspace in use keeps its /tmp
        assert ours(grown(objects, held(), ROUNDS)) == {}
        assert await win.prompt(kept) == "end_turn"  # its store still works


async def test_shared_daemon_windows(here: Place) -> None:
    options = here.options(TURNS)
    async with shared(options) as (hub, tg), window(options, tg, hub=hub) as stays:
        await stays.conn.initialize(protocol_version=1, client_capabilities=caps())
        await work(stays, here.workspace)
        book = hub._runtime.pipeline.checkpoints if hub._runtime else None
        assert book is not None

        async def one_round(n: int) -> None:
            async with window(options, tg, hub=hub) as win:
                await win.conn.initialize(protocol_version=1, client_capabilities=caps())
                await work(win, project(here, n))
                assert len(book._stores) <= 2 + IDLE_STORES
            # The window went away with its idle session.

        for n in range(WARM):
            await one_round(n)
        await settle()
        objects, fds, tmps = held(), open_fds(), private_tmps()
        for n in range(WARM, WARM + ROUNDS):
            await one_round(n)
        await settle()
        assert len(book._stores) == 1 + IDLE_STORES
        assert open_fds() <= fds
        assert private_tmps() <= tmps <= 1
        assert ours(grown(objects, held(), ROUNDS)) == {}


async def test_a_store_with_a_call_in_flight_stays_open(
    here: Place, monkeypatch: pytest.MonkeyPatch
) -> None:
    from acpd.checkpoint import book as book_module
    from acpd.checkpoint.book import Checkpoints

    monkeypatch.setattr(book_module, "IDLE_STORES", 0)
    book = Checkpoints(here.data)
    try:
        pending = await book.begin("call_1", "sess", "write", "write", str(here.workspace))
        assert pending.store is not None
        assert await anyio.to_thread.run_sync(book.close_unused, []) == 0  # in flight
        (here.workspace / "new.txt").write_text("new\n")
        outcome = await pending.finish([])
        assert [c.path for c in outcome.changes] == ["new.txt"]  # the store still worked
        assert await anyio.to_thread.run_sync(book.close_unused, []) == 1
        assert book._stores == {}
    finally:
        book.close()
