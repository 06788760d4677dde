"""The output stage through the real daemon: filters in the card and the model's history,
overflow stored per session and read back only there, retention on start, cascade on delete."""

from __future__ import annotations

import re
import sqlite3
import time
from pathlib import Path
from typing import Any

import pytest

from tests.e2e.client import RecordingClient
from tests.e2e.harness import acpd, caps, write_script
from tests.output.conftest import db_rows, messages

pytestmark = pytest.mark.anyio

REF = re.compile(r"overflow:([0-9a-f-]{36})")


def bash_turn(command: str) -> dict[str, Any]:
    return {"tool_calls": [{"name": "bash", "arguments": {"command": command}}]}


def final_text(client: RecordingClient, call_id: str) -> str:
    return str(client.final(call_id)["content"][-1]["content"]["text"])


def tool_messages(data_dir: Path, session_id: str) -> list[str]:
    return [m["text"] for m in messages(data_dir, session_id) if m["role"] == "tool"]


async def test_long_bash_output_is_filtered_with_stats_in_the_card_only(
    tmp_path: Path, data_dir: Path, workspace: Path
) -> None:
    lines = [f"2024-05-01T10:00:{i % 60:02d}Z INFO worker heartbeat ok" for i in range(400)]
    lines[200] = "2024-05-01T10:03:20Z ERROR permission denied opening /var/run/app.sock"
    (workspace / "app.log").write_text("\n".join(lines) + "\n")
    script = write_script(tmp_path / "s.json", [bash_turn("cat app.log"), {"text": "ok"}])
    client = RecordingClient()
    async with acpd(
        tmp_path, data_dir=data_dir, workspace=workspace, client=client, script=script,
    ) as run:
        session_id = await run.open_session(caps(terminal=False))
        assert await run.prompt(session_id, "look at the log") == "end_turn"
        (call,) = client.tool_calls()
        shown = final_text(client, call["toolCallId"])
        raw = client.final(call["toolCallId"])["rawOutput"]

    (model,) = tool_messages(data_dir, session_id)
    stats = re.search(r"\[shell\] 400 lines -> (\d+) lines, [\d.]+% filtered", shown)
    assert stats is not None, shown
    assert int(stats.group(1)) < 20
    assert "[shell]" not in model  # the stats line is for the editor, not the model
    assert len(model.splitlines()) < 25
    assert "permission denied" in model  # the error line survives the dedup
    # The shell's notes come after the filtered text, untouched.
    assert model.rstrip().endswith("[exit code: 0]")
    assert shown.startswith(model)
    # The envelope is filtered too, without the notes.
    assert len(raw["stdout"].splitlines()) < 25 and "[exit code" not in raw["stdout"]
    assert raw["exit_code"] == 0


async def test_overflow_is_read_back_in_its_session_and_nowhere_else(
    tmp_path: Path, data_dir: Path, workspace: Path
) -> None:
    config = tmp_path / "acpd.toml"
    config.write_text("[tools.overflow]\nthreshold = 2000\n")
    script = write_script(tmp_path / "s.json", [bash_turn("seq 1 6000"), {"text": "ok"}])
    client = RecordingClient()
    async with acpd(
        tmp_path, data_dir=data_dir, workspace=workspace, client=client,
        args=("--model", f"scripted:{script}", "--config", str(config)),
    ) as run:
        await run.initialize()
        first = await run.new_session()
        assert await run.prompt(first, "count") == "end_turn"
        (model,) = tool_messages(data_dir, first)
        match = REF.search(model)
        assert match is not None, model
        entry = match.group(1)
        # Head and tail for the model, the reference between them.
        assert model.startswith("1\n2\n3\n") and "\n6000\n" in model
        assert "\n3000\n" not in model and len(model) < 2600
        assert model.rstrip().endswith("[exit code: 0]")
        (stored,) = db_rows(
            data_dir, "SELECT session_id, content FROM tool_overflow WHERE id = ?", entry
        )
        assert stored[0] == first
        assert stored[1] == "".join(f"{i}\n" for i in range(1, 6001))

        # The same session reads it back (a slash command takes the runner's path).
        before = len(client.tool_calls())
        await run.prompt(first, f'/read_overflow {{"reference": "overflow:{entry}", '
                                '"offset": 0, "limit": 30000}')
        read = client.tool_calls()[before]
        assert read["title"].startswith("Read stored output")
        final = client.final(read["toolCallId"])
        assert final["status"] == "completed"
        got = final["content"][-1]["content"]["text"]
        assert "\n2999\n3000\n3001\n" in got and "end of the stored output" in got

        # Another session asking for the same entry learns nothing.
        second = await run.new_session()
        before = len(client.tool_calls())
        await run.prompt(second, f"/read_overflow overflow:{entry}")
        refused = client.final(client.tool_calls()[before]["toolCallId"])
        assert refused["status"] == "failed"
        text = refused["content"][-1]["content"]["text"]
        assert "no stored output" in text and "\n3000\n" not in text

        # Not a uuid: refused before any lookup.
        before = len(client.tool_calls())
        await run.prompt(first, "/read_overflow overflow:../../etc/passwd")
        bad = client.final(client.tool_calls()[before]["toolCallId"])
        assert bad["status"] == "failed" and "overflow:<uuid>" in str(bad["content"])

        # Deleting the session takes its overflow entries with it.
        await run.raw("session/delete", {"sessionId": first})
        assert db_rows(data_dir, "SELECT id FROM tool_overflow WHERE session_id = ?", first) == []
        assert db_rows(data_dir, "SELECT id FROM tool_overflow WHERE id = ?", entry) == []


async def test_old_overflow_entries_are_expired_on_start(
    tmp_path: Path, data_dir: Path, workspace: Path
) -> None:
    config = tmp_path / "acpd.toml"
    config.write_text("[tools.overflow]\nretention_days = 3\n")
    args = ("--config", str(config))
    async with acpd(tmp_path, data_dir=data_dir, workspace=workspace, args=args) as run:
        session_id = await run.open_session()
    db = sqlite3.connect(data_dir / "sessions.sqlite3")
    with db:
        now = time.time()
        db.execute(
            "INSERT INTO tool_overflow VALUES (?, ?, ?, ?)",
            ("00000000-0000-4000-8000-000000000001", session_id, "old", now - 4 * 86400),
        )
        db.execute(
            "INSERT INTO tool_overflow VALUES (?, ?, ?, ?)",
            ("00000000-0000-4000-8000-000000000002", session_id, "recent", now - 2 * 86400),
        )
    db.close()
    async with acpd(
        tmp_path, data_dir=data_dir, workspace=workspace, args=args, name="again"
    ) as run:
        await run.initialize()
        await run.new_session()  # waits for the runtime, which expires on load
        kept = db_rows(data_dir, "SELECT content FROM tool_overflow ORDER BY created_at")
    assert kept == [("recent",)]
