"""Turns that outlive their editor window: the turn goes on when its window closes, pauses
where it needs an editor (a permission prompt), and another window re-attaches it with
`session/load` (the whole history, then the turn live) or `session/resume` (what it missed);
with `[daemon] detach_grace` the turn is cancelled instead. Real daemon, real bash, the
official SDK client as both windows."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from typing import Any

import pytest

from tests.e2e.client import RecordingClient, always
from tests.e2e.harness import caps, write_script
from tests.remote.harness import Place, Window, close_window, wait_until, window

pytestmark = [pytest.mark.anyio, pytest.mark.slow]

ASKED = "python3 -c 'print(\"asked\")' > asked.txt"
"""The default policy asks before an interpreter runs inline code."""


def bash(command: str, **turn: Any) -> dict[str, Any]:
    return {**turn, "tool_calls": [{"name": "bash", "arguments": {"command": command}}]}


def session_state(shared: Place, session_id: str) -> str | None:
    """The session's state in `acpd ps` (None: not live in the daemon)."""
    result = shared.cli("ps")
    for line in result.stdout.splitlines():
        if session_id in line:
            return line.split()[1]
    return None


def ask_mode(shared: Place, extra: str = "") -> None:
    shared.config = shared.root / "acpd.toml"
    shared.config.write_text(f'[agent]\ndefault_mode = "ask"\n{extra}')


@pytest.mark.parametrize("closes", ["before-the-prompt", "while-the-prompt-is-open"])
async def test_a_turn_survives_its_window_and_another_window_takes_it_on(
    closes: str, shared: Place
) -> None:
    ask_mode(shared)
    ws = shared.workspace
    shared.script = write_script(shared.root / "s.json", [
        bash("echo one > one.txt", text="Step one.", delay=1.5),
        bash(ASKED, text="Step two needs you."),
        {"text": "All done."},
    ])
    first = RecordingClient(answer=always("allow_once"))
    if closes == "while-the-prompt-is-open":
        first.permission_gate = asyncio.Event()  # never set: the dialog stays open
    async with window(shared, client=first, tee=False) as one:
        await one.run.initialize(caps(fs=False, terminal=False))
        session_id = await one.run.new_session()
        prompt = asyncio.create_task(one.run.prompt(session_id, "do the steps"))
        if closes == "before-the-prompt":
            await wait_until(lambda: session_state(shared, session_id) == "running",
                             what="the turn to run")
        else:
            await first.wait_for(lambda: bool(first.calls("session/request_permission")), 30)
        await close_window(one)
        prompt.cancel()
        with contextlib.suppress(BaseException):
            await prompt

    # The window is gone; the turn is not: its first command ran, then it paused, waiting
    # for someone to answer the prompt.
    await wait_until(lambda: (ws / "one.txt").exists(), what="the first command")
    await wait_until(lambda: session_state(shared, session_id) == "paused", what="the pause")
    assert not (ws / "asked.txt").exists()

    second = RecordingClient(answer=always("allow_once"))
    async with window(shared, client=second) as two:
        await two.run.initialize(caps(fs=False, terminal=False))
        await two.run.conn.load_session(cwd=str(ws), session_id=session_id, mcp_servers=[])
        # The replay: the prompt and the first step, which this window never saw.
        kinds = [u.get("sessionUpdate") for u in second.updates]
        assert "user_message_chunk" in kinds and "tool_call" in kinds
        assert "do the steps" in second.texts("user_message_chunk")
        # Then the paused prompt is asked here, the turn goes on, and this window sees it.
        await second.wait_for(lambda: "All done." in second.texts(), 30)
        (asked,) = second.calls("session/request_permission")
        assert asked["toolCall"]["rawInput"]["command"] == ASKED
        assert (ws / "asked.txt").read_text() == "asked\n"
        finals = [u for u in second.updates if u.get("status") == "completed"]
        assert len(finals) == 2, "both steps completed, each shown once"
        await wait_until(lambda: session_state(shared, session_id) == "idle",
                         what="the turn's end")


async def prompt_then_leave(shared: Place, text: str,
                            mcp_servers: list[dict[str, Any]] | None = None) -> str:
    """A window starts a turn and closes once it runs; the turn ends with nobody watching
    (the daemon lets go of it, the store keeps it). Returns the session id."""
    async with window(shared, tee=False) as one:
        await one.run.initialize(caps(fs=False, terminal=False))
        session_id = str((await one.run.raw("session/new", {
            "cwd": str(shared.workspace), "mcpServers": mcp_servers or []}))["sessionId"])
        prompt = asyncio.create_task(one.run.prompt(session_id, text))
        await wait_until(lambda: session_state(shared, session_id) == "running",
                         what="the turn to run")
        await close_window(one)
        prompt.cancel()
        with contextlib.suppress(BaseException):
            await prompt
    await wait_until(lambda: session_state(shared, session_id) is None, what="the turn's end")
    return session_id


@contextlib.asynccontextmanager
async def resumed(shared: Place, session_id: str, last_words: str
                  ) -> AsyncIterator[tuple[Window, RecordingClient]]:
    """Another window resumes the session and waits for `last_words` in what it is sent."""
    second = RecordingClient()
    async with window(shared, client=second) as two:
        await two.run.initialize(caps(fs=False, terminal=False))
        await two.run.raw("session/resume", {"cwd": str(shared.workspace),
                                             "sessionId": session_id, "mcpServers": []})
        await second.wait_for(lambda: last_words in second.texts(), 15)
        yield two, second


async def test_resume_replays_what_the_window_missed(shared: Place) -> None:
    ws = shared.workspace
    shared.script = write_script(shared.root / "s.json", [
        bash("echo two > two.txt", text="Late words.", delay=1.5),
        {"text": "Finished without you."},
    ])
    session_id = await prompt_then_leave(shared, "go on")
    assert (ws / "two.txt").read_text() == "two\n"
    async with resumed(shared, session_id, "Finished without you.") as (two, second):
        assert "Late words." in second.texts()
        assert [u for u in second.updates if u.get("status") == "completed"]
        # What the first window had already seen is not sent again.
        assert second.texts("user_message_chunk") == ""
        # And the session is this window's now: it can prompt it.
        assert await two.run.prompt(session_id, "again") == "end_turn"


async def test_a_window_leaving_before_its_prompt_is_handled_has_still_seen_it(
    shared: Place,
) -> None:
    """The turn starts (its state is "running"), then waits for an MCP server that takes
    seconds to start; the window leaves meanwhile. Its own prompt was stored once the turn
    ran, so a window resuming the session is not shown it again as missed."""
    shared.script = write_script(shared.root / "s.json", [{"text": "Answered late."}])
    slow = {"name": "slow", "command": "bash", "args": ["-c", "sleep 3"], "env": []}
    session_id = await prompt_then_leave(shared, "the prompt", [slow])
    async with resumed(shared, session_id, "Answered late.") as (_, second):
        assert second.texts("user_message_chunk") == ""


async def test_a_detach_grace_cancels_the_turn_when_no_window_comes_back(
    shared: Place,
) -> None:
    ask_mode(shared, "[daemon]\ndetach_grace = 0.2\n")
    ws = shared.workspace
    shared.script = write_script(shared.root / "s.json", [
        bash("echo late > late.txt", delay=3),
        {"text": "never"},
    ])
    async with window(shared, tee=False) as one:
        await one.run.initialize(caps(fs=False, terminal=False))
        session_id = await one.run.new_session()
        prompt = asyncio.create_task(one.run.prompt(session_id, "go"))
        await wait_until(lambda: session_state(shared, session_id) == "running",
                         what="the turn to run")
        await close_window(one)
        prompt.cancel()
        with contextlib.suppress(BaseException):
            await prompt
    await wait_until(lambda: session_state(shared, session_id) is None, what="the cancel")
    await asyncio.sleep(3.5)  # past the model's delay: nothing of the turn ran after it
    assert not (ws / "late.txt").exists()


async def test_a_running_turn_taken_over_goes_on_when_the_first_window_closes(
    shared: Place,
) -> None:
    ws = shared.workspace
    shared.script = write_script(shared.root / "s.json", [
        bash("echo taken > taken.txt", text="Working.", delay=2),
        {"text": "Finished for the new window."},
    ])
    second = RecordingClient()
    async with window(shared, tee=False) as one, window(shared, client=second) as two:
        await one.run.initialize(caps(fs=False, terminal=False))
        await two.run.initialize(caps(fs=False, terminal=False))
        session_id = await one.run.new_session()
        prompt = asyncio.create_task(one.run.prompt(session_id, "work"))
        await wait_until(lambda: session_state(shared, session_id) == "running",
                         what="the turn to run")
        await two.run.raw("session/load", {
            "cwd": str(ws), "sessionId": session_id, "mcpServers": [],
            "_meta": {"acpd": {"takeOver": True}},
        })
        await close_window(one)  # the first window goes: the turn is not its any more
        prompt.cancel()
        with contextlib.suppress(BaseException):
            await prompt
        await second.wait_for(lambda: "Finished for the new window." in second.texts(), 30)
        assert (ws / "taken.txt").read_text() == "taken\n"


async def test_a_take_over_moves_an_open_permission_prompt_to_the_new_window(
    shared: Place,
) -> None:
    ask_mode(shared)
    ws = shared.workspace
    shared.script = write_script(shared.root / "s.json", [bash(ASKED), {"text": "Asked."}])
    first = RecordingClient(answer=always("allow_once"), permission_gate=asyncio.Event())
    second = RecordingClient(answer=always("allow_once"))
    async with window(shared, client=first, tee=False) as one, \
            window(shared, client=second) as two:
        await one.run.initialize(caps(fs=False, terminal=False))
        await two.run.initialize(caps(fs=False, terminal=False))
        session_id = await one.run.new_session()
        prompt = asyncio.create_task(one.run.prompt(session_id, "ask me"))
        await first.wait_for(lambda: bool(first.calls("session/request_permission")), 30)
        await two.run.raw("session/load", {
            "cwd": str(ws), "sessionId": session_id, "mcpServers": [],
            "_meta": {"acpd": {"takeOver": True}},
        })
        await second.wait_for(lambda: "Asked." in second.texts(), 30)
        (asked,) = second.calls("session/request_permission")
        assert asked["toolCall"]["rawInput"]["command"] == ASKED
        assert (ws / "asked.txt").read_text() == "asked\n"
        assert len(first.calls("session/request_permission")) == 1, "withdrawn, not re-asked"
        prompt.cancel()
        with contextlib.suppress(BaseException):
            await prompt


async def test_a_command_in_the_first_windows_terminal_stays_there_after_a_take_over(
    shared: Place,
) -> None:
    ws = shared.workspace
    shared.script = write_script(shared.root / "s.json", [
        bash("sleep 2; echo t > t.txt"), {"text": "Ran."},
    ])
    first, second = RecordingClient(), RecordingClient()
    async with window(shared, client=first, tee=False) as one, \
            window(shared, client=second) as two:
        await one.run.initialize(caps(fs=True, terminal=True))
        await two.run.initialize(caps(fs=True, terminal=True))
        session_id = await one.run.new_session()
        prompt = asyncio.create_task(one.run.prompt(session_id, "run it"))
        await first.wait_for(lambda: bool(first.calls("terminal/create")), 30)
        await two.run.raw("session/load", {
            "cwd": str(ws), "sessionId": session_id, "mcpServers": [],
            "_meta": {"acpd": {"takeOver": True}},
        })
        await second.wait_for(lambda: "Ran." in second.texts(), 30)
        # The terminal lived in the first window: its follow-ups went there, not here.
        assert second.calls("terminal/create") == [] and second.calls("terminal/output") == []
        assert len(first.calls("terminal/release")) == 1
        (card,) = [u for u in second.updates if u.get("sessionUpdate") == "tool_call"]
        assert second.final(card["toolCallId"])["status"] == "completed"
        assert (ws / "t.txt").read_text() == "t\n"
        prompt.cancel()
        with contextlib.suppress(BaseException):
            await prompt


async def test_a_window_without_terminal_or_fs_is_never_asked_for_them(shared: Place) -> None:
    """The turn began in a window offering fs and terminal; the window that takes it on
    offers neither: its command runs locally (same policy), its editor read fails as a
    tool error, and no fs/terminal request reaches that window."""
    ask_mode(shared)
    ws = shared.workspace
    shared.script = write_script(shared.root / "s.json", [
        bash(ASKED, delay=1.5),
        {"tool_calls": [{"name": "read", "arguments": {"path": "hello.txt"}}]},
        {"text": "Over."},
    ])
    async with window(shared, tee=False) as one:
        await one.run.initialize(caps(fs=True, terminal=True))
        session_id = await one.run.new_session()
        prompt = asyncio.create_task(one.run.prompt(session_id, "go"))
        await wait_until(lambda: session_state(shared, session_id) == "running",
                         what="the turn to run")
        await close_window(one)
        prompt.cancel()
        with contextlib.suppress(BaseException):
            await prompt
    await wait_until(lambda: session_state(shared, session_id) == "paused", what="the pause")

    second = RecordingClient(answer=always("allow_once"), terminal_enabled=False)
    async with window(shared, client=second) as two:
        await two.run.initialize(caps(fs=False, terminal=False))
        await two.run.conn.load_session(cwd=str(ws), session_id=session_id, mcp_servers=[])
        await second.wait_for(lambda: "Over." in second.texts(), 30)
        assert (ws / "asked.txt").read_text() == "asked\n"
        assert second.calls("terminal/create") == [] and second.calls("fs/read_text_file") == []
        read = [u for u in second.tool_calls() if u.get("kind") == "read"][-1]
        final = second.final(read["toolCallId"])
        assert final["status"] == "failed"
