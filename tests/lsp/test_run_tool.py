"""`acpd.runTool` through a real `acpd lsp`, as Neovim and VS Code (recorded capabilities)."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from lsprotocol import types
from pygls.exceptions import JsonRpcInvalidParams, JsonRpcRequestCancelled

from tests.lsp.conftest import CLIENTS, lsp_session

pytestmark = pytest.mark.anyio


@pytest.mark.parametrize("client", CLIENTS)
async def test_an_allowed_tool_returns_its_text_and_shows_its_run(
    tmp_path: Path, client: str
) -> None:
    async with lsp_session(tmp_path, client) as s:
        result = await s.run_tool("read", {"path": "notes.txt"})
        assert result == "hello from the workspace\n"
        assert s.asked == []
        # acpd/toolStatus: one id, pending -> in_progress -> completed, with title and kind
        assert [u["status"] for u in s.statuses] == ["pending", "in_progress", "completed"]
        assert len({u["id"] for u in s.statuses}) == 1
        assert s.statuses[0]["title"] == "Read notes.txt"
        assert s.statuses[0]["kind"] == "read"
        # the result as window/logMessage
        assert [(m.type, m.message) for m in s.client.log_messages] == [
            (types.MessageType.Info, "hello from the workspace\n")
        ]
        # progress: begin, reports, end on one created token
        [(_token, reports)] = s.client.progress_reports.items()
        assert isinstance(reports[0], types.WorkDoneProgressBegin)
        assert isinstance(reports[-1], types.WorkDoneProgressEnd)
        assert any(isinstance(r, types.WorkDoneProgressReport)
                   and r.message == "Read notes.txt: completed" for r in reports)


async def test_bash_runs_in_the_workspace(tmp_path: Path) -> None:
    async with lsp_session(tmp_path, "visual-studio-code") as s:
        result = await s.run_tool("bash", {"command": "pwd; cat notes.txt"})
        assert f"{s.workspace}\nhello from the workspace\n" in result
        assert "[exit code: 0]" in result


@pytest.mark.parametrize("client", CLIENTS)
async def test_an_ask_rejected_runs_nothing(tmp_path: Path, client: str) -> None:
    async with lsp_session(tmp_path, client, answers=["Reject"]) as s:
        result = await s.run_tool("write", {"path": "made.txt", "content": "x"})
        assert s.asked == ["acpd: allow 'Write made.txt'?"]
        assert "[tool_error]" in result and "declined" in result
        assert not (s.workspace / "made.txt").exists()
        assert s.statuses[-1]["status"] == "failed"
        assert s.client.log_messages[-1].type == types.MessageType.Error
        assert s.client.diagnostics == {}  # the user's own no is not a finding


async def test_an_ask_closed_without_an_answer_is_a_no(tmp_path: Path) -> None:
    async with lsp_session(tmp_path, answers=[None]) as s:
        result = await s.run_tool("write", {"path": "made.txt", "content": "x"})
        assert len(s.asked) == 1 and "[tool_error]" in result
        assert not (s.workspace / "made.txt").exists()


async def test_an_ask_allowed_once_runs_and_asks_again_next_time(tmp_path: Path) -> None:
    async with lsp_session(tmp_path, answers=["Allow once", "Reject"]) as s:
        result = await s.run_tool("write", {"path": "made.txt", "content": "first"})
        assert "[tool_error]" not in result
        assert (s.workspace / "made.txt").read_text() == "first"
        result = await s.run_tool("write", {"path": "made.txt", "content": "second"})
        assert len(s.asked) == 2 and "[tool_error]" in result
        assert (s.workspace / "made.txt").read_text() == "first"


@pytest.mark.parametrize("command", ["rm -rf /", "r\\\nm -rf ~", "sh -c 'rm -rf /'"])
async def test_a_denied_command_is_refused_without_asking(tmp_path: Path, command: str) -> None:
    async with lsp_session(tmp_path, answers=["Allow once"]) as s:
        result = await s.run_tool("bash", {"command": command})
        assert "category: PolicyBlocked" in result
        assert s.asked == []
        assert s.statuses[-1]["status"] == "failed"
        assert s.client.log_messages[-1].type == types.MessageType.Error


async def test_a_refusal_that_names_a_file_is_published_on_it(tmp_path: Path) -> None:
    async with lsp_session(tmp_path) as s:
        result = await s.run_tool("read", {"path": ".env"})
        assert "category: PolicyBlocked" in result and "do-not-read" not in result
        [diagnostic] = s.client.diagnostics[(s.workspace / ".env").as_uri()]
        assert diagnostic.severity == types.DiagnosticSeverity.Error
        assert "deny_read" in diagnostic.message
        assert diagnostic.source == "acpd/policy"


BAD_ARGUMENTS = [
    None,
    [],
    ["read"],
    [{"tool": "read"}, {"tool": "read"}],
    [{"tool": 7, "arguments": {}}],
    [{"tool": "", "arguments": {}}],
    [{"tool": "read", "arguments": ["notes.txt"]}],
    [{"tool": "read", "arguments": {"path": "notes.txt"}, "extra": 1}],
    [{"tool": "no_such_tool", "arguments": {}}],
    [{"tool": "read", "arguments": {"path": "notes.txt", "bogus": 1}}],
    [{"tool": "read", "arguments": {"path": 12}}],
    [{"tool": "read", "arguments": {}}],
]


@pytest.mark.parametrize("arguments", BAD_ARGUMENTS)
async def test_bad_arguments_are_invalid_params_and_the_server_lives_on(
    tmp_path: Path, arguments: object
) -> None:
    async with lsp_session(tmp_path) as s:
        with pytest.raises(JsonRpcInvalidParams) as caught:
            await s.execute("acpd.runTool", arguments)  # type: ignore[arg-type]
        assert "acpd.runTool" in str(caught.value) or "acpd.runTool" in repr(caught.value)
        assert await s.run_tool("read", {"path": "notes.txt"}) == "hello from the workspace\n"


async def test_an_unknown_command_is_an_error_not_a_crash(tmp_path: Path) -> None:
    async with lsp_session(tmp_path) as s:
        with pytest.raises(JsonRpcInvalidParams):
            await s.execute("acpd.nothing", [{}])
        assert await s.run_tool("read", {"path": "notes.txt"}) == "hello from the workspace\n"


async def test_an_empty_array_is_no_arguments(tmp_path: Path) -> None:
    """Neovim's vim.json encodes an empty Lua table as []: the tool's schema judges it."""
    async with lsp_session(tmp_path) as s:
        with pytest.raises(JsonRpcInvalidParams) as caught:
            await s.run_tool("read", [])  # type: ignore[arg-type]
        assert "path" in str(caught.value) and "JSON object" not in str(caught.value)


async def test_a_plugin_overlay_added_while_running_applies_to_the_next_call(
    tmp_path: Path,
) -> None:
    plugins = tmp_path / "plugins"
    plugins.mkdir()
    config = f'[tools.shell]\nplugin_dirs = ["{plugins}"]\n'
    async with lsp_session(tmp_path, config=config) as s:
        assert "[tool_error]" not in await s.run_tool("bash", {"command": "touch one.txt"})
        assert (s.workspace / "one.txt").exists()
        overlay = plugins / "no-touch"
        overlay.mkdir()
        (overlay / "plugin.toml").write_text('[shell]\nblocked_commands = ["touch"]\n')
        reloaded = await s.client.wait_for_notification("acpd/policy_reloaded")
        assert not reloaded.errors
        assert any("reloaded" in m.message for m in s.client.log_messages)
        result = await s.run_tool("bash", {"command": "touch two.txt"})
        assert "category: PolicyBlocked" in result and "touch" in result
        assert not (s.workspace / "two.txt").exists()


@pytest.mark.slow
async def test_cancel_request_stops_the_running_command(tmp_path: Path) -> None:
    async with lsp_session(tmp_path) as s:
        protocol = s.client.protocol
        before = set(protocol._request_futures)
        running = asyncio.ensure_future(
            s.run_tool("bash", {"command": "touch started.txt; sleep 5; touch late.txt"})
        )
        for _ in range(1200):  # until the command runs (a minute at most)
            if (s.workspace / "started.txt").exists():
                break
            await asyncio.sleep(0.05)
        [msg_id] = set(protocol._request_futures) - before
        protocol.notify(types.CANCEL_REQUEST, types.CancelParams(id=msg_id))
        with pytest.raises(JsonRpcRequestCancelled):
            await running
        while s.statuses[-1]["status"] not in ("failed", "completed"):
            await s.client.wait_for_notification("acpd/toolStatus")
        assert s.statuses[-1]["status"] == "failed"
        # the process group was killed: nothing the command would do later happens
        await asyncio.sleep(6)
        assert not (s.workspace / "late.txt").exists()
        assert await s.run_tool("read", {"path": "notes.txt"}) == "hello from the workspace\n"
