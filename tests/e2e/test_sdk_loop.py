"""The agent loop seen from the official Python SDK: direct mode, plans, usage, the loop
limits, invalid tool-call JSON, and stdin EOF."""

from __future__ import annotations

import asyncio
import signal
from pathlib import Path
from typing import Any

import pytest

from tests.e2e.client import RecordingClient, always
from tests.e2e.harness import (
    acpd,
    caps,
    sleep_marker,
    text,
    wait_for_file_lines,
    wait_unmarked,
    write_script,
)

pytestmark = pytest.mark.anyio


def read_call(path: str) -> dict[str, Any]:
    return {"tool_calls": [{"name": "read", "arguments": {"path": path}}]}


async def test_direct_mode_runs_slash_commands_through_the_pipeline(
    tmp_path: Path, data_dir: Path, workspace: Path
) -> None:
    client = RecordingClient(answer=always("allow_once"))
    async with acpd(tmp_path, data_dir=data_dir, workspace=workspace, client=client) as run:
        session_id = await run.open_session()

        assert await run.prompt(session_id, "/bash echo hi") == "end_turn"
        (bash,) = client.tool_calls()
        assert bash["title"] == f"echo hi (in {workspace})" and bash["kind"] == "execute"
        # The default shell policy allows echo: the runner judged it, nobody was asked.
        assert client.calls("session/request_permission") == []
        final = client.final(bash["toolCallId"])
        assert final["status"] == "completed"
        assert final["content"][-1]["content"]["text"].startswith("hi\n")

        assert await run.prompt(session_id, "/read hello.txt") == "end_turn"
        read = client.tool_calls()[1]
        assert read["title"] == "Read hello.txt" and read["kind"] == "read"
        assert client.final(read["toolCallId"])["content"][-1]["content"]["text"] == (
            "hello from the workspace\n"
        )

        before = len(client.texts())
        assert await run.prompt(session_id, "/tools") == "end_turn"
        tools = client.texts()[before:]
        assert tools.startswith("Tools:") and "- bash (core__bash" in tools
        assert "- read (core__read" in tools

        before = len(client.texts())
        assert await run.prompt(session_id, "/status") == "end_turn"
        status = client.texts()[before:]
        assert session_id in status and "none (direct mode)" in status and "mode: ask" in status

        before = len(client.texts())
        assert await run.prompt(session_id, "/clear") == "end_turn"
        assert "Cleared the conversation" in client.texts()[before:]

        before = len(client.texts())
        assert await run.prompt(session_id, "what is in this repo?") == "end_turn"
        note = client.texts()[before:]
        assert "No model is configured" in note and "--model" in note

        before = len(client.texts())
        assert await run.prompt(session_id, "/frobnicate") == "end_turn"
        assert "Unknown command /frobnicate" in client.texts()[before:]
        # Slash commands never leave the pipeline: two tool calls, nothing else ran.
        assert len(client.tool_calls()) == 2


async def test_plan_updates_and_usage(tmp_path: Path, data_dir: Path, workspace: Path) -> None:
    entries = [
        {"content": "Read the file", "status": "completed", "priority": "high"},
        {"content": "Explain it", "status": "in_progress", "priority": "medium"},
    ]
    script = write_script(
        tmp_path / "s.json",
        [
            {"tool_calls": [{"name": "update_plan", "arguments": {"entries": entries}}],
             "usage": {"input_tokens": 1200, "output_tokens": 34}},
            {"thought": "thinking it over", "chunks": ["Here ", "it is."],
             "usage": {"input_tokens": 1300, "output_tokens": 8}},
        ],
    )
    client = RecordingClient()
    async with acpd(
        tmp_path, data_dir=data_dir, workspace=workspace, client=client, script=script,
    ) as run:
        session_id = await run.open_session()
        assert await run.prompt(session_id, "plan it") == "end_turn"
        plans = [u for u in client.updates if u["sessionUpdate"] == "plan"]
        assert [p["entries"] for p in plans] == [entries]
        (call,) = client.tool_calls()
        assert call["kind"] == "think"
        assert client.final(call["toolCallId"])["status"] == "completed"
        usage = [
            (u["used"], u["size"]) for u in client.updates if u["sessionUpdate"] == "usage_update"
        ]
        assert usage == [(1234, 200_000), (1308, 200_000)]
        assert client.texts("agent_thought_chunk") == "thinking it over"
        assert client.texts().endswith("Here it is.")


async def test_doom_loop_stops_after_three_identical_rounds(
    tmp_path: Path, data_dir: Path, workspace: Path
) -> None:
    script = write_script(
        tmp_path / "s.json", [read_call("hello.txt")] * 5 + [{"text": "never reached"}]
    )
    client = RecordingClient()
    async with acpd(
        tmp_path, data_dir=data_dir, workspace=workspace, client=client, script=script,
    ) as run:
        session_id = await run.open_session()
        assert await run.prompt(session_id, "loop") == "end_turn"
        assert len(client.tool_calls()) == 3
        said = client.texts()
        assert "identical output" in said and "never reached" not in said


async def test_max_tool_iterations_from_the_environment(
    tmp_path: Path, data_dir: Path, workspace: Path
) -> None:
    distinct = [read_call("hello.txt"), read_call("src/main.py"),
                {"tool_calls": [{"name": "list_directory", "arguments": {"path": "."}}]},
                {"tool_calls": [{"name": "list_directory", "arguments": {"path": "src"}}]}]
    script = write_script(tmp_path / "s.json", [*distinct, {"text": "never reached"}])
    client = RecordingClient()
    async with acpd(
        tmp_path, data_dir=data_dir, workspace=workspace, client=client,
        args=("--model", f"scripted:{script}"), env={"ACPD_MAX_TOOL_ITERATIONS": "2"},
    ) as run:
        session_id = await run.open_session()
        assert await run.prompt(session_id, "go") == "max_turn_requests"
        assert [c["title"] for c in client.tool_calls()] == ["Read hello.txt", "Read src/main.py"]
        assert "Stopped after 2 tool rounds" in client.texts()


async def test_invalid_tool_arguments_become_an_error_result_and_the_turn_goes_on(
    tmp_path: Path, data_dir: Path, workspace: Path
) -> None:
    script = write_script(
        tmp_path / "s.json",
        [
            {"tool_calls": [{"name": "read", "raw_arguments": '{"path": "hello.txt"'}]},
            {"tool_calls": [{"name": "read", "arguments": {"path": "hello.txt", "colour": 1}}]},
            {"tool_calls": [{"name": "no_such_tool", "arguments": {}}]},
            {"text": "recovered"},
        ],
    )
    client = RecordingClient()
    async with acpd(
        tmp_path, data_dir=data_dir, workspace=workspace, client=client, script=script,
    ) as run:
        session_id = await run.open_session()
        assert await run.prompt(session_id, "try") == "end_turn"
        calls = client.tool_calls()
        assert len(calls) == 3
        finals = [client.final(c["toolCallId"]) for c in calls]
        assert [f["status"] for f in finals] == ["failed"] * 3
        shown = [f["content"][-1]["content"]["text"] for f in finals]
        assert "not valid JSON" in shown[0] and "InvalidParameters" in shown[0]
        assert "colour" in shown[1]
        assert "ToolNotFound" in shown[2]
        assert client.calls("fs/read_text_file") == []
        assert client.texts().endswith("recovered")


@pytest.mark.slow
@pytest.mark.parametrize("where", ["local-process-group", "editor-terminal"])
@pytest.mark.parametrize("stop", ["stdin-eof", "sigterm"])
async def test_stdin_eof_or_sigterm_ends_the_daemon_and_its_children(
    where: str, stop: str, tmp_path: Path, data_dir: Path, workspace: Path
) -> None:
    """EOF (or SIGTERM, which editors send too) while a command runs: acpd exits within
    about a second (asserted < 3 s) with code 0, the command's process tree is gone, and an
    editor terminal is killed and released (the client still reads, even though acpd can no
    longer read its answers)."""
    mark = sleep_marker()
    command = f"echo $$ >> pids.txt; sleep {mark} & echo $! >> pids.txt; wait"
    script = write_script(
        tmp_path / "s.json", [{"tool_calls": [{"name": "bash", "arguments": {"command": command}}]}]
    )
    terminal = where == "editor-terminal"
    client = RecordingClient(answer=always("allow_once"), terminal_enabled=terminal)
    async with acpd(
        tmp_path, data_dir=data_dir, workspace=workspace, client=client, script=script,
    ) as run:
        session_id = await run.open_session(caps(terminal=terminal))
        prompt = asyncio.ensure_future(run.conn.prompt(session_id=session_id, prompt=text("go")))
        await wait_for_file_lines(workspace / "pids.txt", 2)
        stdin = run.process.stdin
        assert stdin is not None
        if stop == "sigterm":
            run.process.send_signal(signal.SIGTERM)
        else:
            stdin.write_eof()
        # Its children sleep for years: exiting within the wait proves it did not wait for
        # them (no timed assertion beyond that).
        code = await asyncio.wait_for(run.process.wait(), 30)
        assert code == 0
        assert await wait_unmarked(mark, within=3) == [], "children outlived the daemon"
        # The shutdown cancels the turn. Its answer goes out if the turn ends within the
        # shutdown grace (the editor may read on after closing our stdin); otherwise the
        # connection closes first. Never does the prompt end as if it had finished.
        try:
            answer = await asyncio.wait_for(prompt, 5)
        except ConnectionError:
            pass
        else:
            assert answer.stop_reason == "cancelled"
        if terminal:
            terminal_id = client.calls("terminal/create")[0]["terminalId"]
            assert client.calls("terminal/kill") == [terminal_id]
            assert client.calls("terminal/release") == [terminal_id]


async def test_cancel_stops_a_slow_model_and_a_second_prompt_is_refused_meanwhile(
    tmp_path: Path, data_dir: Path, workspace: Path
) -> None:
    from acp import RequestError

    plan = [{"content": "wait for the model", "status": "in_progress", "priority": "high"}]
    script = write_script(
        tmp_path / "s.json",
        [{"tool_calls": [{"name": "update_plan", "arguments": {"entries": plan}}]},
         {"delay": 60, "text": "too late"}, {"text": "fresh"}],
    )
    client = RecordingClient()
    async with acpd(
        tmp_path, data_dir=data_dir, workspace=workspace, client=client, script=script,
    ) as run:
        session_id = await run.open_session()
        prompt = asyncio.ensure_future(run.conn.prompt(session_id=session_id, prompt=text("go")))
        # The plan tool finished: the turn is now in its second, slow model call.
        await client.wait_for(lambda: bool(client.tool_calls()) and any(
            u.get("status") == "completed" for u in client.updates
        ))
        with pytest.raises(RequestError) as caught:
            await run.prompt(session_id, "me too")
        assert caught.value.code == -32600
        await run.conn.cancel(session_id=session_id)
        response = await asyncio.wait_for(prompt, 10)
        assert response.stop_reason == "cancelled"
        assert "too late" not in client.texts()
        assert await run.prompt(session_id, "again") == "end_turn"
        assert client.texts().endswith("fresh")


async def test_the_context_budget_stops_the_turn(
    tmp_path: Path, data_dir: Path, workspace: Path
) -> None:
    config = tmp_path / "acpd.toml"
    config.write_text("[agent]\ncontext_budget_tokens = 200\n")
    script = write_script(tmp_path / "s.json", [{"text": "never"}])
    client = RecordingClient()
    async with acpd(
        tmp_path, data_dir=data_dir, workspace=workspace, client=client,
        args=("--model", f"scripted:{script}", "--config", str(config)),
    ) as run:
        session_id = await run.open_session()
        assert await run.prompt(session_id, "x" * 2000) == "max_tokens"
        said = client.texts()
        assert "context budget" in said and "never" not in said
