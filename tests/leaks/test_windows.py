"""Windows of the shared daemon that went away leave nothing behind.

The shared daemon (acpd/remote) outlives its editor windows. Each round a window opens a
session and prompts; the window goes away in the middle of a command (its turn goes on
detached), the command ends, the turn ends; then another window resumes the session and
closes it, or deletes it. After a warm-up round, K more rounds must not add a live acpd
object, nor an entry to the hub's or the runtime's per-session tables, per round."""

from __future__ import annotations

import asyncio
import contextlib
from typing import Any

import anyio
import pytest

from acpd.remote.hub import Hub
from tests.leaks.harness import (
    Place,
    bash,
    caps,
    containers,
    grown,
    held,
    settle,
    shared,
    text,
    window,
)

pytestmark = pytest.mark.anyio

ROUNDS = 5
GATE = "gate"
TURNS: list[dict[str, Any]] = [
    {"tool_calls": [{"name": "read", "arguments": {"path": "hello.txt"}}]},
    # Runs until the test lets it go: the window leaves while it runs.
    {"tool_calls": [bash(f"echo waiting; while [ ! -e {GATE} ]; do sleep 0.02; done")]},
    {"text": "done"},
]


def tables(hub: Hub) -> dict[str, int]:
    rt = hub._runtime
    assert rt is not None
    return containers(hub=hub, mcp=hub.mcp, groups=hub.groups, store=rt.store,
                      utility=rt.pipeline.gates.utility)


async def turn_ended(hub: Hub, session_id: str) -> None:
    """Until the detached turn of `session_id` has ended (the hub says when it changes)."""
    with anyio.fail_after(60):  # a guard against a hang, not a timed assertion
        while True:
            changed = hub._activity
            if session_id not in hub.detached:
                return
            await changed.wait()


async def one_round(hub: Hub, tg: Any, here: Place, options: Any, ending: str) -> None:
    cwd = str(here.workspace)
    gate = here.workspace / GATE
    gate.unlink(missing_ok=True)
    async with window(options, tg, hub=hub) as win:
        session_id = await win.open(here.workspace)
        await win.raw("session/set_mode", {"sessionId": session_id, "modeId": "auto"})
        prompt = asyncio.ensure_future(
            win.conn.prompt(session_id=session_id, prompt=text("go")))
        await win.client.wait_for(lambda: "waiting" in str(win.client.updates), within=60)
    prompt.cancel()
    with contextlib.suppress(BaseException):
        await prompt
    assert session_id in hub.detached  # its turn goes on without a window
    gate.touch()
    await turn_ended(hub, session_id)  # by itself
    async with window(options, tg, hub=hub) as win:
        await win.conn.initialize(protocol_version=1, client_capabilities=caps())
        if ending == "resume":
            await win.conn.resume_session(cwd=cwd, session_id=session_id, mcp_servers=[])
            await win.raw("session/close", {"sessionId": session_id})
        else:
            await win.raw("session/delete", {"sessionId": session_id})


@pytest.mark.parametrize("grace", ["", "[daemon]\ndetach_grace = 600\n"],
                         ids=["no-grace", "grace"])
@pytest.mark.parametrize("ending", ["resume", "delete"])
async def test_windows_that_left_are_forgotten(here: Place, ending: str, grace: str) -> None:
    options = here.options(TURNS * (ROUNDS + 1), grace)
    async with shared(options) as (hub, tg):
        await one_round(hub, tg, here, options, ending)  # warm-up
        await settle()
        objects, sizes = held(), tables(hub)
        for _ in range(ROUNDS):
            await one_round(hub, tg, here, options, ending)
        await settle()
        assert grown(objects, held(), ROUNDS) == {}
        assert tables(hub) == sizes


