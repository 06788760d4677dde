"""Session lifecycle over the official Python SDK: load with replay, resume, list with a
cursor, close, delete, modes and config options. Storage is real SQLite in a temp dir, and
load/resume happen in a *new* daemon process, so what is replayed really came from disk."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from acp import RequestError

from tests.e2e.client import RecordingClient
from tests.e2e.harness import acpd, caps, write_script
from tests.e2e.schema import WireLine

pytestmark = pytest.mark.anyio

BASH = "echo replayed-output"


def read_and_bash(tmp: Path) -> Path:
    return write_script(
        tmp / "s.json",
        [
            {"text": "Let me look.", "tool_calls": [
                {"name": "read", "arguments": {"path": "hello.txt"}}]},
            {"tool_calls": [{"name": "bash", "arguments": {"command": BASH}}]},
            {"text": "All done."},
        ],
    )


async def first_run(tmp: Path, data_dir: Path, workspace: Path, script: Path) -> str:
    async with acpd(
        tmp, data_dir=data_dir, workspace=workspace, args=("--model", f"scripted:{script}"),
        name="first",
    ) as run:
        session_id = await run.open_session()
        assert await run.prompt(session_id, "look and run") == "end_turn"
        return session_id


def updates_before_response(lines: list[WireLine], method: str) -> list[dict[str, Any]]:
    """The session/update payloads acpd sent between the client's `method` request and its
    response: what an editor sees as the replay."""
    request = next(
        line for line in lines
        if line.direction == "C" and isinstance(line.message, dict)
        and line.message.get("method") == method
    )
    assert isinstance(request.message, dict)
    request_id = request.message["id"]
    seen: list[dict[str, Any]] = []
    for line in lines:
        msg = line.message
        if line.number <= request.number or line.direction != "A" or not isinstance(msg, dict):
            continue
        if msg.get("id") == request_id and "method" not in msg:
            return seen
        if msg.get("method") == "session/update":
            seen.append(msg["params"]["update"])
    raise AssertionError(f"{method} was never answered")


@pytest.mark.slow
async def test_load_replays_the_history_then_responds(
    tmp_path: Path, data_dir: Path, workspace: Path
) -> None:
    script = read_and_bash(tmp_path)
    session_id = await first_run(tmp_path, data_dir, workspace, script)
    client = RecordingClient()
    async with acpd(
        tmp_path, data_dir=data_dir, workspace=workspace, client=client,
        args=("--model", f"scripted:{script}"), name="second",
    ) as run:
        await run.initialize()
        response = await run.conn.load_session(
            cwd=str(workspace), session_id=session_id, mcp_servers=[]
        )
        assert response is not None and response.modes is not None
        replay = updates_before_response(run.wire(), "session/load")

    kinds = [u["sessionUpdate"] for u in replay]
    assert kinds[0] == "user_message_chunk"
    # The commands come with the replay, before the answer (never after it).
    assert kinds.count("available_commands_update") == 1
    assert kinds[-1] == "available_commands_update"
    assert replay[0]["content"]["text"] == "look and run"
    calls = [u for u in replay if u["sessionUpdate"] == "tool_call"]
    assert [c["title"].rsplit(" (in ", 1)[0] for c in calls] == ["Read hello.txt", BASH]
    assert [c["kind"] for c in calls] == ["read", "execute"]
    for call in calls:
        mine = [
            i for i, u in enumerate(replay)
            if u.get("toolCallId") == call["toolCallId"]
        ]
        assert replay[mine[0]]["sessionUpdate"] == "tool_call", "an update before its tool_call"
        finals = [replay[i] for i in mine if replay[i].get("status") in ("completed", "failed")]
        assert len(finals) == 1 and finals[0]["sessionUpdate"] == "tool_call_update"
        assert finals[0]["status"] == "completed"
    bash_final = [u for u in replay if u.get("toolCallId") == calls[1]["toolCallId"]][-1]
    assert "replayed-output" in bash_final["content"][-1]["content"]["text"]
    assert all(
        c.get("type") != "terminal" for u in replay for c in u.get("content") or []
        if isinstance(c, dict)
    ), "a replayed card names a long-released terminal"
    texts = "".join(
        u["content"]["text"] for u in replay if u["sessionUpdate"] == "agent_message_chunk"
    )
    assert texts == "Let me look.All done."
    # The SDK client got the same replay, in the same order.
    got = [u for u in client.updates if u["sessionUpdate"] != "available_commands_update"]
    assert [u["sessionUpdate"] for u in got] == [
        k for k in kinds if k != "available_commands_update"
    ]
    # Nothing from the replay mentions terminal/* calls: load never runs a tool.
    assert not [k for k, _ in client.events if k.startswith("terminal/")]


async def test_load_of_a_live_session_in_the_same_daemon(
    tmp_path: Path, data_dir: Path, workspace: Path
) -> None:
    script = read_and_bash(tmp_path)
    client = RecordingClient()
    async with acpd(
        tmp_path, data_dir=data_dir, workspace=workspace, client=client, script=script,
    ) as run:
        session_id = await run.open_session()
        assert await run.prompt(session_id, "look and run") == "end_turn"
        await run.conn.load_session(cwd=str(workspace), session_id=session_id, mcp_servers=[])
        replay = updates_before_response(run.wire(), "session/load")
        titles = [u["title"] for u in replay if u["sessionUpdate"] == "tool_call"]
        assert titles == ["Read hello.txt", f"{BASH} (in {workspace})"]


@pytest.mark.slow
async def test_resume_restores_without_replay_and_continues(
    tmp_path: Path, data_dir: Path, workspace: Path
) -> None:
    script = write_script(
        tmp_path / "s.json",
        [{"text": "first answer"}, {"text": "second answer"}],
    )
    session_id = await first_run(tmp_path, data_dir, workspace, script)
    client = RecordingClient()
    async with acpd(
        tmp_path, data_dir=data_dir, workspace=workspace, client=client,
        args=("--model", f"scripted:{script}"), name="second",
    ) as run:
        await run.initialize()
        response = await run.conn.resume_session(
            cwd=str(workspace), session_id=session_id, mcp_servers=[]
        )
        assert response.modes is not None and response.modes.current_mode_id == "ask"
        assert updates_before_response(run.wire(), "session/resume") == []
        assert await run.prompt(session_id, "/status") == "end_turn"
        status = client.texts()
        assert session_id in status
        # The history came back from storage: the first turn's user and assistant messages.
        assert "messages: 2" in status
        with pytest.raises(RequestError) as caught:
            await run.conn.resume_session(cwd=str(workspace), session_id="sess_nope")
        assert caught.value.code == -32002


@pytest.mark.slow
async def test_list_pages_with_a_cursor_and_filters_by_cwd(
    tmp_path: Path, data_dir: Path, workspace: Path
) -> None:
    other = tmp_path / "other"
    other.mkdir()
    async with acpd(tmp_path, data_dir=data_dir, workspace=workspace) as run:
        await run.initialize()
        created = {await run.new_session() for _ in range(53)}
        elsewhere = {await run.new_session(other) for _ in range(2)}
        titled = await run.new_session()
        assert await run.prompt(titled, "/status please") == "end_turn"
        created.add(titled)

        first = await run.conn.list_sessions()
        assert len(first.sessions) == 50 and first.next_cursor
        second = await run.conn.list_sessions(cursor=first.next_cursor)
        assert second.next_cursor is None
        listed = [s.session_id for s in first.sessions + second.sessions]
        assert len(listed) == len(set(listed)) == 56
        assert set(listed) == created | elsewhere
        # Newest first: the session just prompted was updated last.
        assert first.sessions[0].session_id == titled
        assert first.sessions[0].title == "/status please"
        assert all(s.updated_at for s in first.sessions)

        mine = await run.conn.list_sessions(cwd=str(other))
        assert {s.session_id for s in mine.sessions} == elsewhere
        assert all(s.cwd == str(other) for s in mine.sessions)

        with pytest.raises(RequestError) as caught:
            await run.conn.list_sessions(cursor="not-a-cursor")
        assert caught.value.code == -32602


async def test_close_then_delete(tmp_path: Path, data_dir: Path, workspace: Path) -> None:
    async with acpd(tmp_path, data_dir=data_dir, workspace=workspace) as run:
        session_id = await run.open_session()
        assert await run.prompt(session_id, "/status") == "end_turn"
        assert await run.conn.close_session(session_id=session_id) is not None
        with pytest.raises(RequestError) as caught:
            await run.prompt(session_id, "/status")
        assert caught.value.code == -32002
        # Closed is not deleted: it can be loaded again.
        await run.conn.load_session(cwd=str(workspace), session_id=session_id, mcp_servers=[])
        assert await run.prompt(session_id, "/status") == "end_turn"

        assert await run.raw("session/delete", {"sessionId": session_id}) == {}
        with pytest.raises(RequestError) as caught:
            await run.conn.load_session(cwd=str(workspace), session_id=session_id, mcp_servers=[])
        assert caught.value.code == -32002
        listed = await run.conn.list_sessions()
        assert session_id not in {s.session_id for s in listed.sessions}
        # ACP: deleting a session that does not exist SHOULD succeed silently.
        assert await run.raw("session/delete", {"sessionId": session_id}) == {}
        assert await run.raw("session/delete", {"sessionId": "sess_never_was"}) == {}


async def test_read_only_mode_hides_and_denies_bash(
    tmp_path: Path, data_dir: Path, workspace: Path
) -> None:
    script = write_script(
        tmp_path / "s.json",
        [{"tool_calls": [{"name": "bash", "arguments": {"command": "echo x > made.txt"}}]},
         {"text": "ok"}],
    )
    client = RecordingClient()
    async with acpd(
        tmp_path, data_dir=data_dir, workspace=workspace, client=client, script=script,
    ) as run:
        session_id = await run.open_session()
        await run.conn.set_session_mode(session_id=session_id, mode_id="read-only")
        await client.wait_for(
            lambda: any(u["sessionUpdate"] == "current_mode_update" for u in client.updates)
        )
        mode = [u for u in client.updates if u["sessionUpdate"] == "current_mode_update"]
        assert mode == [{"sessionId": session_id, "sessionUpdate": "current_mode_update",
                         "currentModeId": "read-only"}]

        assert await run.prompt(session_id, "/tools") == "end_turn"
        tools = client.texts()
        assert "bash (core__bash" in tools
        bash_line = next(line for line in tools.splitlines() if line.startswith("- bash "))
        assert "hidden in this mode" in bash_line
        read_line = next(line for line in tools.splitlines() if line.startswith("- read "))
        assert "hidden" not in read_line

        assert await run.prompt(session_id, "make a file") == "end_turn"
        (call,) = client.tool_calls()
        final = client.final(call["toolCallId"])
        assert final["status"] == "failed"
        assert "read-only" in final["content"][-1]["content"]["text"]
        assert client.calls("session/request_permission") == []
        assert client.calls("terminal/create") == []
        assert not (workspace / "made.txt").exists()

        with pytest.raises(RequestError) as caught:
            await run.conn.set_session_mode(session_id=session_id, mode_id="yolo")
        assert caught.value.code == -32602


async def test_set_config_option_switches_mode_and_model(
    tmp_path: Path, data_dir: Path, workspace: Path
) -> None:
    script = write_script(tmp_path / "s.json", [{"text": "from the model"}])
    model = f"scripted:{script}"
    client = RecordingClient()
    async with acpd(
        tmp_path, data_dir=data_dir, workspace=workspace, client=client, args=("--model", model),
    ) as run:
        await run.initialize(caps())
        new = await run.conn.new_session(cwd=str(workspace), mcp_servers=[])
        session_id = new.session_id
        options = {o.id: o for o in new.config_options or []}
        assert options["model"].current_value == model
        assert {c.value for c in options["model"].options} == {"none", model}

        answer = await run.conn.set_config_option(
            config_id="mode", session_id=session_id, value="auto"
        )
        assert answer is not None
        current = {o.id: o.current_value for o in answer.config_options}
        assert current == {"mode": "auto", "model": model, "confirm_commands": "off"}
        await client.wait_for(
            lambda: any(u["sessionUpdate"] == "current_mode_update" for u in client.updates)
        )

        answer = await run.conn.set_config_option(
            config_id="model", session_id=session_id, value="none"
        )
        assert answer is not None
        assert {o.id: o.current_value for o in answer.config_options}["model"] == "none"
        assert await run.prompt(session_id, "hello?") == "end_turn"
        assert "No model is configured" in client.texts()

        await run.conn.set_config_option(config_id="model", session_id=session_id, value=model)
        assert await run.prompt(session_id, "hello again") == "end_turn"
        assert client.texts().endswith("from the model")

        for config_id, value in (("model", "openai:not-offered"), ("mode", "yolo"),
                                 ("colour", "blue")):
            with pytest.raises(RequestError) as caught:
                await run.conn.set_config_option(
                    config_id=config_id, session_id=session_id, value=value
                )
            assert caught.value.code == -32602, (config_id, value)
