"""`acpd.prompt`: a model turn (the scripted provider) whose tool calls go through the same
pipeline, shown as toolStatus, progress and logMessage."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from lsprotocol import types
from pygls.exceptions import JsonRpcException, JsonRpcInvalidParams

from tests.lsp.conftest import lsp_session

pytestmark = pytest.mark.anyio


def script(tmp_path: Path, turns: list[dict[str, object]]) -> str:
    path = tmp_path / "script.json"
    path.write_text(json.dumps({"turns": turns}))
    return f"scripted:{path}"


async def test_a_prompt_runs_a_turn_with_tool_calls(tmp_path: Path) -> None:
    model = script(tmp_path, [
        {"text": "Reading it. ", "tool_calls": [
            {"name": "read", "arguments": {"path": "notes.txt"}},
            {"name": "read", "arguments": {"path": ".env"}},
        ]},
        {"text": "It says hello."},
    ])
    async with lsp_session(tmp_path, args=("--model", model)) as s:
        reply = await s.execute("acpd.prompt", [{"text": "what is in notes.txt?"}])
        assert reply == "Reading it. It says hello."
        by_title = {u["title"]: u["status"] for u in s.statuses}
        assert by_title == {"Read notes.txt": "completed", "Read .env": "failed"}
        logged = [m.message for m in s.client.log_messages]
        assert "hello from the workspace\n" in logged
        assert logged[-1] == "Reading it. It says hello."
        assert (s.workspace / ".env").as_uri() in s.client.diagnostics
        [(_token, reports)] = s.client.progress_reports.items()
        assert isinstance(reports[0], types.WorkDoneProgressBegin)
        assert isinstance(reports[-1], types.WorkDoneProgressEnd)


async def test_an_asked_call_in_a_prompt_is_put_to_the_user(tmp_path: Path) -> None:
    model = script(tmp_path, [
        {"tool_calls": [{"name": "write", "arguments": {"path": "w.txt", "content": "x"}}]},
        {"text": "Declined, so nothing was written."},
    ])
    async with lsp_session(tmp_path, answers=["Reject"], args=("--model", model)) as s:
        reply = await s.execute("acpd.prompt", [{"text": "write w.txt"}])
        assert reply == "Declined, so nothing was written."
        assert s.asked == ["acpd: allow 'Write w.txt'?"]
        assert not (s.workspace / "w.txt").exists()


@pytest.mark.parametrize(("model", "says"), [
    (None, "no model"), ("scripted:/nonexistent/script.json", "cannot be used"),
])
async def test_no_usable_model_is_a_request_error(
    tmp_path: Path, model: str | None, says: str
) -> None:
    args = ("--model", model) if model else ()
    async with lsp_session(tmp_path, args=args) as s:
        with pytest.raises(JsonRpcException) as caught:
            await s.execute("acpd.prompt", [{"text": "hello"}])
        assert says in str(caught.value)
        assert await s.run_tool("read", {"path": "notes.txt"}) == "hello from the workspace\n"


@pytest.mark.parametrize("arguments", [
    None, [], ["hi"], [{"text": ""}], [{"text": 5}], [{"text": "hi", "model": "x"}],
])
async def test_bad_prompt_arguments_are_invalid_params(tmp_path: Path, arguments: object) -> None:
    async with lsp_session(tmp_path) as s:
        with pytest.raises(JsonRpcInvalidParams):
            await s.execute("acpd.prompt", arguments)  # type: ignore[arg-type]
