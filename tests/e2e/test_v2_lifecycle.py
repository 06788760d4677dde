"""The v2 draft's prompt lifecycle and version negotiation, over a raw JSON-RPC client with
every message checked against the schema of the negotiated version.

- the prompt is acknowledged at once; a second prompt while the turn runs is refused before
  it is accepted; `session/cancel` ends the turn with an idle `cancelled` state;
- a permission answered `cancelled` ends the turn the same way, and the command never runs;
- `initialize` asking for 2 gets 2 on the early path and in the event loop alike; any other
  version gets v1, and the v1 answer and traffic stay v1 (the same scenario as the v2 session
  test, validated against schema/v1).
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest

from tests.e2e.harness import write_script
from tests.e2e.v2_client import V2_CLIENT_INFO, RawClient, RpcFailure, raw_acpd

pytestmark = pytest.mark.anyio


async def open_v2(client: RawClient, workspace: Path) -> str:
    init = await client.request("initialize", {
        "protocolVersion": 2, "info": V2_CLIENT_INFO, "capabilities": {},
    })
    assert init["protocolVersion"] == 2
    new = await client.request("session/new", {"cwd": str(workspace), "mcpServers": []})
    return str(new["sessionId"])


def prompt(session_id: str, value: str) -> dict[str, Any]:
    return {"sessionId": session_id, "prompt": [{"type": "text", "text": value}]}


async def test_cancel_ends_the_turn_idle_cancelled_and_a_busy_session_refuses_a_prompt(
    tmp_path: Path, data_dir: Path, workspace: Path
) -> None:
    plan = [{"content": "wait for the model", "status": "in_progress", "priority": "high"}]
    script = write_script(tmp_path / "s.json", [
        {"tool_calls": [{"name": "update_plan", "arguments": {"entries": plan}}]},
        {"delay": 60, "text": "too late"}, {"text": "fresh"},
    ])
    async with raw_acpd(tmp_path, data_dir=data_dir, script=script) as client:
        session_id = await open_v2(client, workspace)
        first = await client.request("session/prompt", prompt(session_id, "go"))
        assert first["messageId"]
        # The plan tool finished: the turn is now in its second, slow model call.
        await client.wait_for(lambda: any(
            u.get("status") == "completed" for u in client.kinds("tool_call_update")))
        (plan_update,) = client.kinds("plan_update")
        assert plan_update["plan"]["type"] == "items" and plan_update["plan"]["planId"]
        assert plan_update["plan"]["entries"][0]["content"] == "wait for the model"
        with pytest.raises(RpcFailure) as refused:
            await client.request("session/prompt", prompt(session_id, "me too"))
        assert refused.value.code == -32600
        # Refused before acceptance: no echo of it.
        assert [u["content"][0]["text"] for u in client.kinds("user_message")] == ["go"]

        await client.notify("session/cancel", {"sessionId": session_id})
        idle = await client.wait_idle(session_id)
        assert idle["stopReason"] == "cancelled"
        assert "too late" not in json.dumps(client.updates)

        second = await client.request("session/prompt", prompt(session_id, "again"))
        assert second["messageId"] != first["messageId"]
        assert (await client.wait_idle(session_id, 2))["stopReason"] == "end_turn"
        texts = [c["content"]["text"] for c in client.kinds("agent_message_chunk")]
        assert texts[-1] == "fresh"


async def test_a_cancelled_permission_ends_the_turn_and_nothing_runs(
    tmp_path: Path, data_dir: Path, workspace: Path
) -> None:
    command = "python3 -c 'print(1)' > ran.txt"
    script = write_script(tmp_path / "s.json", [
        {"tool_calls": [{"name": "bash", "arguments": {"command": command}}]},
        {"text": "never said"},
    ])
    async with raw_acpd(
        tmp_path, data_dir=data_dir, script=script, choose=lambda _params: None
    ) as client:
        session_id = await open_v2(client, workspace)
        await client.request("session/prompt", prompt(session_id, "run it"))
        idle = await client.wait_idle(session_id)
        assert idle["stopReason"] == "cancelled"
        (asked,) = client.requests("session/request_permission")
        assert asked["params"]["subject"]["type"] == "command"
        assert asked["params"]["subject"]["command"] == command
        states = [u["state"] for u in client.kinds("state_update")]
        # Waiting on the user, then (once the card is closed) the turn ends.
        assert states[:2] == ["running", "requires_action"] and states[-1] == "idle"
        assert not (workspace / "ran.txt").exists()


async def test_a_read_only_card_goes_without_permission_and_locations_are_absolute(
    tmp_path: Path, data_dir: Path, workspace: Path
) -> None:
    script = write_script(tmp_path / "s.json", [
        {"tool_calls": [{"name": "read", "arguments": {"path": "src/main.py"}}]},
        {"text": "read it"},
    ])
    async with raw_acpd(tmp_path, data_dir=data_dir, script=script) as client:
        session_id = await open_v2(client, workspace)
        await client.request("session/prompt", prompt(session_id, "read"))
        await client.wait_idle(session_id)
        assert client.requests() == []
        cards = client.kinds("tool_call_update")
        assert cards[0]["status"] == "pending" and cards[0]["title"]
        locations = [loc for c in cards for loc in c.get("locations") or []]
        assert locations and all(loc["path"].startswith("/") for loc in locations)


@pytest.mark.parametrize("early", [True, False], ids=["early-path", "event-loop"])
async def test_version_2_is_negotiated_on_both_initialize_paths(
    tmp_path: Path, data_dir: Path, workspace: Path, early: bool
) -> None:
    async with raw_acpd(tmp_path, data_dir=data_dir) as client:
        if not early:
            # Anything before `initialize` leaves it to the event loop's dispatcher.
            await client.notify("_acpd/hello", {})
        session_id = await open_v2(client, workspace)
        commands = await_commands(client, session_id)
        await client.wait_for(lambda: bool(commands()))
        for command in commands()[0]["availableCommands"]:
            assert command["type"] == "command"
            if "input" in command:
                assert command["input"]["type"] == "text"


def await_commands(client: RawClient, session_id: str) -> Any:
    return lambda: [u for u in client.kinds("available_commands_update")
                    if u["sessionId"] == session_id]


async def test_an_unknown_session_is_named_in_the_error(
    tmp_path: Path, data_dir: Path, workspace: Path
) -> None:
    async with raw_acpd(tmp_path, data_dir=data_dir) as client:
        await open_v2(client, workspace)
        for method, params in [
            ("session/prompt", prompt("sess_nope", "hi")),
            ("session/resume", {"sessionId": "sess_nope", "cwd": str(workspace)}),
            ("session/set_config_option", {"sessionId": "sess_nope", "configId": "mode",
                                           "type": "id", "value": "auto"}),
        ]:
            with pytest.raises(RpcFailure) as failure:
                await client.request(method, params)
            assert failure.value.code == -32002
            assert failure.value.error["data"] == {"sessionId": "sess_nope"}


@pytest.mark.parametrize("asked", [0, 1, 3, 65535])
async def test_any_other_version_gets_v1(
    tmp_path: Path, data_dir: Path, workspace: Path, asked: int
) -> None:
    async with raw_acpd(tmp_path, data_dir=data_dir, version=1) as client:
        init = await client.request("initialize", {"protocolVersion": asked})
        assert init["protocolVersion"] == 1
        assert init["agentCapabilities"]["loadSession"] is True
        new = await client.request("session/new", {"cwd": str(workspace), "mcpServers": []})
        assert "modes" in new and new["configOptions"][0]["id"] == "mode"


async def test_the_v2_scenario_over_v1_stays_v1(
    tmp_path: Path, data_dir: Path, workspace: Path
) -> None:
    """Read, write and bash run locally for a v1 client without fs/terminal; the wire is v1
    (tool_call first, v1 diffs, stopReason in the prompt answer, load replays)."""
    command = "python3 -c 'print(40 + 2)' > answer.txt"
    script = write_script(tmp_path / "s.json", [
        {"tool_calls": [{"name": "read", "arguments": {"path": "hello.txt"}}]},
        {"tool_calls": [{"name": "write",
                         "arguments": {"path": "notes.txt", "content": "one\n"}}]},
        {"tool_calls": [{"name": "bash", "arguments": {"command": command}}]},
        {"text": "All three done."},
    ])
    async with raw_acpd(tmp_path, data_dir=data_dir, script=script, version=1) as client:
        init = await client.request("initialize", {"protocolVersion": 1,
                                                   "clientCapabilities": {}})
        assert init["protocolVersion"] == 1
        new = await client.request("session/new", {"cwd": str(workspace), "mcpServers": []})
        session_id = new["sessionId"]
        answer = await client.request("session/prompt", prompt(session_id, "do the three"))
        assert answer == {"stopReason": "end_turn"}
        assert client.kinds("state_update", "user_message", "plan_update") == []
        assert len(client.kinds("tool_call")) == 3
        asked = client.requests("session/request_permission")
        assert asked and all("toolCall" in r["params"] and "subject" not in r["params"]
                             for r in asked)
        diffs = [i for u in client.kinds("tool_call", "tool_call_update")
                 for i in u.get("content") or [] if i["type"] == "diff"]
        assert diffs and all("newText" in d and "changes" not in d for d in diffs)
        assert (workspace / "answer.txt").read_text().strip() == "42"
        before = len(client.updates)
        await client.request("session/load", {"sessionId": session_id, "cwd": str(workspace),
                                              "mcpServers": []})
        assert len([u for u in client.updates[before:]
                    if u["sessionUpdate"] == "tool_call"]) == 3


async def test_a_v2_client_that_stops_reading_mid_turn_does_not_wedge_shutdown(
    tmp_path: Path, data_dir: Path, workspace: Path
) -> None:
    """Stdin closes while a v2 turn (run after its answer) is in its slow model call: the
    daemon still ends, and what it wrote is valid v2."""
    script = write_script(tmp_path / "s.json", [{"delay": 60, "text": "too late"}])
    async with raw_acpd(tmp_path, data_dir=data_dir, script=script) as client:
        session_id = await open_v2(client, workspace)
        await client.request("session/prompt", prompt(session_id, "go"))
        await client.wait_for(lambda: any(
            u.get("state") == "running" for u in client.kinds("state_update")))
        await asyncio.sleep(0)  # the context manager closes stdin and waits for the exit


async def test_a_large_edit_gets_its_patch_made_off_the_loop_and_git_applies_it(
    tmp_path: Path, data_dir: Path, workspace: Path
) -> None:
    import subprocess

    old = "".join(f"line {i}\n" for i in range(600))
    new = old.replace("line 10\n", "line ten\n").replace("line 500\n", "")
    (workspace / "big.txt").write_text(old)
    script = write_script(tmp_path / "s.json", [
        {"tool_calls": [{"name": "write", "arguments": {"path": "big.txt", "content": new}}]},
        {"text": "rewrote it"},
    ])
    async with raw_acpd(tmp_path, data_dir=data_dir, script=script) as client:
        session_id = await open_v2(client, workspace)
        await client.request("session/prompt", prompt(session_id, "rewrite"))
        assert (await client.wait_idle(session_id))["stopReason"] == "end_turn"
    diffs = [item for u in client.kinds("tool_call_update") for item in u.get("content") or []
             if item["type"] == "diff"]
    assert diffs and diffs[-1]["changes"][0]["operation"] == "modify"
    # A permission that shows the diff (diff before approval) shows it the v2 way too.
    (asked,) = client.requests("session/request_permission")
    shown = asked["params"]["subject"]["toolCall"].get("content") or []
    assert all("changes" in i and "patch" in i for i in shown if i["type"] == "diff")
    # The patch turns the old file into the new one.
    (workspace / "big.txt").write_text(old)
    patch = tmp_path / "big.diff"
    patch.write_text(diffs[-1]["patch"]["text"])
    await asyncio.to_thread(
        subprocess.run, ["git", "apply", "-p0", "--unsafe-paths", str(patch)], cwd=tmp_path,
        check=True, capture_output=True,
    )
    assert (workspace / "big.txt").read_text() == new


async def test_v2_takes_json_rpc_batches_and_v1_still_refuses_them(
    tmp_path: Path, data_dir: Path, workspace: Path
) -> None:
    async with raw_acpd(tmp_path, data_dir=data_dir) as client:
        session_id = await open_v2(client, workspace)
        before = len(client.responses())
        await client.send([
            {"jsonrpc": "2.0", "id": "b1", "method": "session/list", "params": {}},
            {"jsonrpc": "2.0", "method": "_acpd/nothing", "params": {}},
            5,
            [],
            {"jsonrpc": "2.0", "id": "b2", "method": "session/close",
             "params": {"sessionId": session_id}},
        ])
        await client.wait_for(lambda: len(client.responses()) - before >= 4)
        await client.send([])
        await client.wait_for(lambda: len(client.responses()) - before >= 5)
        got = client.responses()[before:]
        by_id = {r["id"]: r for r in got if r["id"] is not None}
        assert session_id in [s["sessionId"] for s in by_id["b1"]["result"]["sessions"]]
        assert by_id["b2"]["result"] == {}
        nulls = [r for r in got if r["id"] is None]
        assert [r["error"]["code"] for r in nulls] == [-32600, -32600, -32600]
        assert len(got) == 5  # nothing for the notification

    async with raw_acpd(tmp_path, data_dir=data_dir, name="v1", version=1) as client:
        await client.request("initialize", {"protocolVersion": 1})
        await client.send([{"jsonrpc": "2.0", "id": 7, "method": "session/list", "params": {}}])
        await client.wait_for(lambda: len(client.responses()) >= 2)
        (refused,) = client.responses()[1:]
        assert refused["id"] is None and refused["error"]["code"] == -32600


async def test_a_cancel_right_behind_the_prompt_still_cancels_it(
    tmp_path: Path, data_dir: Path, workspace: Path
) -> None:
    """The prompt and its cancel in one write: whether the cancel lands before the turn
    begins or during it, the turn ends `cancelled` and the model's text never shows."""
    script = write_script(tmp_path / "s.json", [{"delay": 60, "text": "too late"}])
    async with raw_acpd(tmp_path, data_dir=data_dir, script=script) as client:
        session_id = await open_v2(client, workspace)
        request = {"jsonrpc": "2.0", "id": 99, "method": "session/prompt",
                   "params": prompt(session_id, "go")}
        cancel = {"jsonrpc": "2.0", "method": "session/cancel",
                  "params": {"sessionId": session_id}}
        await client.send_raw(
            (json.dumps(request) + "\n" + json.dumps(cancel) + "\n").encode())
        idle = await client.wait_idle(session_id)
        assert idle["stopReason"] == "cancelled"
        assert any(r.get("id") == 99 and "messageId" in r.get("result", {})
                   for r in client.responses())
        assert "too late" not in json.dumps(client.updates)


async def test_over_v1_too_a_cancel_right_behind_the_prompt_still_cancels_it(
    tmp_path: Path, data_dir: Path, workspace: Path
) -> None:
    """v1 has the same race: the prompt and its cancel in one write end `cancelled`, and the
    model's slow text never shows (the cancel used to find no turn and was dropped)."""
    script = write_script(tmp_path / "s.json", [{"delay": 60, "text": "too late"}])
    async with raw_acpd(tmp_path, data_dir=data_dir, script=script, version=1) as client:
        init = await client.request("initialize", {"protocolVersion": 1})
        assert init["protocolVersion"] == 1
        new = await client.request("session/new", {"cwd": str(workspace), "mcpServers": []})
        session_id = str(new["sessionId"])
        request = {"jsonrpc": "2.0", "id": 99, "method": "session/prompt",
                   "params": prompt(session_id, "go")}
        cancel = {"jsonrpc": "2.0", "method": "session/cancel",
                  "params": {"sessionId": session_id}}
        await client.send_raw(
            (json.dumps(request) + "\n" + json.dumps(cancel) + "\n").encode())
        await client.wait_for(lambda: any(r.get("id") == 99 for r in client.responses()),
                              within=30)
        [answer] = [r for r in client.responses() if r.get("id") == 99]
        assert answer["result"]["stopReason"] == "cancelled"
        assert "too late" not in json.dumps(client.updates)
