"""The native tools through the real daemon (`acpd serve` behind the logging tee, the official
SDK as the editor, the scripted provider as the model): each call takes the one pipeline,
gets its card, and the wire is checked against the ACP schema and ordering rules."""

from __future__ import annotations

import asyncio
import json
import sqlite3
from pathlib import Path
from typing import Any

import pytest

from tests.e2e.client import RecordingClient
from tests.e2e.harness import acpd, write_script

pytestmark = pytest.mark.anyio


def call(name: str, **arguments: Any) -> dict[str, Any]:
    return {"tool_calls": [{"name": name, "arguments": arguments}]}


def card_text(update: dict[str, Any]) -> str:
    return "".join(
        c["content"].get("text", "") for c in update.get("content") or []
        if c.get("type") == "content"
    )


def finals(client: RecordingClient) -> list[dict[str, Any]]:
    """The final update of each card, in the order the calls were made."""
    return [client.final(c["toolCallId"]) for c in client.tool_calls()]


def stored_messages(data_dir: Path, session_id: str) -> list[dict[str, Any]]:
    with sqlite3.connect(data_dir / "sessions.sqlite3") as db:
        rows = db.execute("SELECT payload FROM messages WHERE session_id = ? ORDER BY seq",
                          (session_id,)).fetchall()
    return [json.loads(r[0]) for r in rows]


def config_file(tmp_path: Path, text: str) -> tuple[str, ...]:
    path = tmp_path / "acpd.toml"
    path.write_text(text)
    return ("--config", str(path))


# --- memory ----------------------------------------------------------------------------------


async def test_memory_saved_in_one_daemon_is_found_by_words_in_the_next(
    tmp_path: Path, data_dir: Path, workspace: Path
) -> None:
    note = "The staging database is rebuilt every Monday; ask Dana before touching it"
    first = write_script(tmp_path / "save.json", [call("memory_save", content=note),
                                                  {"text": "saved"}])
    async with acpd(tmp_path, data_dir=data_dir, workspace=workspace, script=first,
                    name="save") as run:
        session_id = await run.open_session()
        assert await run.prompt(session_id, "remember this") == "end_turn"
        (saved,) = finals(run.client)
        assert saved["status"] == "completed", saved
        assert saved["rawOutput"] == {"id": 1, "created": True}
    second = write_script(tmp_path / "find.json", [
        {"tool_calls": [
            {"name": "memory_search", "arguments": {"query": "who knows about staging databases?"}},
            {"name": "memory_search", "arguments": {"query": 'NEAR("* -dana'}},
            {"name": "memory_search", "arguments": {"query": "kubernetes", "limit": 3}},
            {"name": "memory_search", "arguments": {"query": "x", "limit": 500}},
        ]},
        {"text": "found"},
    ])
    client = RecordingClient()
    async with acpd(tmp_path, data_dir=data_dir, workspace=workspace, script=second,
                    client=client, name="find") as run:
        session_id = await run.open_session()
        assert await run.prompt(session_id, "what do you know?") == "end_turn"
        by_words, hostile, unrelated, too_many = finals(client)
    assert by_words["status"] == "completed" and note in card_text(by_words)
    assert hostile["status"] == "completed" and note in card_text(hostile)  # "dana" is a word
    assert unrelated["status"] == "completed" and "no memories match" in card_text(unrelated)
    assert too_many["status"] == "failed" and "limit" in card_text(too_many)


# --- load_skill ------------------------------------------------------------------------------


def skill(root: Path, folder: str, text: str) -> Path:
    (root / folder).mkdir(parents=True, exist_ok=True)
    (root / folder / "SKILL.md").write_text(text)
    return root / folder / "SKILL.md"


async def test_load_skill_returns_bodies_and_refuses_broken_or_escaping_skills(
    tmp_path: Path, data_dir: Path, workspace: Path
) -> None:
    skills = tmp_path / "skills"
    skill(skills, "release-notes", "---\nname: release-notes\ndescription: How we write release "
          "notes\n---\nOne line per change, newest first.\n")
    skill(skills, "no-name", "---\ndescription: lacks a name\n---\nbody\n")
    skill(skills, "bad-yaml", "---\nname: [unclosed\ndescription: x\n---\nbody\n")
    outside = tmp_path / "outside-secret.md"
    outside.write_text("---\nname: escape\ndescription: x\n---\nTOP-SECRET-CONTENT\n")
    (skills / "escape").mkdir()
    (skills / "escape" / "SKILL.md").symlink_to(outside)
    skill(workspace / ".acpd" / "skills", "ws-skill",
          "---\nname: ws-skill\ndescription: the workspace's own\n---\nWorkspace steps.\n")
    script = write_script(tmp_path / "s.json", [
        {"tool_calls": [{"name": "load_skill", "arguments": {"name": n}} for n in (
            "release-notes", "ws-skill", "no-name", "bad-yaml", "escape", "missing", "../etc")]},
        {"text": "done"},
    ])
    config = config_file(tmp_path, f'[tools.native.skills]\ndirs = ["{skills}"]\n')
    client = RecordingClient()
    async with acpd(tmp_path, data_dir=data_dir, workspace=workspace, script=script,
                    client=client, args=config) as run:
        session_id = await run.open_session()
        assert await run.prompt(session_id, "use the skills") == "end_turn"
        notes, ws_skill, no_name, bad_yaml, escape, missing, traversal = finals(client)
    assert notes["status"] == "completed"
    assert "One line per change, newest first." in card_text(notes)
    assert "---" not in card_text(notes)
    assert ws_skill["status"] == "completed" and "Workspace steps." in card_text(ws_skill)
    assert no_name["status"] == "failed" and "lacks name" in card_text(no_name)
    assert bad_yaml["status"] == "failed" and "not valid YAML" in card_text(bad_yaml)
    assert escape["status"] == "failed" and "outside" in card_text(escape)
    assert "TOP-SECRET-CONTENT" not in json.dumps(client.updates)
    assert missing["status"] == "failed" and "release-notes" in card_text(missing)
    assert traversal["status"] == "failed"


# --- scheduler -------------------------------------------------------------------------------

SCHEDULER_CONFIG = "[tools.native.scheduler]\nmin_period_secs = 1\n"


def due_messages(client: RecordingClient, word: str) -> list[int]:
    """Indexes (in arrival order) of the agent messages announcing a due task with `word`."""
    return [
        i for i, (kind, u) in enumerate(client.events)
        if kind == "update" and u.get("sessionUpdate") == "agent_message_chunk"
        and "Scheduled task" in u["content"].get("text", "") and word in u["content"]["text"]
    ]


async def test_a_task_due_during_a_turn_is_said_at_once(
    tmp_path: Path, data_dir: Path, workspace: Path
) -> None:
    script = write_script(tmp_path / "s.json", [
        {"tool_calls": [
            {"name": "scheduler", "arguments": {"action": "schedule",
                                                "message": "check the build", "delay_seconds": 1}},
            {"name": "scheduler", "arguments": {"action": "schedule",
                                                "message": "next week", "delay_seconds": 604800}},
        ]},
        {"delay": 8, "text": "done"},  # the model thinks for a while: the task comes due
    ])
    client = RecordingClient()
    async with acpd(tmp_path, data_dir=data_dir, workspace=workspace, script=script,
                    client=client, args=config_file(tmp_path, SCHEDULER_CONFIG)) as run:
        session_id = await run.open_session()
        assert await run.prompt(session_id, "remind me") == "end_turn"
        tasks = data_dir / "native" / "native.sqlite3"
        with sqlite3.connect(tasks) as db:
            assert db.execute("SELECT message FROM tasks").fetchall() == [("next week",)]
        await run.raw("session/delete", {"sessionId": session_id})
        with sqlite3.connect(tasks) as db:  # the session's tasks went with it
            assert db.execute("SELECT count(*) FROM tasks").fetchone()[0] == 0
    scheduled, _ = finals(client)
    assert scheduled["status"] == "completed" and "check the build" in card_text(scheduled)
    (said,) = due_messages(client, "check the build")
    done = next(i for i, (kind, u) in enumerate(client.events) if kind == "update"
                and u.get("sessionUpdate") == "agent_message_chunk"
                and u["content"].get("text") == "done")
    assert said < done


async def test_due_tasks_wait_for_the_next_prompt_and_survive_a_restart(
    tmp_path: Path, data_dir: Path, workspace: Path
) -> None:
    script = write_script(tmp_path / "s.json", [
        {"tool_calls": [
            {"name": "scheduler", "arguments": {"action": "schedule", "message": "tick",
                                                "every_seconds": 1}},
            {"name": "scheduler", "arguments": {"action": "schedule", "message": "later",
                                                "delay_seconds": 1}},
            {"name": "scheduler", "arguments": {"action": "schedule", "message": "x",
                                                "every_seconds": 0.1}},
            {"name": "scheduler", "arguments": {"action": "schedule", "message": "x",
                                                "delay_seconds": 10 ** 9}},
            {"name": "scheduler", "arguments": {"action": "schedule", "message": "x"}},
            {"name": "scheduler", "arguments": {"action": "cancel", "task_id": "task_nope"}},
        ]},
        {"text": "scheduled"},
        {"text": "second"},
    ])

    args = config_file(tmp_path, SCHEDULER_CONFIG)
    client = RecordingClient()
    async with acpd(tmp_path, data_dir=data_dir, workspace=workspace, script=script,
                    client=client, args=args, name="first") as run:
        session_id = await run.open_session()
        assert await run.prompt(session_id, "schedule things") == "end_turn"
        statuses = [f["status"] for f in finals(client)]
        assert statuses == ["completed", "completed", "failed", "failed", "failed", "failed"]
        texts = [card_text(f) for f in finals(client)]
        assert "every_seconds" in texts[2] and "delay_seconds" in texts[3]
        assert "give delay_seconds" in texts[4] and "no pending task" in texts[5]
        await asyncio.sleep(2.5)  # both come due while the session is idle: nothing is said
        assert due_messages(client, "tick") == [] and due_messages(client, "later") == []
        assert await run.prompt(session_id, "next") == "end_turn"
        # Said at the start of the next prompt, before its reply, once each (the missed
        # periods collapse; a slow turn may hear the next period of "tick" live as well).
        ticks = len(due_messages(client, "tick"))
        assert ticks >= 1 and len(due_messages(client, "later")) == 1
        reply = next(i for i, (kind, u) in enumerate(client.events) if kind == "update"
                     and u.get("sessionUpdate") == "agent_message_chunk"
                     and u["content"].get("text") == "second")
        assert due_messages(client, "tick")[0] < reply and due_messages(client, "later")[0] < reply
    # A new daemon: the periodic task is still there, due again, said when the session loads.
    # (The loaded session keeps its model, this script, read afresh by the new daemon.)
    write_script(script, [call("scheduler", action="list"), {"text": "listed"}])
    await asyncio.sleep(1.5)
    client = RecordingClient()
    async with acpd(tmp_path, data_dir=data_dir, workspace=workspace, script=script,
                    client=client, args=args, name="second") as run:
        await run.initialize()
        await run.conn.load_session(cwd=str(workspace), session_id=session_id, mcp_servers=[])
        # The load replays the first daemon's messages, then says the task due again.
        assert len(due_messages(client, "tick")) == ticks + 1
        assert len(due_messages(client, "later")) == 1  # a one-off task is said once only
        assert await run.prompt(session_id, "list") == "end_turn"
        listed = client.final(client.tool_calls()[-1]["toolCallId"])
        assert listed["status"] == "completed" and "tick" in card_text(listed)
        assert "later" not in card_text(listed)


# --- compress_context ------------------------------------------------------------------------


async def test_compress_context_summarises_older_turns_into_knowledge(
    tmp_path: Path, data_dir: Path, workspace: Path
) -> None:
    script = write_script(tmp_path / "s.json", [
        {"text": "Noted: the codeword is PELICAN."},
        {"text": "Noted: the colour is teal."},
        call("compress_context", focus="names"),
        {"text": "The user set the codeword PELICAN and the colour teal."},  # the summariser
        {"text": "compressed"},
    ])
    client = RecordingClient()
    async with acpd(tmp_path, data_dir=data_dir, workspace=workspace, script=script,
                    client=client) as run:
        session_id = await run.open_session()
        for prompt in ("the codeword is PELICAN", "the colour is teal", "compress now"):
            assert await run.prompt(session_id, prompt) == "end_turn"
        (card,) = finals(client)
    assert card["status"] == "completed", card
    assert card["rawOutput"]["compressed"] == 4
    assert card["rawOutput"]["strategy"] == "autonomous"
    assert "codeword PELICAN" in card_text(card)
    messages = stored_messages(data_dir, session_id)
    assert messages[0] == {**messages[0], "role": "user", "text": "compress now"}
    assert not any("codeword is PELICAN" in m["text"] for m in messages)
    with sqlite3.connect(data_dir / "native" / "native.sqlite3") as db:
        rows = db.execute(
            "SELECT session_id, summary, strategy, messages FROM knowledge"
        ).fetchall()
    assert rows == [(session_id, "The user set the codeword PELICAN and the colour teal.",
                     "autonomous", 4)]
    # Deleting the session deletes its Knowledge too.
    async with acpd(tmp_path, data_dir=data_dir, workspace=workspace, script=script,
                    name="delete") as run:
        await run.initialize()
        await run.raw("session/delete", {"sessionId": session_id})
    with sqlite3.connect(data_dir / "native" / "native.sqlite3") as db:
        assert db.execute("SELECT count(*) FROM knowledge").fetchone()[0] == 0


async def test_a_failed_or_recursive_compress_keeps_every_message(
    tmp_path: Path, data_dir: Path, workspace: Path
) -> None:
    script = write_script(tmp_path / "s.json", [
        {"text": "hello back"},
        call("compress_context"), {"error": "the provider is down"}, {"text": "after error"},
        call("compress_context"), call("compress_context"), {"text": "after recursion"},
        call("compress_context"), {"text": "   "}, {"text": "after empty"},
    ])
    client = RecordingClient()
    async with acpd(tmp_path, data_dir=data_dir, workspace=workspace, script=script,
                    client=client) as run:
        session_id = await run.open_session()
        assert await run.prompt(session_id, "hello") == "end_turn"
        for n in range(3):
            assert await run.prompt(session_id, f"compress {n}") == "end_turn"
        failed_error, failed_recursion, failed_empty = finals(client)
    for card in (failed_error, failed_recursion, failed_empty):
        assert card["status"] == "failed" and "the conversation is unchanged" in card_text(card)
    assert "the provider is down" in card_text(failed_error)
    assert "never recursive" in card_text(failed_recursion)
    assert "empty summary" in card_text(failed_empty)
    messages = stored_messages(data_dir, session_id)
    assert messages[0]["text"] == "hello" and messages[1]["text"] == "hello back"
    assert [m["text"] for m in messages if m["role"] == "user"] == [
        "hello", "compress 0", "compress 1", "compress 2"]
    with sqlite3.connect(data_dir / "native" / "native.sqlite3") as db:
        assert db.execute("SELECT count(*) FROM knowledge").fetchone()[0] == 0


async def test_a_configured_compress_model_summarises_instead_of_the_session_model(
    tmp_path: Path, data_dir: Path, workspace: Path
) -> None:
    summariser = write_script(tmp_path / "summariser.json",
                              [{"text": "Summary written by the compress model."}])
    script = write_script(tmp_path / "s.json", [
        {"text": "first answer"}, call("compress_context"), {"text": "after compressing"},
    ])
    config = config_file(tmp_path, f'[tools.native.compress]\nmodel = "scripted:{summariser}"\n')
    client = RecordingClient()
    async with acpd(tmp_path, data_dir=data_dir, workspace=workspace, script=script,
                    client=client, args=config) as run:
        session_id = await run.open_session()
        assert await run.prompt(session_id, "first") == "end_turn"
        assert await run.prompt(session_id, "compress") == "end_turn"
        (card,) = finals(client)
        assert card["status"] == "completed" and card["rawOutput"]["compressed"] == 2
        # The session's own script was not spent on the summary: its next turn came next.
        assert "after compressing" in client.texts()
    with sqlite3.connect(data_dir / "native" / "native.sqlite3") as db:
        (row,) = db.execute("SELECT summary FROM knowledge").fetchall()
    assert row == ("Summary written by the compress model.",)
    gone = tmp_path / "gone.json"
    broken = config_file(tmp_path, f'[tools.native.compress]\nmodel = "scripted:{gone}"\n')
    client = RecordingClient()
    write_script(script, [{"text": "one"}, call("compress_context"), {"text": "two"}])
    async with acpd(tmp_path, data_dir=data_dir, workspace=workspace, script=script,
                    client=client, args=broken, name="broken") as run:
        session_id = await run.open_session()
        assert await run.prompt(session_id, "first") == "end_turn"
        assert await run.prompt(session_id, "compress") == "end_turn"
        (card,) = finals(client)
    assert card["status"] == "failed" and "summarising model cannot be used" in card_text(card)
    assert len(stored_messages(data_dir, session_id)) == 6
