"""Sessions with MCP servers leave no process, fd or object behind when they end.

Each round a session gets a real stdio MCP server (tests/mcp/server.py, with a grandchild
process), its first prompt starts it and calls its tools (one of them crashes the server,
which the next call starts again), then the session ends: closed, deleted, or loaded again
over itself (which restarts its servers) and closed. After a warm-up round, K more rounds
must not add a child process, an fd, a table entry or a live acpd object per round."""

from __future__ import annotations

import os
import sys
from typing import Any

import anyio
import pytest
from acp.schema import EnvVariable, McpServerStdio

from tests.e2e.schema import REPO
from tests.leaks.harness import (
    Place,
    Window,
    caps,
    containers,
    grown,
    held,
    settle,
    window,
)

pytestmark = [pytest.mark.anyio, pytest.mark.slow]

ROUNDS = 2
TURNS: list[dict[str, Any]] = [
    {"tool_calls": [{"name": "mcp__srv__echo", "arguments": {"text": "hi"}}]},
    {"tool_calls": [{"name": "mcp__srv__crash", "arguments": {}}]},
    {"tool_calls": [{"name": "mcp__srv__echo", "arguments": {"text": "again"}}]},
    {"text": "done"},
]


def server() -> McpServerStdio:
    return McpServerStdio(
        name="srv", command=sys.executable,
        args=["-m", "tests.mcp.server", "stdio", "--child", "acpd-leak-mcp-child"],
        env=[EnvVariable(name="PYTHONPATH", value=str(REPO))],
    )


def descendants() -> int:
    parents: dict[int, int] = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/stat") as handle:
                    raw = handle.read()
            except OSError:
                continue
            parents[int(entry)] = int(raw[raw.rindex(")") + 2:].split()[1])
    mine, todo = 0, [os.getpid()]
    while todo:
        pid = todo.pop()
        kids = [c for c, p in parents.items() if p == pid]
        mine += len(kids)
        todo.extend(kids)
    return mine


def tables(win: Window) -> dict[str, int]:
    methods = win.agent.methods
    assert methods is not None
    return containers(methods=methods, mcp=methods.mcp, groups=methods.groups,
                      store=methods.rt.store)


async def one_round(win: Window, cwd: str, ending: str) -> None:
    session_id = (await win.conn.new_session(cwd=cwd, mcp_servers=[server()])).session_id
    assert await win.prompt(session_id) == "end_turn"
    finals = [u.get("status") for u in win.client.updates
              if u.get("sessionUpdate") == "tool_call_update"
              and u.get("status") in ("completed", "failed")]
    assert finals == ["completed", "failed", "completed"], finals  # the server ran, crashed, ran
    if ending == "load":
        await win.conn.load_session(cwd=cwd, session_id=session_id, mcp_servers=[server()])
        assert await win.prompt(session_id) == "end_turn"  # its servers start again
        ending = "close"
    await win.raw(f"session/{ending}", {"sessionId": session_id})
    win.client.events.clear()


@pytest.mark.parametrize("ending", ["delete", "load"])
async def test_mcp_servers_end_with_their_session(here: Place, ending: str) -> None:
    options = here.options(TURNS * 2)
    cwd = str(here.workspace)
    async with anyio.create_task_group() as tg, window(options, tg) as win:
        await win.conn.initialize(protocol_version=1, client_capabilities=caps())
        await one_round(win, cwd, ending)  # warm-up: the SDK's import
        await settle()
        objects, sizes = held(), tables(win)
        fds, kids = len(os.listdir("/proc/self/fd")), descendants()
        for _ in range(ROUNDS):
            await one_round(win, cwd, ending)
        await settle()
        assert descendants() <= kids
        assert len(os.listdir("/proc/self/fd")) <= fds
        assert tables(win) == sizes
        assert grown(objects, held(), ROUNDS) == {}
