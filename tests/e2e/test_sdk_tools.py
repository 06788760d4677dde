"""Tool calls on the wire through the official Python SDK client: the editor's terminal,
permissions, cancellation with real process trees."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

from acpd.daemon import envscrub
from acpd.sandbox import relaybin
from tests.e2e.client import RecordingClient, always
from tests.e2e.harness import (
    acpd,
    caps,
    marked,
    sleep_marker,
    text,
    wait_for_file_lines,
    wait_unmarked,
    write_script,
)
from tests.e2e.schema import WireLine

pytestmark = pytest.mark.anyio

PERMISSION_KINDS = ["allow_once", "allow_always", "reject_once", "reject_always"]


def asks(word: str, file: str = "ran.txt") -> str:
    """A command that appends `word` to `file` and that the default shell policy asks for
    (interpreter inline code); `echo` alone would run without a prompt."""
    return f"python3 -c 'print(\"{word}\")' >> {file}"


def bash_turns(*commands: str, final: str = "done") -> list[dict[str, Any]]:
    turns: list[dict[str, Any]] = [
        {"tool_calls": [{"name": "bash", "arguments": {"command": c}}]} for c in commands
    ]
    return [*turns, {"text": final}]


@pytest.mark.parametrize("launcher", ["relay", "sh"])
async def test_bash_runs_in_the_client_terminal_and_is_released_after_the_final_update(
    tmp_path: Path, data_dir: Path, workspace: Path, launcher: str
) -> None:
    if launcher == "relay" and relaybin.client() is None:
        pytest.skip("the relay client is not built (scripts/build_native.py)")
    command = "echo out; echo err >&2; exit 3"
    script = write_script(tmp_path / "s.json", bash_turns(command))
    client = RecordingClient()
    async with acpd(
        tmp_path, data_dir=data_dir, workspace=workspace, client=client, script=script,
        env={relaybin.SWITCH_ENV: "on" if launcher == "relay" else "off"},
    ) as run:
        session_id = await run.open_session()
        assert await run.prompt(session_id, "run it") == "end_turn"

        (call,) = client.tool_calls()
        call_id = call["toolCallId"]
        assert call["kind"] == "execute" and call["title"] == f"{command} (in {workspace})"
        assert call["status"] == "pending"
        (create,) = client.calls("terminal/create")
        # Outside the sandbox every program goes by absolute path (a relative PATH entry
        # would find the workspace's).
        if launcher == "relay":  # the relay client hands the terminal to the daemon
            assert create["command"] == relaybin.client()
            assert len(create["args"]) == 6 and create["args"][2] == "--"
        else:  # the environment scrub, which execs the launcher (sh execs bubblewrap)
            assert create["command"] == envscrub.absolute("bash")
            assert create["args"][:2] == ["-p", "-c"] and create["args"][3] == envscrub.NAME
            assert create["args"][4:6] == [envscrub.absolute("sh"), "-c"]
            assert create["args"][7] == "acpd-sandbox"
        assert create["command"][0] == "/"
        assert create["args"][-4:] == ["--", envscrub.absolute("bash"), "-c", command]
        assert create["cwd"] == str(workspace)
        assert create["env"]["PAGER"] == "cat" and create["env"]["GIT_TERMINAL_PROMPT"] == "0"
        assert isinstance(create["outputByteLimit"], int) and create["outputByteLimit"] > 0
        terminal_id = create["terminalId"]

        updates = client.tool_updates(call_id)
        assert updates[0]["sessionUpdate"] == "tool_call"
        assert [u["status"] for u in updates[1:]][-1] == "failed"  # exit 3
        embeds = [
            u for u in updates
            if {"type": "terminal", "terminalId": terminal_id} in u.get("content", [])
        ]
        assert embeds and embeds[0]["status"] == "in_progress"
        final = client.final(call_id)
        assert {"type": "terminal", "terminalId": terminal_id} in final["content"]
        assert final["rawOutput"]["exit_code"] == 3
        shown = final["content"][-1]["content"]["text"]
        assert "out\n" in shown and "err\n" in shown and "[exit code: 3]" in shown

        # Release exactly once, after the final update, as the last terminal call.
        terminal_calls = [(k, v) for k, v in client.events if k.startswith("terminal/")]
        assert [k for k, _ in terminal_calls].count("terminal/release") == 1
        assert terminal_calls[-1] == ("terminal/release", terminal_id)
        kinds = [k for k, v in client.events if k == "terminal/release" or v is final]
        assert kinds == ["update", "terminal/release"]
        assert client.texts().endswith("done")


async def test_output_byte_limit_keeps_the_tail(
    tmp_path: Path, data_dir: Path, workspace: Path
) -> None:
    config = tmp_path / "acpd.toml"
    config.write_text("[tools.shell]\noutput_byte_limit = 1024\n")
    script = write_script(tmp_path / "s.json", bash_turns("seq 1 3000"))
    client = RecordingClient(answer=always("allow_once"))
    async with acpd(
        tmp_path, data_dir=data_dir, workspace=workspace, client=client,
        args=("--model", f"scripted:{script}", "--config", str(config)),
    ) as run:
        session_id = await run.open_session()
        assert await run.prompt(session_id, "count") == "end_turn"
        (create,) = client.calls("terminal/create")
        assert create["outputByteLimit"] == 1024
        final = client.final(client.tool_calls()[0]["toolCallId"])
        assert final["status"] == "completed"
        assert final["rawOutput"]["truncated"] is True
        shown = final["content"][-1]["content"]["text"]
        assert "\n3000\n" in shown and "\n1\n" not in shown
        assert "[output truncated" in shown


@pytest.mark.parametrize("option", PERMISSION_KINDS)
async def test_each_permission_option(
    option: str, tmp_path: Path, data_dir: Path, workspace: Path
) -> None:
    """The same command twice, then a different one. "always" answers are remembered for the
    identical command only; "once" answers ask every time. Allowed commands really run."""
    same = asks("same")
    other = asks("other")
    script = write_script(tmp_path / "s.json", bash_turns(same, same, other))
    client = RecordingClient(answer=always(option))
    async with acpd(
        tmp_path, data_dir=data_dir, workspace=workspace, client=client, script=script,
    ) as run:
        session_id = await run.open_session()
        assert await run.prompt(session_id, "run them") == "end_turn"

        asked = client.calls("session/request_permission")
        titles = [a["toolCall"]["title"].rsplit(" (in ", 1)[0] for a in asked]
        if option.endswith("_always"):
            assert titles == [same, other]
        else:
            assert titles == [same, same, other]
        for request in asked:
            assert [o["kind"] for o in request["options"]] == PERMISSION_KINDS
            assert request["toolCall"]["kind"] == "execute"
            call = request["toolCall"]
            assert call["title"] == f"{call['rawInput']['command']} (in {workspace})"
            assert call["rawInput"] == {"command": call["rawInput"]["command"],
                                        "cwd": str(workspace), "timeout": 120.0}

        calls = client.tool_calls()
        assert len(calls) == 3
        statuses = [client.final(c["toolCallId"])["status"] for c in calls]
        ran = workspace / "ran.txt"
        if option.startswith("allow"):
            assert statuses == ["completed"] * 3
            assert ran.read_text() == "same\nsame\nother\n"
            assert len(client.calls("terminal/create")) == 3
        else:
            assert statuses == ["failed"] * 3
            assert not ran.exists()
            assert client.calls("terminal/create") == []
            reasons = [
                client.final(c["toolCallId"])["content"][-1]["content"]["text"] for c in calls
            ]
            assert "Rejected by the user." in reasons[0]
            if option == "reject_always":
                assert "rejected earlier" in reasons[1]


async def test_a_cancelled_permission_answer_ends_the_turn_cancelled(
    tmp_path: Path, data_dir: Path, workspace: Path
) -> None:
    """An editor may answer a permission request "cancelled" on its own (the user closed the
    dialog): the call fails, the prompt answers `cancelled`, and the session goes on."""
    script = write_script(
        tmp_path / "s.json", [*bash_turns(asks("never"), final="unused")[:1],
                              {"text": "after"}],
    )
    client = RecordingClient(answer=always(None))
    async with acpd(
        tmp_path, data_dir=data_dir, workspace=workspace, client=client, script=script,
    ) as run:
        session_id = await run.open_session()
        assert await run.prompt(session_id, "run") == "cancelled"
        (call,) = client.tool_calls()
        assert client.final(call["toolCallId"])["status"] == "failed"
        assert not (workspace / "ran.txt").exists()
        assert await run.prompt(session_id, "again") == "end_turn"
        assert client.texts().endswith("after")


async def test_cancel_while_the_user_decides_closes_the_card(
    tmp_path: Path, data_dir: Path, workspace: Path
) -> None:
    """`session/cancel` during a permission request: the client answers "cancelled" (as ACP
    asks), the card ends failed, the command never runs, the prompt answers `cancelled`."""
    script = write_script(tmp_path / "s.json", bash_turns(asks("never")))
    gate = asyncio.Event()
    client = RecordingClient(answer=always(None), permission_gate=gate)
    async with acpd(
        tmp_path, data_dir=data_dir, workspace=workspace, client=client, script=script,
    ) as run:
        session_id = await run.open_session()
        prompt = asyncio.ensure_future(run.conn.prompt(session_id=session_id, prompt=text("go")))
        await client.wait_for(lambda: bool(client.calls("session/request_permission")))
        await run.conn.cancel(session_id=session_id)
        response = await asyncio.wait_for(prompt, 15)
        gate.set()
        assert response.stop_reason == "cancelled"
        (call,) = client.tool_calls()
        assert client.final(call["toolCallId"])["status"] == "failed"
        assert not (workspace / "ran.txt").exists()


def tree(mark: str) -> str:
    """Four processes (bash, a subshell, two sleeps) that record themselves, all carrying
    `mark` in their command line (pids inside the sandbox's PID namespace are not host pids)."""
    return (
        "echo $$ >> pids.txt; "
        f"(echo $BASHPID >> pids.txt; sleep {mark} & echo $! >> pids.txt; wait) & "
        f"sleep {mark} & echo $! >> pids.txt; wait"
    )


@pytest.mark.slow
@pytest.mark.parametrize("where", ["editor-terminal", "local-process-group"])
async def test_cancel_mid_command_kills_the_process_tree(
    where: str, tmp_path: Path, data_dir: Path, workspace: Path
) -> None:
    mark = sleep_marker()
    script = write_script(tmp_path / "s.json", [*bash_turns(tree(mark))[:1], {"text": "after"}])
    terminal = where == "editor-terminal"
    client = RecordingClient(answer=always("allow_once"), terminal_enabled=terminal)
    async with acpd(
        tmp_path, data_dir=data_dir, workspace=workspace, client=client, script=script,
    ) as run:
        session_id = await run.open_session(caps(terminal=terminal))
        prompt = asyncio.ensure_future(
            run.conn.prompt(session_id=session_id, prompt=text("start a long job"))
        )
        pids = [int(p) for p in await wait_for_file_lines(workspace / "pids.txt", 4)]
        assert all(p > 1 for p in pids) and marked(mark)
        await run.conn.cancel(session_id=session_id)
        response = await asyncio.wait_for(prompt, 15)
        assert response.stop_reason == "cancelled"

        (call,) = client.tool_calls()
        final = client.final(call["toolCallId"])
        assert final["status"] == "failed"
        assert await wait_unmarked(mark) == [], "the command's process tree survived the cancel"
        if terminal:
            terminal_id = client.calls("terminal/create")[0]["terminalId"]
            assert client.calls("terminal/kill") == [terminal_id]
            assert client.calls("terminal/release") == [terminal_id]
            assert {"type": "terminal", "terminalId": terminal_id} in final["content"]
        else:
            assert not [k for k, _ in client.events if k.startswith("terminal/")]
        # The session is usable again.
        assert await run.prompt(session_id, "and now?") == "end_turn"
        assert client.texts().endswith("after")

        def every_update_before_the_answer(lines: list[WireLine]) -> None:
            answer = next(
                line.number for line in lines
                if line.direction == "A" and isinstance(line.message, dict)
                and line.message.get("result") == {"stopReason": "cancelled"}
            )
            final_line = next(
                line.number for line in lines
                if line.direction == "A" and b'"status":"failed"' in line.raw
                and call["toolCallId"].encode() in line.raw
            )
            assert final_line < answer, "the final tool_call_update came after the response"

        run.checks.append(every_update_before_the_answer)


@pytest.mark.slow
@pytest.mark.parametrize("where", ["editor-terminal", "local-process-group"])
async def test_a_timeout_kills_the_command_and_keeps_its_partial_output(
    where: str, tmp_path: Path, data_dir: Path, workspace: Path
) -> None:
    mark = sleep_marker()
    command = f"echo $$ > pid.txt; echo partial; sleep {mark}"
    script = write_script(
        tmp_path / "s.json",
        [{"tool_calls": [{"name": "bash", "arguments": {"command": command, "timeout": 1}}]},
         {"text": "after"}],
    )
    terminal = where == "editor-terminal"
    client = RecordingClient(answer=always("allow_once"), terminal_enabled=terminal)
    async with acpd(
        tmp_path, data_dir=data_dir, workspace=workspace, client=client, script=script,
    ) as run:
        session_id = await run.open_session(caps(terminal=terminal))
        assert await run.prompt(session_id, "slow") == "end_turn"
        final = client.final(client.tool_calls()[0]["toolCallId"])
        assert final["status"] == "failed"
        assert final["rawOutput"]["timed_out"] is True
        shown = final["content"][-1]["content"]["text"]
        assert "partial\n" in shown and "timed out after 1 s" in shown
        assert (workspace / "pid.txt").read_text().strip()
        assert await wait_unmarked(mark) == []
        if terminal:
            terminal_id = client.calls("terminal/create")[0]["terminalId"]
            assert client.calls("terminal/kill") == [terminal_id]
            assert client.calls("terminal/release") == [terminal_id]
        assert client.texts().endswith("after")


@pytest.mark.slow
@pytest.mark.parametrize("where", ["editor-terminal", "local-process-group"])
async def test_close_during_a_command_ends_the_turn_and_the_tree(
    where: str, tmp_path: Path, data_dir: Path, workspace: Path
) -> None:
    mark = sleep_marker()
    script = write_script(tmp_path / "s.json", bash_turns(tree(mark)))
    terminal = where == "editor-terminal"
    client = RecordingClient(answer=always("allow_once"), terminal_enabled=terminal)
    async with acpd(
        tmp_path, data_dir=data_dir, workspace=workspace, client=client, script=script,
    ) as run:
        session_id = await run.open_session(caps(terminal=terminal))
        prompt = asyncio.ensure_future(run.conn.prompt(session_id=session_id, prompt=text("go")))
        await wait_for_file_lines(workspace / "pids.txt", 4)
        assert await asyncio.wait_for(run.conn.close_session(session_id=session_id), 15) is not None
        response = await asyncio.wait_for(prompt, 15)
        assert response.stop_reason == "cancelled"
        assert client.final(client.tool_calls()[0]["toolCallId"])["status"] == "failed"
        assert await wait_unmarked(mark) == []
        if terminal:
            assert len(client.calls("terminal/release")) == 1
