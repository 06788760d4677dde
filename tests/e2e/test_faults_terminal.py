"""An editor whose terminal fails (issue 9, item 4), played by an SDK client that misbehaves
on purpose: one answers `terminal/wait_for_exit` with an error, one never answers
`terminal/create`.

The first must reach the model and the card in the editor's own words (not as an
ExceptionGroup), with the terminal still killed and released once. The second must not fail
the call: after `[protocol] request_timeout` the command runs on the local path, and the
session remembers it (no second `terminal/create`).
"""

from __future__ import annotations

import asyncio
import sqlite3
from pathlib import Path
from typing import Any

import orjson
import pytest
from acp import RequestError
from acp.schema import CreateTerminalResponse, EnvVariable, WaitForTerminalExitResponse

from tests.e2e.client import RecordingClient, always
from tests.e2e.harness import acpd, write_script

pytestmark = pytest.mark.anyio

EDITOR_WORDS = "pty gone: the terminal pane was closed"


class ExitFails(RecordingClient):
    async def wait_for_terminal_exit(
        self, session_id: str, terminal_id: str, **kwargs: Any
    ) -> WaitForTerminalExitResponse:
        self._terminal("terminal/wait_for_exit", terminal_id)
        raise RequestError(-32603, EDITOR_WORDS, {"terminalId": terminal_id})


class CreateHangs(RecordingClient):
    async def create_terminal(
        self, session_id: str, command: str, args: list[str] | None = None,
        env: list[EnvVariable] | None = None, cwd: str | None = None,
        output_byte_limit: int | None = None, **kwargs: Any,
    ) -> CreateTerminalResponse:
        self._record("terminal/create", {"command": command, "args": args})
        await asyncio.Event().wait()  # never answers
        raise AssertionError("unreachable")


def tool_results(data_dir: Path) -> list[str]:
    db = sqlite3.connect(data_dir / "sessions.sqlite3")
    try:
        rows = db.execute("SELECT payload FROM messages ORDER BY session_id, seq").fetchall()
    finally:
        db.close()
    return [m["text"] for m in (orjson.loads(p) for (p,) in rows) if m["role"] == "tool"]


def bash(command: str) -> dict[str, Any]:
    return {"tool_calls": [{"name": "bash", "arguments": {"command": command}}]}


async def test_an_editor_error_from_wait_for_exit_is_shown_in_its_own_words(
    tmp_path: Path, data_dir: Path, workspace: Path
) -> None:
    script = write_script(tmp_path / "s.json", [bash("sleep 0.2; echo done"), {"text": "ok"}])
    client = ExitFails(answer=always("allow_once"))
    async with acpd(
        tmp_path, data_dir=data_dir, workspace=workspace, client=client, script=script,
    ) as run:
        session_id = await run.open_session()
        assert await run.prompt(session_id, "go") == "end_turn"
        (card,) = client.tool_calls()
        final = client.final(card["toolCallId"])
        shown = final["content"][-1]["content"]["text"]
        (terminal_id,) = [c["terminalId"] for c in client.calls("terminal/create")]
        assert client.calls("terminal/release") == [terminal_id]
    assert final["status"] == "failed"
    (result,) = tool_results(data_dir)
    for text in (shown, result):
        assert EDITOR_WORDS in text and "terminal/wait_for_exit" in text, text
        assert "ExceptionGroup" not in text and "TaskGroup" not in text, text


@pytest.mark.slow
async def test_an_editor_that_never_answers_terminal_create_falls_back_to_local_once(
    tmp_path: Path, data_dir: Path, workspace: Path
) -> None:
    config = tmp_path / "acpd.toml"
    config.write_text("[protocol]\nrequest_timeout = 1\n")
    script = write_script(tmp_path / "s.json", [
        bash("echo first >> ran.txt"), bash("echo second >> ran.txt"), {"text": "ok"},
        bash("echo third >> ran.txt"), {"text": "ok again"},
    ])
    client = CreateHangs(answer=always("allow_once"))
    async with acpd(
        tmp_path, data_dir=data_dir, workspace=workspace, client=client, script=script,
        args=("--config", str(config)),
    ) as run:
        session_id = await run.open_session()
        assert await run.prompt(session_id, "go") == "end_turn"
        assert await run.prompt(session_id, "once more") == "end_turn"  # a new turn
        cards = client.tool_calls()
        finals = [client.final(c["toolCallId"]) for c in cards]
        assert len(client.calls("terminal/create")) == 1, "the silence was not remembered"
        assert "no answer" in run.daemon_log() or "did not answer" in run.daemon_log()
    assert [f["status"] for f in finals] == ["completed"] * 3
    assert (workspace / "ran.txt").read_text().split() == ["first", "second", "third"]
