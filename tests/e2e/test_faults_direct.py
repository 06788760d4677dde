"""Direct mode says what happened in the user's terms (issue 9, item 12): a declined call is
the user's choice, not the policy's; a tool that needs several arguments shows its usage; a
directory that was just created says so."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.e2e.client import RecordingClient, always
from tests.e2e.harness import acpd

pytestmark = pytest.mark.anyio


def said(client: RecordingClient, before: int) -> str:
    return "".join(
        u["content"].get("text", "") for u in client.updates[before:]
        if u.get("sessionUpdate") == "agent_message_chunk"
    )


def last_card_text(client: RecordingClient) -> str:
    card = client.tool_calls()[-1]
    return str(client.final(card["toolCallId"])["content"][-1]["content"]["text"])


async def test_direct_mode_messages(tmp_path: Path, data_dir: Path, workspace: Path) -> None:
    client = RecordingClient(answer=always("reject_once"))
    async with acpd(tmp_path, data_dir=data_dir, workspace=workspace, client=client) as run:
        session_id = await run.open_session()

        mark = len(client.updates)
        command = """/bash python3 -c 'open("declined.txt", "w")'"""
        assert await run.prompt(session_id, command) == "end_turn"
        text = said(client, mark)
        assert "You declined /bash" in text and "nothing ran" in text
        assert "policy" not in text.lower()
        assert not (workspace / "declined.txt").exists()

        for line in ("/write b.txt hi", "/write", '/write {"path": "b.txt"}',
                     "/edit hello.txt x"):
            mark = len(client.updates)
            assert await run.prompt(session_id, line) == "end_turn"
            text = said(client, mark)
            assert "Usage: /" in text and '"path"' in text, (line, text)
            assert not (workspace / "b.txt").exists()
        assert '"content"' in said(client, 0)

        client.answer = always("allow_once")
        await run.prompt(session_id, "/create_directory made/here")
        assert last_card_text(client) == "Created directory made/here"
        assert (workspace / "made" / "here").is_dir()
        await run.prompt(session_id, "/create_directory made/here")
        assert last_card_text(client) == "Directory made/here already exists"
