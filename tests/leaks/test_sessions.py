"""Sessions that are over leave nothing behind in a daemon that runs for days.

Each round opens a session, runs a prompt (a read, a write, commands, a failing call) and
ends it one of the ways an editor does: closed (it stays on disk, the common case), loaded
again and closed, or deleted. After a warm-up round, K more rounds must not add a live acpd
object, nor an entry to the daemon's per-session tables, per round."""

from __future__ import annotations

from typing import Any

import anyio
import pytest

from tests.leaks.harness import (
    Place,
    Window,
    bash,
    caps,
    containers,
    grown,
    held,
    settle,
    window,
)

pytestmark = pytest.mark.anyio

ROUNDS = 6
TURNS: list[dict[str, Any]] = [
    {"tool_calls": [{"name": "read", "arguments": {"path": "hello.txt"}},
                    {"name": "write", "arguments": {"path": "out.txt", "content": "x\n"}}]},
    {"tool_calls": [bash("echo hi"), bash("exit 3"), {"name": "no_such_tool", "arguments": {}}]},
    {"text": "done"},
]
UTILITY_ON = "[tools.utility]\nenabled = true\nthreshold = -10\n"


def tables(win: Window) -> dict[str, int]:
    methods = win.agent.methods
    assert methods is not None
    rt = methods.rt
    return containers(methods=methods, mcp=methods.mcp, groups=methods.groups,
                      store=rt.store, utility=rt.pipeline.gates.utility)


async def one_round(win: Window, cwd: str, ending: str) -> None:
    session_id = (await win.conn.new_session(cwd=cwd, mcp_servers=[])).session_id
    await win.raw("session/set_mode", {"sessionId": session_id, "modeId": "auto"})
    assert await win.prompt(session_id) == "end_turn"
    await win.raw("session/close", {"sessionId": session_id})
    if ending in ("load", "delete"):
        await win.conn.load_session(cwd=cwd, session_id=session_id, mcp_servers=[])
        assert await win.prompt(session_id) == "end_turn"  # the script again, from its start
        await win.raw("session/close" if ending == "load" else "session/delete",
                      {"sessionId": session_id})


@pytest.mark.parametrize("ending", ["close", "load", "delete"])
@pytest.mark.parametrize("terminal", [False, True], ids=["local", "editor-terminal"])
@pytest.mark.parametrize("config", ["", UTILITY_ON], ids=["defaults", "utility-gate"])
async def test_sessions_that_are_over_are_forgotten(
    here: Place, terminal: bool, ending: str, config: str
) -> None:
    options = here.options(TURNS, config)
    cwd = str(here.workspace)
    async with anyio.create_task_group() as tg, window(options, tg) as win:
        await win.conn.initialize(protocol_version=1, client_capabilities=caps(terminal=terminal))
        await one_round(win, cwd, ending)  # warm-up: lazy imports, caches of the runtime
        await settle()
        objects, sizes = held(), tables(win)
        for _ in range(ROUNDS):
            await one_round(win, cwd, ending)
        await settle()
        assert grown(objects, held(), ROUNDS) == {}
        assert tables(win) == sizes
