"""Hot reloads of the policy leave nothing behind.

The permission rules in config.toml are watched and reloaded while the daemon runs (a
user edits them for days). Each round rewrites them (a new rule set, then a config that
does not load: the last good rules stay, and the sessions are told at their next prompt),
waits for each reload to be announced, and prompts. After a warm-up round, K more rounds
must not add a live acpd object, an fd or an asyncio task per round."""

from __future__ import annotations

import asyncio
import os
from typing import Any

import anyio
import pytest

from tests.leaks.harness import Place, Window, bash, caps, grown, held, settle, window

pytestmark = pytest.mark.anyio

ROUNDS = 4
TURNS: list[dict[str, Any]] = [{"tool_calls": [bash("echo hi")]}, {"text": "done"}]


def reloads(win: Window) -> int:
    return sum("policy_reloaded" in kind for kind, _ in win.client.events)


async def reload_with(win: Window, here: Place, text: str) -> None:
    seen = reloads(win)
    (here.root / "config.toml").write_text(text)
    await win.client.wait_for(lambda: reloads(win) > seen, within=60)


async def one_round(win: Window, here: Place, n: int) -> None:
    """A session that lives through two reloads (the broken one is told at its prompt),
    closed after (a live session's own history grows with its prompts, as it should)."""
    session_id = (await win.conn.new_session(cwd=str(here.workspace), mcp_servers=[])
                  ).session_id
    await reload_with(win, here, f'[tools.permissions.bash]\nallow = ["echo {n} *"]\n')
    await reload_with(win, here, "[tools.permissions.bash\nnot toml")
    assert await win.prompt(session_id) == "end_turn"
    assert "not reloaded" in win.client.texts() or "last good" in win.client.texts()
    await win.raw("session/close", {"sessionId": session_id})
    win.client.events.clear()


async def test_policy_reloads_leave_nothing(here: Place) -> None:
    options = here.options(TURNS)
    async with anyio.create_task_group() as tg, window(options, tg) as win:
        await win.conn.initialize(protocol_version=1, client_capabilities=caps())
        await one_round(win, here, 0)
        await settle()
        objects, fds = held(), len(os.listdir("/proc/self/fd"))
        tasks = len(asyncio.all_tasks())
        for n in range(1, ROUNDS + 1):
            await one_round(win, here, n)
        await settle()
        assert grown(objects, held(), ROUNDS) == {}
        assert len(os.listdir("/proc/self/fd")) <= fds
        assert len(asyncio.all_tasks()) <= tasks
