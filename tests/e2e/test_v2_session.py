"""The ACP v2 draft end to end, over a raw JSON-RPC client, every message checked against
schema/v2: initialize, session/new, a prompt whose turn reads, writes and runs bash (acpd
does all three itself: no `fs/*` or `terminal/*` ever reaches the client), a permission
with a `command` subject, and resume with and without replay."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.e2e.harness import write_script
from tests.e2e.v2_client import V2_CLIENT_INFO, RawClient, RpcFailure, raw_acpd

pytestmark = pytest.mark.anyio

COMMAND = "python3 -c 'print(40 + 2)' > answer.txt"
"""Asks under the default policy (interpreter inline code), so a permission comes first."""


def turns() -> list[dict[str, Any]]:
    return [
        {"tool_calls": [{"name": "read", "arguments": {"path": "hello.txt"}}]},
        {"tool_calls": [{"name": "write",
                         "arguments": {"path": "notes.txt", "content": "one\ntwo\n"}}]},
        {"tool_calls": [{"name": "bash", "arguments": {"command": COMMAND}}]},
        {"text": "All three done."},
    ]


async def initialize(client: RawClient, **extra: Any) -> dict[str, Any]:
    result: dict[str, Any] = await client.request("initialize", {
        "protocolVersion": 2, "info": V2_CLIENT_INFO, "capabilities": {}, **extra,
    })
    return result


async def test_a_v2_session_reads_writes_and_runs_itself_and_resumes(
    tmp_path: Path, data_dir: Path, workspace: Path
) -> None:
    script = write_script(tmp_path / "s.json", turns())
    async with raw_acpd(tmp_path, data_dir=data_dir, script=script) as client:
        # A client that still claims v1's fs and terminal gets neither used on v2.
        init = await initialize(client, clientCapabilities={
            "fs": {"readTextFile": True, "writeTextFile": True}, "terminal": True,
        })
        assert init["protocolVersion"] == 2
        assert init["info"]["name"] == "acpd"
        session_caps = init["capabilities"]["session"]
        assert session_caps["prompt"]["embeddedContext"] == {}
        assert all(marker == {} for marker in session_caps["prompt"].values())
        assert "stdio" in session_caps["mcp"] and "delete" in session_caps
        assert "agentCapabilities" not in init and "loadSession" not in str(init)

        new = await client.request("session/new", {"cwd": str(workspace)})
        session_id = new["sessionId"]
        assert "modes" not in new
        assert {o["configId"] for o in new["configOptions"]} >= {"mode", "model"}

        answer = await client.request("session/prompt", {
            "sessionId": session_id, "prompt": [{"type": "text", "text": "do the three"}],
        })
        message_id = answer["messageId"]
        idle = await client.wait_idle(session_id)
        assert idle["stopReason"] == "end_turn"

        # Accepted before the turn ran: the echo, then running, then the answer.
        (echo,) = client.kinds("user_message")
        assert echo["messageId"] == message_id
        assert echo["content"] == [{"type": "text", "text": "do the three"}]
        states = [u["state"] for u in client.kinds("state_update")]
        assert states[0] == "running" and states[-1] == "idle"
        assert "requires_action" in states

        # acpd read, wrote and ran by itself.
        assert client.requests("fs/read_text_file") == []
        assert [r for r in client.requests() if r["method"].startswith(("fs/", "terminal/"))] == []
        assert (workspace / "notes.txt").read_text() == "one\ntwo\n"
        assert (workspace / "answer.txt").read_text().strip() == "42"

        # v2 cards: no `tool_call`, upserts only; diffs as changes + git patch.
        assert client.kinds("tool_call") == []
        cards = client.kinds("tool_call_update")
        ids = list(dict.fromkeys(c["toolCallId"] for c in cards))
        assert len(ids) == 3
        finals = {c["toolCallId"]: c for c in cards if c.get("status") == "completed"}
        assert set(finals) == set(ids)
        notes = str(workspace / "notes.txt")
        diffs = [item for c in cards for item in c.get("content") or []
                 if item["type"] == "diff" and item["changes"][0]["path"] == notes]
        assert diffs, "the write shows a diff"
        assert diffs[-1]["changes"][0]["operation"] == "add"
        patch = diffs[-1]["patch"]["text"]
        assert patch.startswith(f"diff --git {workspace / 'notes.txt'}")
        assert "+one\n+two\n" in patch

        # The bash permission names the command, the cwd and the card it belongs to.
        asked = client.requests("session/request_permission")
        subjects = [r["params"].get("subject") or {} for r in asked]
        (command,) = [s for s in subjects if s.get("type") == "command"]
        assert command["command"] == COMMAND and command["cwd"] == str(workspace)
        assert command["toolCallId"] in ids
        assert all(r["params"]["title"] for r in asked)
        assert any(s.get("type") == "tool_call" for s in subjects), "the write asks too"

        # Every chunk carries a messageId; the agent's text is one message.
        chunks = client.kinds("agent_message_chunk")
        assert chunks and all(c["messageId"] for c in chunks)
        assert "All three done." in "".join(c["content"]["text"] for c in chunks)

        # A second prompt while nothing runs is accepted; v1's methods are gone.
        for gone in ("session/load", "session/set_mode", "authenticate"):
            with pytest.raises(RpcFailure) as failure:
                await client.request(gone, {"sessionId": session_id, "cwd": str(workspace)})
            assert failure.value.code == -32601

    # A second connection: resume with replay (v1's load), then without.
    async with raw_acpd(tmp_path, data_dir=data_dir, script=script, name="v2b") as client:
        await initialize(client)
        resumed = await client.request("session/resume", {
            "sessionId": session_id, "cwd": str(workspace), "replayFrom": {"type": "start"},
        })
        assert "modes" not in resumed and resumed["configOptions"]
        replayed = client.kinds("tool_call_update")
        assert {c["toolCallId"] for c in replayed} == set(ids)
        assert client.kinds("state_update")[-1]["state"] == "idle"
        assert all(c["messageId"] for c in client.kinds("user_message_chunk",
                                                         "agent_message_chunk"))
        before = len(client.updates)
        await client.request("session/resume", {"sessionId": session_id, "cwd": str(workspace)})
        again = client.updates[before:]
        assert [u["sessionUpdate"] for u in again if u["sessionUpdate"] == "tool_call_update"] == []
        assert any(u["sessionUpdate"] == "state_update" for u in again)
