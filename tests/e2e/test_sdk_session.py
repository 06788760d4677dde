"""The real `acpd serve` driven by the official Python SDK: initialize, sessions, prompts.

Every run goes through the logging tee; when a run ends, every message acpd wrote is checked
against the ACP v1 schema and the ordering rules (tests/e2e/harness.py).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.e2e.client import RecordingClient
from tests.e2e.harness import acpd, caps, write_script

pytestmark = pytest.mark.anyio

BASH = "printf 'from bash\\n'; ls"


def read_and_bash(tmp: Path) -> Path:
    return write_script(
        tmp / "script.json",
        [
            {"text": "Reading.",
             "tool_calls": [{"name": "read", "arguments": {"path": "hello.txt"}}]},
            {"tool_calls": [{"name": "bash", "arguments": {"command": BASH}}]},
            {"text": "done"},
        ],
    )


async def test_initialize_answers_v1_with_its_capabilities(
    tmp_path: Path, data_dir: Path, workspace: Path
) -> None:
    async with acpd(tmp_path, data_dir=data_dir, workspace=workspace) as run:
        response = await run.conn.initialize(protocol_version=1, client_capabilities=caps())
        assert response.protocol_version == 1
        agent = response.agent_capabilities
        assert agent is not None and agent.load_session is True
        assert agent.session_capabilities is not None
        assert agent.session_capabilities.list is not None
        assert agent.session_capabilities.resume is not None
        assert agent.session_capabilities.close is not None
        assert response.auth_methods == []
        assert response.agent_info is not None and response.agent_info.name == "acpd"


async def test_initialize_with_a_newer_version_gets_the_latest_supported(
    tmp_path: Path, data_dir: Path, workspace: Path
) -> None:
    async with acpd(tmp_path, data_dir=data_dir, workspace=workspace) as run:
        response = await run.conn.initialize(protocol_version=7, client_capabilities=caps())
        assert response.protocol_version == 1


@pytest.mark.parametrize("offered", ["fs-and-terminal", "nothing"])
async def test_capabilities_decide_editor_or_local(
    offered: str, tmp_path: Path, data_dir: Path, workspace: Path
) -> None:
    """With fs+terminal the file comes from the editor buffer and bash runs in its terminal;
    with neither, acpd reads the disk and runs bash itself, under the same policy."""
    script = read_and_bash(tmp_path)
    client = RecordingClient(buffers={str(workspace / "hello.txt"): "UNSAVED BUFFER\n"})
    with_caps = offered == "fs-and-terminal"
    async with acpd(
        tmp_path, data_dir=data_dir, workspace=workspace, client=client, script=script,
    ) as run:
        session_id = await run.open_session(caps(fs=with_caps, terminal=with_caps))
        assert await run.prompt(session_id, "read it and run bash") == "end_turn"
        read, bash = client.tool_calls()
        read_text = client.final(read["toolCallId"])["content"][-1]["content"]["text"]
        bash_final = client.final(bash["toolCallId"])
        assert bash_final["status"] == "completed"
        assert bash_final["rawOutput"]["exit_code"] == 0
        if with_caps:
            assert read_text == "UNSAVED BUFFER\n"
            assert client.calls("fs/read_text_file") == [
                {"path": str(workspace / "hello.txt"), "line": None, "limit": None}
            ]
            assert len(client.calls("terminal/create")) == 1
        else:
            assert read_text == "hello from the workspace\n"
            assert client.calls("fs/read_text_file") == []
            assert not [k for k, _ in client.events if k.startswith("terminal/")]
            shown = bash_final["content"][-1]["content"]["text"]
            assert "from bash" in shown and "hello.txt" in shown


async def test_new_session_answers_before_its_first_update(
    tmp_path: Path, data_dir: Path, workspace: Path
) -> None:
    async with acpd(tmp_path, data_dir=data_dir, workspace=workspace) as run:
        await run.initialize()
        response = await run.conn.new_session(cwd=str(workspace), mcp_servers=[])
        assert response.session_id.startswith("sess_")
        assert response.modes is not None
        assert response.modes.current_mode_id == "ask"
        assert [m.id for m in response.modes.available_modes] == ["read-only", "ask", "auto"]
        options = {o.id: o for o in response.config_options or []}
        assert set(options) == {"mode", "model", "confirm_commands"}
        await run.client.wait_for(lambda: bool(run.client.updates))
        first = run.client.updates[0]
        assert first["sessionUpdate"] == "available_commands_update"
        names = {c["name"] for c in first["availableCommands"]}
        assert {"tools", "status", "clear", "bash", "read"} <= names
    # The wire rule (checked on exit) is that nothing for the session precedes the response.


async def test_new_session_rejects_a_cwd_that_is_not_a_directory(
    tmp_path: Path, data_dir: Path, workspace: Path
) -> None:
    from acp import RequestError

    async with acpd(tmp_path, data_dir=data_dir, workspace=workspace) as run:
        await run.initialize()
        with pytest.raises(RequestError) as caught:
            await run.conn.new_session(cwd=str(workspace / "missing"), mcp_servers=[])
        assert caught.value.code == -32602
