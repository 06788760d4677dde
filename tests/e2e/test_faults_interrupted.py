"""A daemon killed mid-tool leaves a call open; loading the session closes it (issue 9, item 2).

The first daemon runs a scripted turn whose bash call sleeps; once the command has started
(deterministic: it writes its pid first) the daemon gets SIGKILL, so the store holds a
`tool_call` without a final update and an assistant `tool_calls` entry without a result. A
second daemon loads the session: the replay closes the card ("interrupted", failed), and the
next OpenAI request (to a recorded-fixture server) carries one tool result per call, right
after the assistant message, as OpenAI-compatible APIs demand. The closing is stored: a third
load replays it once, not twice.
"""

from __future__ import annotations

import contextlib
import os
import signal
import sqlite3
import time
from pathlib import Path
from typing import Any

import orjson

from acpd.sandbox.status import sandbox_status
from tests.helpers.daemon import RawPeer, raw_daemon, write_script
from tests.providers.fake_server import FakeLLMServer, Reply


def collect(peer: RawPeer, method: str, params: dict[str, Any]) -> tuple[dict, list[dict]]:
    """Send a request; its response and the updates that came before it."""
    peer.send({"jsonrpc": "2.0", "id": 7, "method": method, "params": params})
    updates = []
    while True:
        message = peer.recv()
        assert message is not None, "the daemon ended"
        if message.get("id") == 7 and "method" not in message:
            return message, updates
        if message.get("method") == "session/update":
            updates.append(message["params"]["update"])


def wait_for(path: Path, within: float = 15.0) -> str:
    deadline = time.monotonic() + within
    while not path.exists() or not path.read_text().strip():
        assert time.monotonic() < deadline, f"{path} never appeared"
        time.sleep(0.02)
    return path.read_text().strip()


def kill_mid_tool(data_dir: Path, workspace: Path, script: Path) -> tuple[str, str]:
    """Start a turn whose bash call sleeps, SIGKILL the daemon while it runs; returns the
    session id and the card's tool call id."""
    with raw_daemon(data_dir, "--model", f"scripted:{script}") as peer:
        peer.initialize()
        session_id = peer.request(
            "session/new", {"cwd": str(workspace), "mcpServers": []}
        )["result"]["sessionId"]
        peer.request("session/set_mode", {"sessionId": session_id, "modeId": "auto"})
        prompt = {"sessionId": session_id, "prompt": [{"type": "text", "text": "sleep"}]}
        peer.send({"jsonrpc": "2.0", "id": 1, "method": "session/prompt", "params": prompt})
        card = None
        while card is None:
            message = peer.recv()
            assert message is not None, "the daemon ended"
            update = message.get("params", {}).get("update", {})
            if update.get("sessionUpdate") == "tool_call":
                card = update["toolCallId"]
        pid = int(wait_for(workspace / "pid.txt"))
        peer.proc.kill()  # SIGKILL: nothing runs at exit
        peer.proc.wait(10)
    # Unconfined, the command's own group outlives a SIGKILLed daemon; in the kernel sandbox
    # (--die-with-parent and its own PID namespace) it is already gone, and `$$` was a pid of
    # that namespace, never to be signalled on the host.
    if not sandbox_status().available:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(pid, signal.SIGKILL)
    return session_id, card


def test_a_call_left_open_by_a_killed_daemon_is_closed_on_load(
    tmp_path: Path, data_dir: Path, workspace: Path
) -> None:
    command = "echo $$ > pid.txt; sleep 30"
    script = write_script(tmp_path / "s.json", [
        {"text": "Running it.", "tool_calls": [
            {"name": "bash", "arguments": {"command": command}},
            {"name": "read", "arguments": {"path": "hello.txt"}},
        ]},
    ])
    session_id, card = kill_mid_tool(data_dir, workspace, script)

    server = FakeLLMServer()
    server.start()
    try:
        server.queue(Reply(sse="openai_text.sse"))
        config = tmp_path / "acpd.toml"
        config.write_text(f'[providers.openai]\nbase_url = "{server.url}/v1"\nmax_retries = 0\n')
        args = ("--model", "openai:test-model", "--config", str(config))
        with raw_daemon(data_dir, *args, env={"OPENAI_API_KEY": "sk-test"}) as peer:
            peer.initialize()
            load = {"sessionId": session_id, "cwd": str(workspace), "mcpServers": []}
            answer, replay = collect(peer, "session/load", load)
            assert "result" in answer, answer
            mine = [u for u in replay if u.get("toolCallId") == card]
            assert mine[0]["sessionUpdate"] == "tool_call"
            assert [u.get("status") for u in mine[1:]] == ["failed"], mine
            assert "Interrupted" in mine[-1]["content"][0]["content"]["text"]
            peer.request("session/set_config_option", {
                "sessionId": session_id, "configId": "model", "value": "openai:test-model",
            })
            prompt = {"sessionId": session_id, "prompt": [{"type": "text", "text": "again"}]}
            reply = peer.request("session/prompt", prompt)
            assert reply["result"] == {"stopReason": "end_turn"}, reply
            assert peer.close() == 0
        (request,) = server.requests
    finally:
        server.stop()
    messages = request.json["messages"]
    roles = [m["role"] for m in messages]
    assert roles == ["system", "user", "assistant", "tool", "tool", "user"], roles
    calls = [c["id"] for c in messages[2]["tool_calls"]]
    assert [m["tool_call_id"] for m in messages[3:5]] == calls
    assert all("Interrupted" in m["content"] for m in messages[3:5])

    # Stored, not redone: a further load replays the one closing update.
    with raw_daemon(data_dir) as peer:
        peer.initialize()
        _, replay = collect(peer, "session/load", load)
        statuses = [u.get("status") for u in replay if u.get("toolCallId") == card]
        assert statuses.count("failed") == 1, statuses


def test_resume_closes_the_open_card_after_its_answer(
    tmp_path: Path, data_dir: Path, workspace: Path
) -> None:
    """Resume replays nothing: the editor still shows the open card, so the closing update
    follows the answer; the history the model reads is whole too."""
    script = write_script(tmp_path / "s.json", [
        {"tool_calls": [{"name": "bash", "arguments": {"command": "echo $$ > pid.txt; sleep 30"}}]},
        {"text": "resumed"},
    ])
    session_id, card = kill_mid_tool(data_dir, workspace, script)
    with raw_daemon(data_dir, "--model", f"scripted:{script}") as peer:
        peer.initialize()
        resume = {"sessionId": session_id, "cwd": str(workspace), "mcpServers": []}
        answer, before = collect(peer, "session/resume", resume)
        assert "result" in answer and not [u for u in before if u.get("toolCallId")], before
        _, after = collect(peer, "session/list", {})  # what came between the two answers
        closing = [u for u in after if u.get("toolCallId") == card]
        assert [u["status"] for u in closing] == ["failed"], after
        assert peer.close() == 0
    db = sqlite3.connect(data_dir / "sessions.sqlite3")
    rows = [orjson.loads(p) for (p,) in db.execute(
        "SELECT payload FROM messages WHERE session_id = ? ORDER BY seq", (session_id,))]
    db.close()
    assert [m["role"] for m in rows] == ["user", "assistant", "tool"]
    assert rows[2]["tool_call_id"] == rows[1]["tool_calls"][0]["id"] and rows[2]["is_error"]
