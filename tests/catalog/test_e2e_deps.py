"""Dependency gates through the real daemon: requires hides a tool until its prerequisite
completed (a failed call does not count), /clear forgets, a named tool bypasses the gate,
cycles are broken with a warning, and a deadlock sends everything."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.catalog.e2e import names, requests, setup, status
from tests.e2e.client import RecordingClient
from tests.e2e.harness import acpd

pytestmark = [pytest.mark.anyio, pytest.mark.slow]

CONFIG = """
[agent.catalog.dependencies]
enabled = true
[agent.catalog.dependencies.rules.write]
requires = ["read"]
[agent.catalog.dependencies.rules.core__edit]
requires = ["read"]
[agent.catalog.dependencies.rules.move_path]
requires = ["copy_path"]
[agent.catalog.dependencies.rules.copy_path]
requires = ["move_path"]
"""


def read(path: str) -> dict[str, object]:
    return {"tool_calls": [{"name": "read", "arguments": {"path": path}}]}


async def test_requires_gates_and_clear(tmp_path: Path, data_dir: Path, workspace: Path) -> None:
    args, script = setup(tmp_path, CONFIG, [
        read("missing.txt"), read("hello.txt"), {"text": "read it"},  # prompt 1
        {"text": "fresh"},                                               # prompt 2
        {"text": "named"},                                               # prompt 3
    ])
    client = RecordingClient()
    async with acpd(tmp_path, data_dir=data_dir, workspace=workspace, client=client,
                    script=script, args=args) as run:
        session_id = await run.open_session()
        assert await run.prompt(session_id, "hello there") == "end_turn"
        finals = [client.final(c["toolCallId"])["status"] for c in client.tool_calls()]
        assert finals == ["failed", "completed"]
        assert await run.prompt(session_id, "/clear") == "end_turn"
        assert await run.prompt(session_id, "hi again") == "end_turn"
        assert await run.prompt(session_id, "/status") == "end_turn"
        after_clear = status(client.texts())
        assert await run.prompt(session_id, "please write notes.txt") == "end_turn"
        log = run.daemon_log()
    before, failed, done, cleared, mentioned = (names(r) for r in requests(tmp_path))
    assert "write" not in before and "edit" not in before
    assert "write" not in failed and "edit" not in failed  # a failed read completes nothing
    assert {"write", "edit"} <= set(done)
    assert "write" not in cleared and "edit" not in cleared  # /clear forgot the read
    assert "edit waits for read" in after_clear and "write waits for read" in after_clear
    assert "write" in mentioned and "edit" not in mentioned  # named: bypasses the gate
    # The cycle is broken when the daemon starts: both tools are offered, and it said so.
    assert {"move_path", "copy_path"} <= set(before)
    assert "copy_path, move_path form a requires cycle" in log


async def test_deadlock_sends_every_tool(tmp_path: Path, data_dir: Path, workspace: Path) -> None:
    tools = ["read", "list_directory", "find_path", "grep", "write", "edit", "bash",
             "create_directory", "delete_path", "move_path", "copy_path", "update_plan",
             "read_overflow", "fetch", "web_scrape", "diagnostics", "ask_user",
             "memory_save", "memory_search", "load_skill", "scheduler", "compress_context"]
    rules = "".join(
        f'[agent.catalog.dependencies.rules.{t}]\nrequires = ["deploy_approval"]\n'
        for t in tools
    )
    args, script = setup(
        tmp_path, f"[agent.catalog.dependencies]\nenabled = true\n{rules}", [{"text": "hi"}]
    )
    client = RecordingClient()
    async with acpd(tmp_path, data_dir=data_dir, workspace=workspace, client=client,
                    script=script, args=args) as run:
        session_id = await run.open_session()
        assert await run.prompt(session_id, "hello") == "end_turn"
        assert await run.prompt(session_id, "/status") == "end_turn"
        line = status(client.texts())
        log = run.daemon_log()
    (request,) = requests(tmp_path)
    sent = names(request)
    assert set(sent) <= set(tools) and {"read", "write", "bash"} <= set(sent)
    assert line == f"Tools: {len(sent)} of {len(sent)} sent (filtering off); every " \
        "candidate waited for a prerequisite, so all were sent"
    assert "the gates are off for this turn" in log
