"""The validator itself: it must reject what breaks the schema, and say where.

Without these, a validator that accepted everything would make every e2e test pass.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.e2e.schema import load_schema, validate_log

SID = "sess_1"


def log_of(path: Path, *lines: tuple[str, dict[str, Any]]) -> Path:
    path.write_text("".join(f"{tag} {json.dumps(msg)}\n" for tag, msg in lines))
    return path


def update(body: dict[str, Any]) -> tuple[str, dict[str, Any]]:
    params = {"sessionId": SID, "update": body}
    return ("A", {"jsonrpc": "2.0", "method": "session/update", "params": params})


def problems(tmp_path: Path, *lines: tuple[str, dict[str, Any]]) -> list[str]:
    return validate_log(log_of(tmp_path / "wire.log", *lines)).problems


def test_the_schema_maps_methods_and_update_kinds() -> None:
    schema = load_schema()
    assert schema.agent_results["session/new"] == "NewSessionResponse"
    assert schema.agent_results["session/prompt"] == "PromptResponse"
    assert schema.client_requests["terminal/create"] == "CreateTerminalRequest"
    assert schema.client_requests["session/request_permission"] == "RequestPermissionRequest"
    assert schema.notifications["session/update"] == "SessionNotification"
    assert {"tool_call", "tool_call_update", "plan", "usage_update"} <= set(schema.update_branches)


def test_valid_messages_pass(tmp_path: Path) -> None:
    assert problems(
        tmp_path,
        ("C", {"jsonrpc": "2.0", "id": 1, "method": "session/new", "params": {}}),
        ("A", {"jsonrpc": "2.0", "id": 1, "result": {"sessionId": SID}}),
        update({"sessionUpdate": "tool_call", "toolCallId": "t1", "title": "l", "kind": "read"}),
        update({"sessionUpdate": "usage_update", "used": 3, "size": 10}),
        ("A", {"jsonrpc": "2.0", "id": 9, "method": "terminal/release",
               "params": {"sessionId": SID, "terminalId": "x"}}),
        ("A", {"jsonrpc": "2.0", "id": None, "error": {"code": -32700, "message": "parse"}}),
    ) == []


@pytest.mark.parametrize(
    ("lines", "expected"),
    [
        pytest.param(
            [update({"sessionUpdate": "tool_call", "toolCallId": "t", "title": "x",
                     "kind": "exec"})],
            ["session/update tool_call", "$.kind"],
            id="bad-tool-kind",
        ),
        pytest.param(
            [update({"sessionUpdate": "usage_update", "used": -1, "size": 10})],
            ["session/update usage_update", "$.used"],
            id="negative-usage",
        ),
        pytest.param(
            [update({"sessionUpdate": "plan", "entries": [{"content": "a", "status": "done",
                                                             "priority": "high"}]})],
            ["session/update plan", "$.entries[0].status"],
            id="bad-plan-status",
        ),
        pytest.param(
            [update({"sessionUpdate": "telepathy"})],
            ["unknown sessionUpdate kind 'telepathy'"],
            id="unknown-update-kind",
        ),
        pytest.param(
            [("C", {"jsonrpc": "2.0", "id": 4, "method": "session/new", "params": {}}),
             ("A", {"jsonrpc": "2.0", "id": 4, "result": {"modes": None}})],
            ["result of session/new", "NewSessionResponse", "sessionId"],
            id="new-session-without-id",
        ),
        pytest.param(
            [("C", {"jsonrpc": "2.0", "id": "p", "method": "session/prompt", "params": {}}),
             ("A", {"jsonrpc": "2.0", "id": "p", "result": {"stopReason": "done"}})],
            ["result of session/prompt", "$.stopReason"],
            id="bad-stop-reason",
        ),
        pytest.param(
            [("A", {"jsonrpc": "2.0", "id": 1, "method": "fs/read_text_file",
                    "params": {"sessionId": SID}})],
            ["request fs/read_text_file params", "ReadTextFileRequest", "path"],
            id="read-without-path",
        ),
        pytest.param(
            [("A", {"jsonrpc": "2.0", "id": 2, "method": "terminal/create",
                    "params": {"sessionId": SID, "command": "bash", "outputByteLimit": -5}})],
            ["request terminal/create params", "$.outputByteLimit"],
            id="negative-output-limit",
        ),
        pytest.param(
            [("A", {"jsonrpc": "2.0", "id": 3, "method": "session/request_permission",
                    "params": {"sessionId": SID, "toolCall": {"toolCallId": "t"},
                               "options": [{"optionId": "a", "name": "A", "kind": "sometimes"}]}})],
            ["request session/request_permission params", "$.options[0].kind"],
            id="bad-permission-kind",
        ),
        pytest.param(
            [("A", {"jsonrpc": "2.0", "id": 5, "error": {"code": -32603}})],
            ["error response", "/$defs/Error", "message"],
            id="error-without-message",
        ),
        pytest.param(
            [("A", {"jsonrpc": "2.0", "id": 6, "method": "editor/do_things", "params": {}})],
            ["request editor/do_things: not an agent-to-client method"],
            id="unknown-request",
        ),
        pytest.param(
            [("A", {"jsonrpc": "2.0", "id": 7, "result": {}})],
            ["which the client never sent"],
            id="result-to-nothing",
        ),
        pytest.param(
            [("A", {"jsonrpc": "1.0", "method": "session/update",
                    "params": {"sessionId": SID, "update": {"sessionUpdate": "plan",
                                                            "entries": []}}})],
            ["jsonrpc must be '2.0'"],
            id="wrong-jsonrpc",
        ),
    ],
)
def test_invalid_messages_are_named_with_their_schema_path(
    tmp_path: Path, lines: list[tuple[str, dict[str, Any]]], expected: list[str]
) -> None:
    found = problems(tmp_path, *lines)
    assert found, "the validator accepted an invalid message"
    joined = "\n".join(found)
    for fragment in expected:
        assert fragment in joined, f"{fragment!r} not in:\n{joined}"
    assert "schema path" in joined or "unknown" in joined or "never sent" in joined \
        or "jsonrpc" in joined or "not an agent-to-client" in joined


def test_non_json_and_unterminated_lines_are_reported(tmp_path: Path) -> None:
    path = tmp_path / "wire.log"
    path.write_bytes(b"A not json\nA! {\"jsonrpc\":\"2.0\"\n")
    found = validate_log(path).problems
    assert len(found) == 2
    assert "not a JSON object" in found[0] and "without a newline" in found[1]


# --- the ordering rules of tests/e2e/harness.py ----------------------------------------------

NEW = ("C", {"jsonrpc": "2.0", "id": 1, "method": "session/new", "params": {}})
CREATED = ("A", {"jsonrpc": "2.0", "id": 1, "result": {"sessionId": SID}})
PROMPT = ("C", {"jsonrpc": "2.0", "id": 2, "method": "session/prompt",
                "params": {"sessionId": SID, "prompt": []}})
ANSWERED = ("A", {"jsonrpc": "2.0", "id": 2, "result": {"stopReason": "end_turn"}})
CREATE = ("A", {"jsonrpc": "2.0", "id": 5, "method": "terminal/create",
                "params": {"sessionId": SID, "command": "bash"}})
TERMINAL = ("C", {"jsonrpc": "2.0", "id": 5, "result": {"terminalId": "T1"}})
RELEASE = ("A", {"jsonrpc": "2.0", "id": 6, "method": "terminal/release",
                 "params": {"sessionId": SID, "terminalId": "T1"}})


def card(status: str, *, terminal: bool = True) -> tuple[str, dict[str, Any]]:
    content = [{"type": "terminal", "terminalId": "T1"}] if terminal else []
    return update({"sessionUpdate": "tool_call_update", "toolCallId": "c1", "status": status,
                   "content": content})


def rules(tmp_path: Path, *lines: tuple[str, dict[str, Any]]) -> str | None:
    from tests.e2e.harness import assert_wire_rules
    from tests.e2e.schema import read_log

    try:
        assert_wire_rules(read_log(log_of(tmp_path / "rules.log", *lines)))
    except AssertionError as exc:
        return str(exc)
    return None


def test_a_correct_terminal_lifecycle_passes(tmp_path: Path) -> None:
    assert rules(tmp_path, NEW, CREATED, PROMPT, CREATE, TERMINAL, card("in_progress"),
                 card("completed"), RELEASE, ANSWERED) is None


@pytest.mark.parametrize(
    ("lines", "expected"),
    [
        pytest.param([NEW, update({"sessionUpdate": "plan", "entries": []}), CREATED],
                     "before the response that created it", id="update-before-new-response"),
        pytest.param([NEW, CREATED, PROMPT, ANSWERED,
                      update({"sessionUpdate": "agent_message_chunk",
                              "content": {"type": "text", "text": "late"}})],
                     "after its prompt was answered", id="late-turn-update"),
        pytest.param([NEW, CREATED, PROMPT, CREATE, TERMINAL, card("in_progress"), RELEASE,
                      card("completed"), ANSWERED],
                     "released before the final", id="release-before-final"),
        pytest.param([NEW, CREATED, PROMPT, CREATE, TERMINAL, card("completed"), RELEASE,
                      RELEASE, ANSWERED],
                     "released twice", id="double-release"),
        pytest.param([NEW, CREATED, PROMPT, CREATE, TERMINAL, card("completed"), ANSWERED],
                     "never released", id="never-released"),
        pytest.param([NEW, CREATED, PROMPT, CREATE, TERMINAL, RELEASE,
                      card("completed", terminal=False), ANSWERED],
                     "no tool call embedded it", id="released-unembedded"),
        pytest.param([NEW, CREATED, PROMPT, CREATE, TERMINAL, card("completed"), RELEASE,
                      card("completed"), ANSWERED],
                     "names terminal T1", id="named-after-release"),
    ],
)
def test_ordering_rules_catch_violations(
    tmp_path: Path, lines: list[tuple[str, dict[str, Any]]], expected: str
) -> None:
    failure = rules(tmp_path, *lines)
    assert failure is not None and expected in failure, failure
