"""Two editor windows on one shared daemon, driven by the official Python SDK client: one
daemon process, each window its own capabilities and sessions, editor requests only to the
window that owns the session, a session driven by one window at a time (a clear error, or a
take-over with `_meta` consent), one policy announced to every window."""

from __future__ import annotations

import json

import pytest
from acp import RequestError

from tests.e2e.client import RecordingClient
from tests.e2e.harness import caps, write_script
from tests.remote.harness import Place, wait_until, window

pytestmark = pytest.mark.anyio

RELOADED = "acpd/policy_reloaded"  # the SDK hands extensions over without the leading "_"
READ_AND_BASH = [
    {"text": "Reading.", "tool_calls": [{"name": "read", "arguments": {"path": "hello.txt"}}]},
    {"tool_calls": [{"name": "bash", "arguments": {"command": "echo from-bash"}}]},
    {"text": "done"},
]


def ps(shared: Place) -> str:
    result = shared.cli("ps")
    assert result.returncode == 0, result.stderr
    return result.stdout


async def test_two_windows_share_one_daemon_and_keep_their_own_editor(shared: Place) -> None:
    shared.script = write_script(shared.root / "s.json", READ_AND_BASH)
    buffer = str(shared.workspace / "hello.txt")
    first = RecordingClient(buffers={buffer: "BUFFER OF WINDOW ONE\n"})
    second = RecordingClient(buffers={buffer: "BUFFER OF WINDOW TWO\n"})
    async with window(shared, client=first) as one, window(shared, client=second) as two:
        await one.run.initialize(caps(fs=True, terminal=True))
        await two.run.initialize(caps(fs=False, terminal=False))
        a = await one.run.new_session()
        b = await two.run.new_session()
        assert len(shared.daemon_pids()) == 1, "both windows reach one daemon"
        assert await one.run.prompt(a, "go") == "end_turn"
        assert await two.run.prompt(b, "go") == "end_turn"

        # Window one offered fs and terminal: its buffer was read, its terminal ran bash.
        read_a = first.final(first.tool_calls()[0]["toolCallId"])
        assert read_a["content"][-1]["content"]["text"] == "BUFFER OF WINDOW ONE\n"
        assert len(first.calls("terminal/create")) == 1
        # Window two offered neither: acpd read the disk and ran bash itself.
        read_b = second.final(second.tool_calls()[0]["toolCallId"])
        assert read_b["content"][-1]["content"]["text"] == "hello from the workspace\n"
        assert second.calls("fs/read_text_file") == [] and second.calls("terminal/create") == []
        # Each window saw only its own session.
        assert {u["sessionId"] for u in first.updates} == {a}
        assert {u["sessionId"] for u in second.updates} == {b}

        status = ps(shared)
        assert "windows: 2" in status and a in status and b in status

        # Window two cannot drive window one's session...
        with pytest.raises(RequestError) as refused:
            await two.run.prompt(a, "hijack")
        assert "not found" in str(refused.value)
        with pytest.raises(RequestError) as busy:
            await two.run.conn.load_session(cwd=str(shared.workspace), session_id=a,
                                            mcp_servers=[])
        assert "open in another editor window" in str(busy.value)
        assert len(first.calls("terminal/create")) == 1, "nothing ran for the refused window"

        # ...unless it takes it over, with consent in _meta: then window one cannot.
        await two.run.raw("session/load", {
            "cwd": str(shared.workspace), "sessionId": a, "mcpServers": [],
            "_meta": {"acpd": {"takeOver": True}},
        })
        replayed = [u for u in second.updates if u["sessionId"] == a]
        assert any(u.get("sessionUpdate") == "tool_call" for u in replayed)
        with pytest.raises(RequestError) as gone:
            await one.run.prompt(a, "again")
        assert "not found" in str(gone.value)


async def test_a_policy_change_is_announced_on_every_window(shared: Place) -> None:
    overlay_dir = shared.root / "overlays"
    overlay_dir.mkdir()
    config = shared.root / "acpd.toml"
    config.write_text(f'[tools.shell]\nplugin_dirs = ["{overlay_dir}"]\n')
    shared.config = config
    shared.script = write_script(shared.root / "s.json", [{"text": "hi"}])
    first, second = RecordingClient(), RecordingClient()
    async with window(shared, client=first) as one, window(shared, client=second) as two:
        for win in (one, two):
            await win.run.initialize()
            await win.run.prompt(await win.run.new_session(), "hello")
        overlay = overlay_dir / "no-touch"
        overlay.mkdir()
        (overlay / "plugin.toml").write_text('[shell]\nblocked_commands = ["touch"]\n')
        for client in (first, second):
            await client.wait_for(lambda c=client: bool(c.calls(RELOADED)), 30)
        told = [c.calls(RELOADED)[-1] for c in (first, second)]
        assert all(any("no-touch" in s for s in t["sources"]) for t in told)
        assert len({json.dumps(t["hash"]) for t in told}) == 1, "one policy for both windows"
        # One watcher in one daemon: each window is told once per change, not once per window.
        assert len(first.calls(RELOADED)) == len(second.calls(RELOADED)) == 1


async def test_two_windows_started_at_once_start_one_daemon(shared: Place) -> None:
    shared.script = write_script(shared.root / "s.json", [{"text": "hi"}])
    async with window(shared) as one, window(shared) as two:
        await one.run.initialize()
        await two.run.initialize()
        assert await one.run.prompt(await one.run.new_session(), "x") == "end_turn"
        assert await two.run.prompt(await two.run.new_session(), "x") == "end_turn"
        await wait_until(lambda: len(shared.daemon_pids()) == 1, what="one daemon")
        assert "windows: 2" in ps(shared)
