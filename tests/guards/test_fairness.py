"""Item 5: one session's reply full of refused tool calls must not stall the others.

Through the real daemon with a scripted model whose reply holds 20,000 bash calls the shell
policy denies: at most `max_tool_calls_per_reply` of them run (the rest are dropped, the
model is told in its last tool result and the user in one line), and while a busy session
works through thousands of them, another session's requests are answered in between (their
answers arrive before the busy prompt's, with the busy session's cards still coming after
them). Ordering only: the timing targets are in benchmarks/fairness.py.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.e2e.harness import daemon_env
from tests.helpers.daemon import RawPeer, raw_daemon, write_script
from tests.output.conftest import messages

DENIED = "curl -s https://example.com -o got.txt"


def busy_script(path: Path, calls: int) -> Path:
    tool_calls = [{"name": "bash", "arguments": {"command": DENIED}}] * calls
    return write_script(path, [{"tool_calls": tool_calls}, {"text": "done"}])


def new_session(peer: RawPeer, cwd: Path) -> str:
    reply = peer.request("session/new", {"cwd": str(cwd), "mcpServers": []})
    return str(reply["result"]["sessionId"])


def test_a_reply_runs_at_most_the_cap_and_says_what_it_dropped(
    tmp_path: Path, data_dir: Path, workspace: Path
) -> None:
    script = busy_script(tmp_path / "s.json", 20_000)
    seen: list[dict[str, Any]] = []
    with raw_daemon(data_dir, "--model", f"scripted:{script}", env=daemon_env(tmp_path)) as peer:
        peer.initialize()
        sid = new_session(peer, workspace)
        msg_id = send(peer, "session/prompt", {"sessionId": sid,
                                                "prompt": [{"type": "text", "text": "go"}]})
        answer = read_until(peer, msg_id, seen)
    assert answer["result"]["stopReason"] == "end_turn"
    cards = [m for m in seen if update_kind(m) == "tool_call"]
    assert len(cards) == 64, "the default max_tool_calls_per_reply"
    said = "".join(m["params"]["update"]["content"]["text"] for m in seen
                   if update_kind(m) == "agent_message_chunk")
    assert "20000 tool calls" in said and "19936 were dropped" in said
    history = messages(data_dir, sid)
    (assistant,) = [m for m in history if m["role"] == "assistant" and m["tool_calls"]]
    assert len(assistant["tool_calls"]) == 64, "dropped calls are kept out of the history"
    results = [m for m in history if m["role"] == "tool"]
    assert len(results) == 64
    assert "only the first 64 were run" in results[-1]["text"]
    assert "[tool_error]" in results[-1]["text"]


@pytest.mark.slow
def test_other_sessions_are_answered_while_a_reply_is_worked_through(
    tmp_path: Path, data_dir: Path, workspace: Path
) -> None:
    config = tmp_path / "acpd.toml"
    config.write_text("[agent]\nmax_tool_calls_per_reply = 3000\n")
    script = busy_script(tmp_path / "s.json", 3000)
    seen: list[dict[str, Any]] = []
    with raw_daemon(data_dir, "--model", f"scripted:{script}", "--config", str(config),
                    env=daemon_env(tmp_path)) as peer:
        peer.initialize()
        busy, other = new_session(peer, workspace), new_session(peer, workspace)
        prompt_id = send(peer, "session/prompt", {"sessionId": busy,
                                                   "prompt": [{"type": "text", "text": "go"}]})
        while not any(update_kind(m) == "tool_call" for m in seen):
            message = peer.recv()
            assert message is not None
            seen.append(message)
        answered = []
        for method, params in [("session/set_mode", {"sessionId": other, "modeId": "auto"}),
                               ("session/list", {}),
                               ("session/set_mode", {"sessionId": other, "modeId": "ask"})]:
            msg_id = send(peer, method, params)
            reply = read_until(peer, msg_id, seen)
            assert "result" in reply, reply
            assert not any(m.get("id") == prompt_id for m in seen), "busy turn ended first"
            answered.append(len(seen))
        final = read_until(peer, prompt_id, seen)
    # (the 3000 results fill the context budget: the loop stops there, as it should)
    assert final["result"]["stopReason"] in ("end_turn", "max_tokens")
    cards_after = [m for m in seen[answered[-1]:] if update_kind(m) == "tool_call"]
    assert cards_after, "the busy session was still working when the others were answered"
    assert len([m for m in seen if update_kind(m) == "tool_call"]) == 3000


def send(peer: RawPeer, method: str, params: Any) -> int:
    peer._next_id += 1
    peer.send({"jsonrpc": "2.0", "id": peer._next_id, "method": method, "params": params})
    return peer._next_id


def read_until(peer: RawPeer, msg_id: int, seen: list[dict[str, Any]]) -> dict[str, Any]:
    while True:
        message = peer.recv()
        if message is None:
            raise EOFError("the daemon closed its stdout")
        seen.append(message)
        if message.get("id") == msg_id and "method" not in message:
            return message


def update_kind(message: dict[str, Any]) -> str | None:
    if message.get("method") != "session/update":
        return None
    return str(json.loads(json.dumps(message["params"]["update"]))["sessionUpdate"])
