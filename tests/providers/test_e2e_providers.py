"""`acpd serve` with a real provider, against the fake model server: a tool round, then text."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.helpers.daemon import RawPeer, raw_daemon
from tests.providers.fake_server import FakeLLMServer, Reply

pytestmark = pytest.mark.slow


def run_prompt(peer: RawPeer, workspace: Path) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    assert peer.initialize()["result"]["protocolVersion"] == 1
    new = peer.request("session/new", {"cwd": str(workspace), "mcpServers": []})
    session_id = new["result"]["sessionId"]
    prompt = {"sessionId": session_id, "prompt": [{"type": "text", "text": "what is here?"}]}
    peer.send({"jsonrpc": "2.0", "id": 1, "method": "session/prompt", "params": prompt})
    updates: list[dict[str, Any]] = []
    while True:
        msg = peer.recv()
        assert msg is not None, "the daemon closed stdout"
        if msg.get("method") == "session/update":
            updates.append(msg["params"]["update"])
        elif msg.get("id") == 1 and "method" not in msg:
            return msg, updates


def check_tool_round(updates: list[dict[str, Any]], final_text: str) -> None:
    kinds = [u["sessionUpdate"] for u in updates]
    assert "tool_call" in kinds and "tool_call_update" in kinds
    start = next(u for u in updates if u["sessionUpdate"] == "tool_call")
    assert start["kind"] == "read" and start["rawInput"] == {"path": "."}
    done = [u for u in updates
            if u["sessionUpdate"] == "tool_call_update" and u.get("status") == "completed"]
    calls = [u for u in updates if u["sessionUpdate"].startswith("tool_call")]
    assert [u["toolCallId"] for u in done] == [start["toolCallId"]], calls
    text = "".join(u["content"]["text"] for u in updates
                   if u["sessionUpdate"] == "agent_message_chunk")
    assert text.endswith(final_text)
    # The final answer comes after the tool finished.
    last_text = len(kinds) - 1 - kinds[::-1].index("agent_message_chunk")
    assert last_text > kinds.index("tool_call_update")


def test_openai_provider_end_to_end(
    llm_server: FakeLLMServer, data_dir: Path, workspace: Path, tmp_path: Path
) -> None:
    llm_server.queue(Reply(sse="openai_tool_call.sse"), Reply(sse="openai_text.sse"))
    config = tmp_path / "acpd.toml"
    config.write_text(f'[providers.openai]\nbase_url = "{llm_server.url}/v1"\nmax_retries = 0\n')
    env = {"OPENAI_API_KEY": "sk-e2e-key"}
    with raw_daemon(data_dir, "--model", "openai:test-model", "--config", str(config),
                    env=env) as peer:
        reply, updates = run_prompt(peer, workspace)
        assert reply["result"] == {"stopReason": "end_turn"}
        assert peer.close() == 0
    check_tool_round(updates, "The workspace holds hello.txt and src/ — café ☕.")
    first, second = llm_server.requests
    assert first.path == second.path == "/v1/chat/completions"
    assert first.headers["authorization"] == "Bearer sk-e2e-key"
    assert first.json["model"] == "test-model"
    assert "list_directory" in [t["function"]["name"] for t in first.json["tools"]]
    messages = second.json["messages"]
    assert messages[0]["role"] == "system"
    assert messages[1] == {"role": "user", "content": "what is here?"}
    assert messages[2]["role"] == "assistant"
    assert messages[2]["tool_calls"] == [{
        "id": "call_Xq7bN2pLk4T9sVwR1mC8dE0f", "type": "function",
        "function": {"name": "list_directory", "arguments": '{"path":"."}'}}]
    assert messages[3]["role"] == "tool"
    assert messages[3]["tool_call_id"] == "call_Xq7bN2pLk4T9sVwR1mC8dE0f"
    assert "hello.txt" in messages[3]["content"] and "src" in messages[3]["content"]


def test_anthropic_provider_end_to_end(
    llm_server: FakeLLMServer, data_dir: Path, workspace: Path, tmp_path: Path
) -> None:
    llm_server.queue(Reply(sse="anthropic_text_tool_thinking.sse"), Reply(sse="anthropic_text.sse"))
    config = tmp_path / "acpd.toml"
    config.write_text(f'[providers.anthropic]\nbase_url = "{llm_server.url}"\nmax_retries = 0\n')
    with raw_daemon(data_dir, "--model", "anthropic:claude-test", "--config", str(config),
                    env={"ANTHROPIC_API_KEY": "test"}) as peer:
        reply, updates = run_prompt(peer, workspace)
        assert reply["result"] == {"stopReason": "end_turn"}
        assert peer.close() == 0
    check_tool_round(updates, "The workspace holds hello.txt and src/.")
    thoughts = "".join(u["content"]["text"] for u in updates
                       if u["sessionUpdate"] == "agent_thought_chunk")
    assert thoughts.startswith("The user wants to know what is in the workspace.")
    first, second = llm_server.requests
    assert first.path == second.path == "/v1/messages"
    assert first.headers["x-api-key"] == "test"
    assert first.headers["anthropic-version"] == "2023-06-01"
    assert first.json["model"] == "claude-test" and "system" in first.json
    messages = second.json["messages"]
    assert messages[0] == {"role": "user", "content": [{"type": "text", "text": "what is here?"}]}
    assert messages[1] == {"role": "assistant", "content": [
        {"type": "text", "text": "I'll look at the workspace first."},
        {"type": "tool_use", "id": "toolu_01T1x1fJ34qAmk2tNTrN7Up6", "name": "list_directory",
         "input": {"path": "."}},
    ]}
    [result] = messages[2]["content"]
    assert messages[2]["role"] == "user" and result["type"] == "tool_result"
    assert result["tool_use_id"] == "toolu_01T1x1fJ34qAmk2tNTrN7Up6"
    assert "hello.txt" in result["content"] and "is_error" not in result
