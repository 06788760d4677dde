"""v1 additions over the official Python SDK: `session_info_update` (title, updatedAt) and
`messageId` on message chunks, replayed identically by `session/load` in a new daemon.
Every message acpd wrote is checked against the v1 schema when each run ends."""

from __future__ import annotations

from datetime import datetime
from pathlib import Path
from typing import Any

import pytest

from tests.e2e.client import RecordingClient
from tests.e2e.harness import acpd, write_script
from tests.e2e.test_sdk_lifecycle import updates_before_response

pytestmark = pytest.mark.anyio

TOKEN = "ghp_" + "a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8"
PROMPT = f"  \n\n  Fix   the\tlogin bug with token {TOKEN} and then explain the whole change " \
    "to me in detail please\nsecond line"


def infos(client: RecordingClient) -> list[dict[str, Any]]:
    return [u for u in client.updates if u["sessionUpdate"] == "session_info_update"]


def chunks(updates: list[dict[str, Any]], kind: str) -> list[dict[str, Any]]:
    return [u for u in updates if u["sessionUpdate"] == kind]


async def test_title_and_updated_at_match_the_session_list(
    tmp_path: Path, data_dir: Path, workspace: Path
) -> None:
    script = write_script(tmp_path / "s.json", [{"text": "ok"}, {"text": "again"}])
    client = RecordingClient()
    async with acpd(tmp_path, data_dir=data_dir, workspace=workspace, client=client,
                    script=script) as run:
        session_id = await run.open_session()
        assert await run.prompt(session_id, PROMPT) == "end_turn"
        titled = [u for u in infos(client) if u.get("title")]
        assert titled, "no session_info_update carried the title"
        title = titled[0]["title"]
        assert TOKEN not in title and "login bug" in title
        assert title.startswith("Fix the login bug") and "\t" not in title
        assert len(title) <= 60 and title.endswith("…")
        assert "second line" not in title
        last = infos(client)[-1]
        listed = (await run.conn.list_sessions()).sessions[0]
        assert listed.session_id == session_id
        assert listed.title == title
        assert listed.updated_at == last["updatedAt"]
        assert last["updatedAt"].endswith("Z")
        first_time = datetime.fromisoformat(last["updatedAt"])

        # A later turn keeps the title and moves the time forward.
        assert await run.prompt(session_id, "another question") == "end_turn"
        newest = infos(client)[-1]
        assert newest["title"] == title
        assert datetime.fromisoformat(newest["updatedAt"]) >= first_time
        listed = (await run.conn.list_sessions()).sessions[0]
        assert listed.updated_at == newest["updatedAt"]


async def test_a_prompt_with_no_text_sets_no_title(
    tmp_path: Path, data_dir: Path, workspace: Path
) -> None:
    script = write_script(tmp_path / "s.json", [{"text": "ok"}])
    client = RecordingClient()
    async with acpd(tmp_path, data_dir=data_dir, workspace=workspace, client=client,
                    script=script) as run:
        session_id = await run.open_session()
        assert await run.prompt(session_id, " \n\u200b\t ") == "end_turn"
        assert all("title" not in u for u in infos(client))
        assert infos(client), "the turn's end still says when the session changed"
        assert (await run.conn.list_sessions()).sessions[0].title is None


async def test_message_ids_are_stable_and_replayed_identically(
    tmp_path: Path, data_dir: Path, workspace: Path
) -> None:
    script = write_script(tmp_path / "s.json", [
        {"thought": "thinking", "chunks": ["Let me ", "look."],
         "tool_calls": [{"name": "read", "arguments": {"path": "hello.txt"}}]},
        {"chunks": ["All ", "done."]},
    ])
    client = RecordingClient()
    async with acpd(tmp_path, data_dir=data_dir, workspace=workspace, client=client,
                    script=script, name="first") as run:
        session_id = await run.open_session()
        assert await run.prompt(session_id, "look") == "end_turn"
    agent = chunks(client.updates, "agent_message_chunk")
    ids = [u["messageId"] for u in agent]
    assert all(ids) and len(set(ids)) == 2, "one id per model reply"
    assert ids[0] == ids[1] and ids[2] == ids[3] and ids[0] != ids[2]
    thought = chunks(client.updates, "agent_thought_chunk")
    assert [u["messageId"] for u in thought] == [ids[0]]

    loaded = RecordingClient()
    async with acpd(tmp_path, data_dir=data_dir, workspace=workspace, client=loaded,
                    script=script, name="second") as run:
        await run.initialize()
        await run.conn.load_session(cwd=str(workspace), session_id=session_id, mcp_servers=[])
        replay = updates_before_response(run.wire(), "session/load")
    user = chunks(replay, "user_message_chunk")
    assert len(user) == 1 and user[0]["messageId"] and user[0]["content"]["text"] == "look"
    replayed = chunks(replay, "agent_message_chunk")
    assert "".join(u["content"]["text"] for u in replayed) == "Let me look.All done."
    assert {u["messageId"] for u in replayed} == set(ids)
    assert user[0]["messageId"] not in ids
    # Load tells the editor the stored title and time too.
    info = [u for u in replay if u["sessionUpdate"] == "session_info_update"]
    assert info and info[-1]["title"] == "look"
