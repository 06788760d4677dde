"""The output filters reloaded by the real daemon while it runs: filters.toml beside the
config file edited between two tool calls, a rule disabled in the config, a broken file
reported in the next prompt while the rules in force stay."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from tests.e2e.client import RecordingClient
from tests.e2e.harness import Run, acpd, caps
from tests.output.test_reload import NOTES, kept, put, rule

pytestmark = pytest.mark.anyio


async def cat_notes(run: Run, client: RecordingClient, session_id: str) -> str:
    """`/bash cat notes.txt` in direct mode: what the model gets, the exit-code note cut."""
    before = len(client.tool_calls())
    assert await run.prompt(session_id, "/bash cat notes.txt") == "end_turn"
    call = client.tool_calls()[before]
    text = str(client.final(call["toolCallId"])["content"][-1]["content"]["text"])
    return text.split("\n[exit code:")[0].split("\n[shell]")[0]


async def until_shown(
    run: Run, client: RecordingClient, session_id: str, expected: str, write: tuple[Path, str]
) -> None:
    """Run the command until its output is `expected`, writing the file again every second
    (no assertion on how fast a reload is: a generous deadline)."""
    end = time.monotonic() + 30.0
    next_write = 0.0
    while True:
        if time.monotonic() >= next_write:
            put(*write)
            next_write = time.monotonic() + 1.0
        got = await cat_notes(run, client, session_id)
        if got == expected:
            return
        assert time.monotonic() < end, f"still {got[:200]!r}"


async def test_filters_reload_while_the_daemon_runs(
    tmp_path: Path, data_dir: Path, workspace: Path
) -> None:
    config = tmp_path / "acpd.toml"
    filters = tmp_path / "filters.toml"  # beside the config file
    put(config, "")
    put(filters, rule("^KEEP"))
    (workspace / "notes.txt").write_text(NOTES)
    client = RecordingClient()
    async with acpd(
        tmp_path,
        data_dir=data_dir,
        workspace=workspace,
        client=client,
        args=("--config", str(config)),
    ) as run:
        session_id = await run.open_session(caps(terminal=False))
        assert await cat_notes(run, client, session_id) == kept("KEEP")

        await until_shown(run, client, session_id, kept("OTHER"), (filters, rule("^OTHER")))
        disabled = (config, '[tools.filters]\ndisabled = ["notes"]\n')
        await until_shown(run, client, session_id, NOTES.rstrip("\n"), disabled)
        await until_shown(run, client, session_id, kept("OTHER"), (config, ""))

        # Broken: the rules in force stay, and the next prompt says why.
        put(filters, "[[rules]\n")
        end = time.monotonic() + 30.0
        while "were not reloaded" not in client.texts():
            assert await cat_notes(run, client, session_id) == kept("OTHER")
            assert time.monotonic() < end, client.texts()[-500:]
        assert "not valid TOML" in client.texts()
    assert "output filters reloaded" in run.daemon_log()
