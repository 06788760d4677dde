"""Stopping while commands run whose process groups are slow to go (issue 9, item 1).

The daemon gets stdin EOF or SIGTERM while a local command runs that either leaves a tree of
background sleeps (one of them double-forked) or ignores SIGTERM altogether. The stop must be
ordered: new work refused, every command killed (TERM, then KILL within the grace), every card
closed with a final update, the results written, and only then the store closed. So: the
daemon exits (code 0) within 3 s, says nothing about a closed database, leaves no process
behind (found by a marker argument in /proc), and a new reader of the store finds the card
closed and a tool result for the call.
"""

from __future__ import annotations

import asyncio
import os
import signal
import sqlite3
import uuid
from pathlib import Path

import orjson
import pytest

from tests.e2e.client import RecordingClient, always
from tests.e2e.harness import acpd, caps, text, wait_for_file_lines, write_script

pytestmark = [pytest.mark.anyio, pytest.mark.slow]

COMMANDS = {
    # A tree: two background sleeps and one double-forked (reparented, same group).
    "tree": "sh -c 'sleep {m} & sleep {m} & (sleep {m} &); echo started >> started.txt; wait'",
    # TERM is ignored by the shell and, inherited, by its sleeps: only KILL ends them.
    "ignores-term": "trap '' TERM; sleep {m} & sleep {m} & echo started >> started.txt; wait",
}


def marked(marker: str) -> list[int]:
    """Pids of live (non-zombie) processes whose command line holds `marker`."""
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            cmdline = Path(f"/proc/{entry}/cmdline").read_bytes()
            state = Path(f"/proc/{entry}/stat").read_text().rsplit(")", 1)[1].split()[0]
        except OSError:
            continue
        if marker.encode() in cmdline and state not in ("Z", "X"):
            found.append(int(entry))
    return found


def stored(data_dir: Path, session_id: str) -> tuple[list[dict], list[dict]]:
    db = sqlite3.connect(data_dir / "sessions.sqlite3")
    try:
        rows = [
            [orjson.loads(p) for (p,) in db.execute(
                f"SELECT payload FROM {table} WHERE session_id = ? ORDER BY seq", (session_id,)
            )]
            for table in ("updates", "messages")
        ]
    finally:
        db.close()
    return rows[0], rows[1]


@pytest.mark.parametrize("kind", sorted(COMMANDS))
@pytest.mark.parametrize("stop", ["stdin-eof", "sigterm"])
async def test_a_stop_kills_slow_groups_closes_cards_and_writes_results_first(
    kind: str, stop: str, tmp_path: Path, data_dir: Path, workspace: Path
) -> None:
    marker = f"29{uuid.uuid4().int % 10**6:06d}"  # a sleep length no other process uses
    command = COMMANDS[kind].format(m=marker)
    script = write_script(
        tmp_path / "s.json", [{"tool_calls": [{"name": "bash", "arguments": {"command": command}}]}]
    )
    client = RecordingClient(answer=always("allow_once"), terminal_enabled=False)
    try:
        async with acpd(
            tmp_path, data_dir=data_dir, workspace=workspace, client=client, script=script,
        ) as run:
            session_id = await run.open_session(caps(terminal=False))
            prompt = asyncio.ensure_future(
                run.conn.prompt(session_id=session_id, prompt=text("go"))
            )
            await wait_for_file_lines(workspace / "started.txt", 1)
            assert len(marked(marker)) >= 2
            if stop == "sigterm":
                run.process.send_signal(signal.SIGTERM)
            else:
                stdin = run.process.stdin
                assert stdin is not None
                stdin.write_eof()
            # Its children sleep for years: exiting within the wait proves it did not wait.
            code = await asyncio.wait_for(run.process.wait(), 30)
            survivors = marked(marker)
            with_answer = prompt
            try:
                answer = await asyncio.wait_for(with_answer, 5)
            except ConnectionError:
                pass
            else:
                assert answer.stop_reason == "cancelled"
            log = run.daemon_log()
    finally:
        for pid in marked(marker):  # never leave them to the next test
            os.kill(pid, signal.SIGKILL)
    assert code == 0, log[-3000:]
    assert survivors == [], f"processes outlived the daemon: {survivors}"
    assert "ProgrammingError" not in log and "Traceback" not in log, log[-3000:]

    # The editor saw the card closed before the daemon went.
    (card,) = client.tool_calls()
    final = client.final(card["toolCallId"])
    assert final["status"] == "failed"
    # The store has the same: the final update and one tool result per model call.
    updates, messages = stored(data_dir, session_id)
    statuses = [u.get("status") for u in updates if u.get("toolCallId") == card["toolCallId"]]
    assert statuses[-1] == "failed", statuses
    asked = [c["id"] for m in messages if m.get("role") == "assistant" for c in m["tool_calls"]]
    answered = [m.get("tool_call_id") for m in messages if m.get("role") == "tool"]
    assert asked and asked == answered, messages
