"""The version-aware validator: after acpd answers `initialize` with 2, the log is held to
schema/v2, where v1's shapes are errors (and before it, or after a v1 answer, to schema/v1)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.e2e.schema import load_schema, schema_for, validate_log

SID = "sess_1"


def initialize(version: int) -> list[tuple[str, dict[str, Any]]]:
    result: dict[str, Any] = {"protocolVersion": version}
    if version == 2:
        result["info"] = {"name": "acpd", "version": "1"}
    return [
        ("C", {"jsonrpc": "2.0", "id": 0, "method": "initialize",
               "params": {"protocolVersion": version}}),
        ("A", {"jsonrpc": "2.0", "id": 0, "result": result}),
    ]


def update(body: dict[str, Any]) -> tuple[str, dict[str, Any]]:
    params = {"sessionId": SID, "update": body}
    return ("A", {"jsonrpc": "2.0", "method": "session/update", "params": params})


def problems(tmp_path: Path, *lines: tuple[str, dict[str, Any]]) -> list[str]:
    path = tmp_path / "wire.log"
    path.write_text("".join(f"{tag} {json.dumps(msg)}\n" for tag, msg in lines))
    return validate_log(path).problems


def test_the_v2_schema_maps_its_own_methods_and_kinds() -> None:
    v2 = schema_for(2)
    assert v2.version == 2 and v2 is not load_schema()
    assert v2.notifications["session/update"] == "UpdateSessionNotification"
    assert v2.agent_results["session/prompt"] == "PromptResponse"
    assert "session/load" not in v2.agent_results
    assert "fs/read_text_file" not in v2.client_requests
    assert {"tool_call_update", "state_update", "plan_update", "terminal_output_chunk"} <= set(
        v2.update_branches)
    assert "tool_call" not in v2.update_branches and "plan" not in v2.update_branches
    assert schema_for(7) is load_schema() and schema_for(1) is load_schema()


def test_valid_v2_traffic_passes(tmp_path: Path) -> None:
    assert problems(
        tmp_path, *initialize(2),
        update({"sessionUpdate": "tool_call_update", "toolCallId": "t1", "title": "x"}),
        update({"sessionUpdate": "agent_message_chunk", "messageId": "m1",
                "content": {"type": "text", "text": "hi"}}),
        update({"sessionUpdate": "state_update", "state": "idle", "stopReason": "end_turn"}),
        ("C", {"jsonrpc": "2.0", "id": 5, "method": "session/prompt",
               "params": {"sessionId": SID, "prompt": [{"type": "text", "text": "x"}]}}),
        ("A", {"jsonrpc": "2.0", "id": 5, "result": {"messageId": "m0"}}),
    ) == []


@pytest.mark.parametrize(
    ("line", "expected"),
    [
        pytest.param(update({"sessionUpdate": "tool_call", "toolCallId": "t", "title": "x"}),
                     "unknown sessionUpdate kind 'tool_call'", id="v1-tool-call"),
        pytest.param(update({"sessionUpdate": "agent_message_chunk",
                             "content": {"type": "text", "text": "hi"}}),
                     "messageId", id="chunk-without-message-id"),
        pytest.param(("A", {"jsonrpc": "2.0", "id": 3, "method": "fs/read_text_file",
                            "params": {"sessionId": SID, "path": "/x"}}),
                     "not an agent-to-client method of ACP v2", id="fs-request"),
        pytest.param(("A", {"jsonrpc": "2.0", "id": 4, "method": "session/request_permission",
                            "params": {"sessionId": SID, "toolCall": {"toolCallId": "t"},
                                       "options": []}}),
                     "title", id="v1-permission"),
    ],
)
def test_v1_shapes_on_a_v2_connection_are_problems(
    tmp_path: Path, line: tuple[str, dict[str, Any]], expected: str
) -> None:
    found = problems(tmp_path, *initialize(2), line)
    assert found and expected in "\n".join(found), found


def test_a_v1_answer_keeps_the_log_on_v1(tmp_path: Path) -> None:
    assert problems(tmp_path, *initialize(1), update(
        {"sessionUpdate": "tool_call", "toolCallId": "t", "title": "x"})) == []
    found = problems(tmp_path, *initialize(1), update(
        {"sessionUpdate": "state_update", "state": "idle"}))
    assert found and "state_update" in found[0]
