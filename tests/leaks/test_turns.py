"""Cancelled turns, timed-out commands and permission prompts leave nothing behind.

Each round, in `ask` mode: a command the policy asks about (answered once allowed, once
rejected), a command killed at its timeout, then a prompt cancelled in the middle of its
command, and a prompt whose permission question is still open when it is cancelled. Run
with the local runner and with editor terminals. After a warm-up round, K more rounds must
not add a live acpd object, an entry to a per-session table, an open fd or a child."""

from __future__ import annotations

import asyncio
import os
from typing import Any

import anyio
import pytest

from tests.e2e.client import RecordingClient
from tests.leaks.harness import (
    Place,
    Window,
    bash,
    caps,
    containers,
    grown,
    held,
    settle,
    text,
    window,
)

pytestmark = pytest.mark.anyio

ROUNDS = 4
ASKED = "rm -f asked-file"  # deleting: `ask` mode asks
TURNS: list[dict[str, Any]] = [
    # prompt 1: two questions (allowed, then rejected), a timeout
    {"tool_calls": [bash(ASKED)]},
    {"tool_calls": [bash(ASKED + " again")]},
    {"tool_calls": [bash("echo started; sleep 30", timeout=0.3)]},
    {"text": "done"},
    # prompt 2: cancelled during its command
    {"tool_calls": [bash("echo cancel-me; sleep 30")]},
    # prompt 3: cancelled while its question is open
    {"tool_calls": [bash(ASKED + " never")]},
]


def answer(call: dict[str, Any], _options: list[dict[str, Any]]) -> str | None:
    title = str(call.get("title") or call.get("rawInput") or "")
    return "reject_once" if "again" in title else "allow_once"


def open_fds() -> int:
    return len(os.listdir("/proc/self/fd"))


def children() -> int:
    me = str(os.getpid())
    count = 0
    for pid in os.listdir("/proc"):
        if pid.isdigit():
            try:
                stat = open(f"/proc/{pid}/stat").read()  # noqa: SIM115
            except OSError:
                continue
            if stat[stat.rindex(")") + 2:].split()[1] == me:
                count += 1
    return count


async def cancel_when(win: Window, session_id: str, needle: str) -> str:
    start = len(win.client.events)
    prompt = asyncio.ensure_future(win.conn.prompt(session_id=session_id, prompt=text("go")))
    await win.client.wait_for(lambda: needle in str(win.client.events[start:]), within=60)
    await win.conn.cancel(session_id=session_id)
    return str((await prompt).stop_reason)


async def one_round(win: Window, cwd: str) -> None:
    session_id = (await win.conn.new_session(cwd=cwd, mcp_servers=[])).session_id
    assert await win.prompt(session_id) == "end_turn"
    assert await cancel_when(win, session_id, "cancel-me") == "cancelled"
    assert await cancel_when(win, session_id, "session/request_permission") == "cancelled"
    await win.raw("session/delete", {"sessionId": session_id})
    assert len(win.client.calls("session/request_permission")) == 3  # the rounds do ask
    win.client.events.clear()


def tables(win: Window) -> dict[str, int]:
    methods = win.agent.methods
    assert methods is not None
    rt = methods.rt
    return containers(methods=methods, groups=methods.groups, store=rt.store,
                      utility=rt.pipeline.gates.utility, conn=win.daemon_conn,
                      outbox=win.daemon_conn.outbox)


@pytest.mark.parametrize("terminal", [False, True], ids=["local", "editor-terminal"])
async def test_cancelled_and_asked_turns_leave_nothing(here: Place, terminal: bool) -> None:
    options = here.options(TURNS)
    gate = asyncio.Event()
    client = RecordingClient(answer=answer, permission_gate=gate)
    cwd = str(here.workspace)
    async with anyio.create_task_group() as tg, window(options, tg, client=client) as win:
        await win.conn.initialize(protocol_version=1, client_capabilities=caps(terminal=terminal))
        gate.set()  # questions are answered ...
        client.permission_gate = None
        await one_round(win, cwd)  # warm-up
        await settle()
        objects, sizes, fds, kids = held(), tables(win), open_fds(), children()
        for _ in range(ROUNDS):
            await one_round(win, cwd)
        await settle()
        assert grown(objects, held(), ROUNDS) == {}
        assert tables(win) == sizes
        assert open_fds() <= fds
        assert children() <= kids
