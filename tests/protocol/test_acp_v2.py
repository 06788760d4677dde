"""The v1-to-v2 rendering (protocol/acp_v2.py), each output checked against schema/v2."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest

from acpd.protocol import acp_v2, acp_v2_diff
from tests.e2e.schema import schema_for

V2 = schema_for(2)


def valid(ref: str, instance: Any) -> None:
    errors = list(V2.validator(f"#/$defs/{ref}").iter_errors(instance))
    assert not errors, [e.message for e in errors]


def renderer(cwd: str | None = "/ws") -> acp_v2.V2Renderer:
    return acp_v2.V2Renderer(lambda _sid: cwd, lambda _sid: [
        {"id": "mode", "name": "Mode", "type": "select", "currentValue": "ask",
         "options": [{"value": "ask", "name": "Ask"}]},
    ])


def note(update: dict[str, Any], session: str = "s1") -> tuple[str, Any]:
    return ("session/update", {"sessionId": session, "update": update})


def rendered(r: acp_v2.V2Renderer, update: dict[str, Any], session: str = "s1") -> list[Any]:
    out = r.notification(*note(update, session))
    for method, params in out:
        assert method == "session/update"
        valid("UpdateSessionNotification", params)
    return [params["update"] for _m, params in out]


def chunk(kind: str, text: str, **extra: Any) -> dict[str, Any]:
    return {"sessionUpdate": kind, "content": {"type": "text", "text": text}, **extra}


def test_chunks_of_one_message_share_an_id_until_something_else_is_sent() -> None:
    r = renderer()
    first = rendered(r, chunk("agent_message_chunk", "a"))[0]["messageId"]
    assert rendered(r, chunk("agent_message_chunk", "b"))[0]["messageId"] == first
    thought = rendered(r, chunk("agent_thought_chunk", "hm"))[0]["messageId"]
    # A thought interleaves; it does not end the message.
    assert rendered(r, chunk("agent_message_chunk", "c"))[0]["messageId"] == first
    rendered(r, {"sessionUpdate": "tool_call", "toolCallId": "t", "title": "x"})
    after = rendered(r, chunk("agent_message_chunk", "d"))[0]["messageId"]
    assert after not in (first, thought)
    # A replay puts turns back to back: the user's chunk ends the agent's message.
    user = rendered(r, chunk("user_message_chunk", "next"))[0]["messageId"]
    again = rendered(r, chunk("agent_message_chunk", "d2"))[0]["messageId"]
    assert again not in (after, user)
    assert rendered(r, chunk("user_message_chunk", "more"))[0]["messageId"] != user
    after = again
    # Sessions do not share messages; an id the core set is kept.
    assert rendered(r, chunk("agent_message_chunk", "e"), "s2")[0]["messageId"] != after
    kept = rendered(r, chunk("agent_message_chunk", "f", messageId="m-core"))[0]
    assert kept["messageId"] == "m-core"
    assert rendered(r, chunk("agent_message_chunk", "g"))[0]["messageId"] == "m-core"


def test_tool_calls_become_upserts_with_v2_diffs_and_locations() -> None:
    r = renderer()
    (card,) = rendered(r, {
        "sessionUpdate": "tool_call", "toolCallId": "t", "title": "Write a.txt", "kind": "edit",
        "status": "pending", "locations": [{"path": "/ws/a.txt", "line": 0}],
        "content": [{"type": "diff", "path": "/ws/a.txt", "oldText": "x\n", "newText": "y\n"},
                    {"type": "terminal", "terminalId": "term-1"}],
        "rawInput": {"path": "a.txt"},
    })
    assert card["sessionUpdate"] == "tool_call_update"
    assert card["locations"] == [{"path": "/ws/a.txt"}]
    diff, terminal = card["content"]
    assert diff["changes"] == [{"operation": "modify", "path": "/ws/a.txt", "fileType": "text"}]
    assert diff["patch"]["format"] == "git_patch" and "-x\n+y\n" in diff["patch"]["text"]
    assert terminal == {"type": "terminal", "terminalId": "term-1"}


def test_unchanged_or_huge_diffs_go_without_a_patch() -> None:
    same = acp_v2_diff.diff_content({"path": "/a", "oldText": "x", "newText": "x"})
    assert "patch" not in same
    big = "z" * acp_v2_diff.PATCH_BUDGET
    huge = acp_v2_diff.diff_content({"path": "/a", "oldText": big, "newText": big + "!"})
    assert "patch" not in huge and huge["changes"][0]["operation"] == "modify"
    valid("Diff", {k: v for k, v in huge.items() if k != "type"})
    lines = "\n" * acp_v2_diff.PATCH_LINES
    many = acp_v2_diff.diff_content({"path": "/a", "oldText": lines, "newText": lines + "!"})
    assert "patch" not in many


@pytest.mark.skipif(shutil.which("git") is None, reason="git is not installed")
@pytest.mark.parametrize(("old", "new"), [
    ("a\nb\nc\n", "a\nB\nc\nd"), (None, "new\nfile\n"), ("no newline", "no newline\n"),
    ("x\n" * 50, "x\n" * 20 + "y\n" + "x\n" * 29), ("héllo\n", "hello ✓\n"),
])
def test_git_applies_the_patch(tmp_path: Path, old: str | None, new: str) -> None:
    target = tmp_path / "f.txt"
    if old is not None:
        target.write_text(old)
    patch = tmp_path / "p.diff"
    patch.write_text(acp_v2_diff.git_patch(str(target), old, new))
    subprocess.run(["git", "apply", "-p0", "--unsafe-paths", str(patch)], cwd=tmp_path,
                   check=True, capture_output=True)
    assert target.read_text() == new


def test_plans_modes_commands_and_options_take_their_v2_shapes() -> None:
    r = renderer()
    (plan,) = rendered(r, {"sessionUpdate": "plan", "entries": [
        {"content": "x", "priority": "high", "status": "pending"}]})
    assert plan["sessionUpdate"] == "plan_update" and plan["plan"]["planId"] == acp_v2.PLAN_ID
    (mode,) = rendered(r, {"sessionUpdate": "current_mode_update", "currentModeId": "ask"})
    assert mode["sessionUpdate"] == "config_option_update"
    assert mode["configOptions"][0]["configId"] == "mode"
    assert acp_v2.V2Renderer().notification(
        *note({"sessionUpdate": "current_mode_update", "currentModeId": "ask"})) == []
    (commands,) = rendered(r, {"sessionUpdate": "available_commands_update", "availableCommands": [
        {"name": "undo", "description": "Undo", "input": {"hint": "steps"}},
        {"name": "clear", "description": "Clear"},
    ]})
    assert [c["type"] for c in commands["availableCommands"]] == ["command", "command"]
    assert commands["availableCommands"][0]["input"] == {"type": "text", "hint": "steps"}
    # v2-native updates pass untouched.
    for native in ({"sessionUpdate": "terminal_output_chunk", "terminalId": "t", "data": "aGk="},
                   {"sessionUpdate": "terminal_update", "terminalId": "t", "cwd": "/ws"},
                   {"sessionUpdate": "usage_update", "used": 1, "size": 2},
                   {"sessionUpdate": "session_info_update", "title": "x"}):
        assert rendered(r, native) == [native]


def test_a_shell_permission_has_a_command_subject_and_brackets_the_wait() -> None:
    r = renderer()
    call = {"toolCallId": "t", "title": "rm -rf build", "kind": "execute", "status": "pending",
            "rawInput": {"command": "rm -rf build"}}
    options = [{"optionId": "allow_once", "name": "Allow once", "kind": "allow_once"}]
    first, params = r.request("session/request_permission",
                              {"sessionId": "s1", "toolCall": call, "options": options})
    assert [p["update"]["state"] for _m, p in first] == ["requires_action"]
    valid("RequestPermissionRequest", params)
    assert params["subject"] == {"type": "command", "command": "rm -rf build", "cwd": "/ws",
                                 "toolCallId": "t"}
    # The turn goes on: `running` first, once.
    out = rendered(r, {"sessionUpdate": "tool_call_update", "toolCallId": "t",
                       "status": "in_progress"})
    assert [u["sessionUpdate"] for u in out] == ["state_update", "tool_call_update"]
    assert out[0]["state"] == "running"
    assert len(rendered(r, {"sessionUpdate": "tool_call_update", "toolCallId": "t"})) == 1


def test_other_permissions_carry_the_tool_call_and_an_unknown_cwd_falls_back() -> None:
    edit = {"toolCallId": "t", "title": "Edit a", "kind": "edit",
            "content": [{"type": "diff", "path": "/ws/a", "oldText": "1", "newText": "2"}]}
    _first, params = renderer().request(
        "session/request_permission", {"sessionId": "s1", "toolCall": edit, "options": []})
    assert params["subject"]["type"] == "tool_call"
    assert params["subject"]["toolCall"]["content"][0]["changes"][0]["path"] == "/ws/a"
    shell = {"toolCallId": "t", "kind": "execute", "rawInput": {"command": "ls"}}
    _first, params = renderer(cwd=None).request(
        "session/request_permission", {"sessionId": "gone", "toolCall": shell, "options": []})
    assert params["subject"]["type"] == "tool_call" and params["title"]


@pytest.mark.parametrize("method", [
    "fs/read_text_file", "fs/write_text_file", "terminal/create", "terminal/output",
    "terminal/wait_for_exit", "terminal/kill", "terminal/release", "terminal/anything",
])
def test_the_client_file_system_and_terminal_are_refused(method: str) -> None:
    with pytest.raises(LookupError):
        renderer().request(method, {"sessionId": "s1"})


def test_initialize_result_is_v2_and_requests_map_to_v1() -> None:
    v1 = {
        "protocolVersion": 1,
        "agentCapabilities": {
            "loadSession": True,
            "promptCapabilities": {"image": False, "audio": False, "embeddedContext": True},
            "mcpCapabilities": {"http": True, "sse": False},
            "sessionCapabilities": {"list": {}, "delete": {}, "resume": {}, "close": {}},
        },
        "authMethods": [], "agentInfo": {"name": "acpd", "version": "1"}, "_meta": {"x": 1},
    }
    result = acp_v2.initialize_result(v1)
    valid("InitializeResponse", result)
    assert result["capabilities"]["session"] == {
        "prompt": {"embeddedContext": {}}, "mcp": {"stdio": {}, "http": {}}, "delete": {},
    }
    assert acp_v2.resume_replays({"replayFrom": {"type": "start"}}) is True
    assert acp_v2.resume_replays({"replayFrom": None}) is False
    with pytest.raises(ValueError):
        acp_v2.resume_replays({"replayFrom": {"type": "_from_message", "messageId": "m"}})
    assert acp_v2.config_value_to_v1({"type": "id", "value": "auto", "configId": "mode"}) == {
        "value": "auto", "configId": "mode"}
    assert acp_v2.config_value_to_v1({"type": "boolean", "value": True})["type"] == "boolean"
    servers = acp_v2.session_params_to_v1({"cwd": "/w", "mcpServers": [
        {"type": "stdio", "name": "a", "command": "/bin/a"}, {"type": "http", "name": "b",
                                                              "url": "https://b"}]})
    assert servers["mcpServers"] == [
        {"args": [], "env": [], "name": "a", "command": "/bin/a"},
        {"headers": [], "type": "http", "name": "b", "url": "https://b"},
    ]
    assert acp_v2.session_params_to_v1({"cwd": "/w"})["mcpServers"] == []


def test_large_diffs_are_marked_for_a_worker_thread() -> None:
    small = {"type": "diff", "path": "/a", "oldText": "x\n" * 10, "newText": "y\n" * 10}
    tall = {**small, "newText": "y\n" * (acp_v2_diff.INLINE_LINES + 1)}
    wide = {**small, "newText": "y" * (acp_v2_diff.INLINE_CHARS + 1)}
    assert not acp_v2_diff.heavy_diff(small)
    assert acp_v2_diff.heavy_diff(tall) and acp_v2_diff.heavy_diff(wide)
    assert not acp_v2_diff.heavy_diff(acp_v2_diff.diff_content(tall))  # already v2
    assert not acp_v2_diff.heavy_diff({"type": "content", "content": {"type": "text", "text": "x"}})


@pytest.mark.anyio
async def test_the_off_loop_renderer_renders_exactly_what_the_inline_one_does() -> None:
    from acpd.daemon.v2face import OffLoopDiffs

    old = "".join(f"line {i}\n" for i in range(acp_v2_diff.INLINE_LINES))
    diff = {"type": "diff", "path": "/ws/big", "oldText": old, "newText": old + "end\n"}
    card = {"sessionUpdate": "tool_call_update", "toolCallId": "t", "content": [diff]}
    inline = renderer().notification(*note(card))
    threaded = await OffLoopDiffs(renderer()).notification(*note(card))
    assert threaded == inline and "+end\n" in inline[0][1]["update"]["content"][0]["patch"]["text"]
    call = {"toolCallId": "t", "title": "Write big", "kind": "edit", "content": [diff]}
    params = {"sessionId": "s1", "toolCall": call, "options": []}
    _first, sync_params = renderer().request("session/request_permission", params)
    _first, async_params = await OffLoopDiffs(renderer()).request(
        "session/request_permission", params)
    assert async_params == sync_params


def test_batches_split_into_their_messages() -> None:
    from acpd.protocol import jsonrpc

    assert acp_v2.batch_messages(b'{"jsonrpc": "2.0", "method": "x"}') is None
    assert acp_v2.batch_messages(b"[1, 2") is None  # a parse error, answered as one message
    (empty,) = acp_v2.batch_messages(b" []") or []
    assert isinstance(empty, jsonrpc.Invalid) and empty.id is None
    messages = acp_v2.batch_messages(
        b'[{"jsonrpc": "2.0", "id": 1, "method": "a"}, {"jsonrpc": "2.0", "method": "b"},'
        b' [], "x", {"jsonrpc": "2.0", "id": 2, "result": {}}]'
    )
    assert messages is not None
    kinds = [type(m).__name__ for m in messages]
    assert kinds == ["Request", "Notification", "Invalid", "Invalid", "Response"]
