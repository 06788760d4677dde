"""The daemon's life: killed -9 mid-turn (the window's forwarder says so and exits non-zero,
the store is intact, the next window starts a new daemon that loads the session), `acpd
daemon stop` (commands killed, results written, socket removed), idle exit, `acpd ps`
and `acpd attach`."""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import sqlite3
import subprocess
import sys
import threading

import pytest

from tests.e2e.client import RecordingClient
from tests.e2e.harness import alive, caps, marked, sleep_marker, wait_unmarked, write_script
from tests.e2e.schema import REPO
from tests.remote.harness import Place, wait_until, window

pytestmark = [pytest.mark.anyio, pytest.mark.slow]


def state_of(shared: Place, session_id: str) -> str | None:
    for line in shared.cli("ps").stdout.splitlines():
        if session_id in line:
            return line.split()[1]
    return None


async def test_a_daemon_killed_mid_turn_is_reported_and_the_next_window_starts_anew(
    shared: Place,
) -> None:
    shared.script = write_script(shared.root / "s.json", [
        {"text": "First answer."},
        {"text": "never said", "delay": 30},
    ])
    async with window(shared, tee=False) as one:
        await one.run.initialize(caps(fs=False, terminal=False))
        session_id = await one.run.new_session()
        assert await one.run.prompt(session_id, "first question") == "end_turn"
        prompt = asyncio.create_task(one.run.prompt(session_id, "second question"))
        await wait_until(lambda: state_of(shared, session_id) == "running", what="the turn")
        (old,) = shared.daemon_pids()
        os.kill(old, signal.SIGKILL)
        code = await asyncio.wait_for(one.process.wait(), 15)
        prompt.cancel()
        with contextlib.suppress(BaseException):
            await prompt
    assert code == 1
    said = one.stderr()
    assert f"the shared acpd daemon (pid {old}) went away" in said
    assert "sessions are kept" in said and "Traceback" not in said

    database = shared.data_dir / "sessions.sqlite3"
    with contextlib.closing(sqlite3.connect(database)) as db:
        assert db.execute("PRAGMA integrity_check").fetchone() == ("ok",)
        assert db.execute("SELECT count(*) FROM sessions WHERE id = ?",
                          (session_id,)).fetchone() == (1,)

    second = RecordingClient()
    async with window(shared, client=second) as two:
        await two.run.initialize(caps(fs=False, terminal=False))
        await two.run.conn.load_session(cwd=str(shared.workspace), session_id=session_id,
                                        mcp_servers=[])
        assert "First answer." in second.texts()
        asked = second.texts("user_message_chunk")
        assert "first question" in asked and "second question" in asked
        (new,) = shared.daemon_pids()
        assert new != old and not alive(old)


async def test_daemon_stop_kills_commands_writes_state_and_removes_the_socket(
    shared: Place,
) -> None:
    marker = sleep_marker()
    shared.script = write_script(shared.root / "s.json", [
        {"tool_calls": [{"name": "bash", "arguments": {"command": f"sleep {marker}"}}]},
        {"text": "after"},
    ])
    async with window(shared, tee=False) as one:
        await one.run.initialize(caps(fs=False, terminal=False))
        session_id = await one.run.new_session()
        prompt = asyncio.create_task(one.run.prompt(session_id, "sleep"))
        await wait_until(lambda: bool(marked(marker)), what="the command to start")
        (pid,) = shared.daemon_pids()
        stopped = await asyncio.to_thread(shared.cli, "daemon", "stop")
        assert stopped.returncode == 0 and f"pid {pid}" in stopped.stdout
        code = await asyncio.wait_for(one.process.wait(), 15)
        prompt.cancel()
        with contextlib.suppress(BaseException):
            await prompt
    assert code == 1 and "went away" in one.stderr()
    assert await wait_unmarked(marker) == [], "the command was killed"
    assert not alive(pid) and shared.sockets() == []
    # The card was closed and written before the store closed.
    second = RecordingClient()
    async with window(shared, client=second) as two:
        await two.run.initialize(caps(fs=False, terminal=False))
        await two.run.conn.load_session(cwd=str(shared.workspace), session_id=session_id,
                                        mcp_servers=[])
        (card,) = second.tool_calls()
        final = second.final(card["toolCallId"])
        assert final["status"] == "failed"


async def test_the_daemon_exits_when_idle(shared: Place) -> None:
    shared.config = shared.root / "acpd.toml"
    shared.config.write_text("[daemon]\nidle_exit = 0.5\n")
    shared.script = write_script(shared.root / "s.json", [{"text": "hi"}])
    async with window(shared) as one:
        await one.run.initialize()
        assert await one.run.prompt(await one.run.new_session(), "x") == "end_turn"
        (pid,) = shared.daemon_pids()
        await asyncio.sleep(1.5)
        assert alive(pid), "a window is open: not idle"
    await wait_until(lambda: not alive(pid), what="the idle exit")
    assert shared.sockets() == []


async def test_ps_and_attach_show_the_sessions(shared: Place) -> None:
    shared.script = write_script(shared.root / "s.json", [
        {"text": "Looking.", "tool_calls": [{"name": "bash", "arguments": {"command": "echo hi"}}]},
        {"text": "The first answer."},
        {"text": "The second answer."},
    ])
    async with window(shared) as one:
        await one.run.initialize(caps(fs=False, terminal=False))
        session_id = await one.run.new_session()
        assert await one.run.prompt(session_id, "look around") == "end_turn"

        status = shared.cli("ps").stdout
        (pid,) = shared.daemon_pids()
        assert f"daemon pid {pid}" in status and "windows: 1" in status
        row = next(line for line in status.splitlines() if session_id in line)
        assert "idle" in row and "window #1" in row and "look around" in row

        stored = shared.cli("attach", session_id, "--no-follow")
        assert stored.returncode == 0, stored.stderr
        assert "The first answer." in stored.stdout and "echo hi" in stored.stdout
        assert "you > look around" in stored.stdout

        follower = subprocess.Popen(  # noqa: ASYNC220 (read by a thread)
            [sys.executable, "-m", "acpd", "attach", session_id], cwd=REPO, text=True,
            env={**shared.env(), "PYTHONUNBUFFERED": "1"},
            stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
        )
        lines: list[str] = []
        out = follower.stdout
        assert out is not None
        reader = threading.Thread(target=lambda: lines.extend(iter(out.readline, "")))
        reader.start()
        try:
            await wait_until(lambda: "The first answer." in "".join(lines), what="the replay")
            assert await one.run.prompt(session_id, "and again") == "end_turn"
            await wait_until(lambda: "The second answer." in "".join(lines), what="live")
        finally:
            follower.terminate()
            follower.wait(10)
            reader.join(10)
        assert "you > and again" in "".join(lines)
        assert "windows: 1" in shared.cli("ps").stdout, "a follower is not a window"

    missing = shared.cli("attach", "sess_nope", "--no-follow")
    assert missing.returncode == 1 and "no running daemon knows" in missing.stderr


def test_ps_and_stop_with_no_daemon_say_so(shared: Place) -> None:
    for words in (("ps",), ("daemon", "stop")):
        result = shared.cli(*words)
        assert result.returncode == 0 and "no acpd daemon is running" in result.stdout
    assert not shared.socket_dir.exists(), "asking created nothing"


async def test_sigterm_stops_the_daemon_like_daemon_stop(shared: Place) -> None:
    shared.script = write_script(shared.root / "s.json", [{"text": "hi"}])
    async with window(shared, tee=False) as one:
        await one.run.initialize()
        assert await one.run.prompt(await one.run.new_session(), "x") == "end_turn"
        (pid,) = shared.daemon_pids()
        os.kill(pid, signal.SIGTERM)
        code = await asyncio.wait_for(one.process.wait(), 15)
    assert code == 1 and "went away" in one.stderr()
    await wait_until(lambda: not alive(pid), what="the daemon to exit")
    assert shared.sockets() == []
    assert "stopping on SIGTERM" in shared.daemon_log()
