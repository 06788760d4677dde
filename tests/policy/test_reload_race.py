"""Issue 9, item 6, against the real daemon: an overlay written a few ms around the first bash
decision of a plugin set must be used, by that decision or by a reload that is announced, and
never lost until the file changes again.

One daemon, many trials: every trial opens a session in a fresh trusted workspace, which has
its own plugin set (`<ws>/.acpd/plugins`), so its first command builds a new policy handle and
starts its watcher. The trials write the overlay at delays spread over the time a first
decision takes (measured in a warm-up session), so some writes land before the build reads the
plugins, some during the build, some between the build and the start of the watcher (the lost
ones, before the fix) and some after.
"""

from __future__ import annotations

import asyncio
import functools
import os
import time
from pathlib import Path
from typing import Any

import pytest

from tests.e2e.client import RecordingClient, always
from tests.e2e.harness import Run, acpd, text, write_script

pytestmark = pytest.mark.anyio
TRIALS = 24
RELOADED = "acpd/policy_reloaded"
OVERLAY = '[shell]\nblocked_commands = ["touch"]\n'


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


def write_overlay(workspace: Path) -> None:
    folder = workspace / ".acpd" / "plugins" / "late"
    folder.mkdir(mode=0o755)
    path = folder / "plugin.toml"
    path.write_text(OVERLAY)
    os.chmod(path, 0o644)


def overlay_loaded(client: RecordingClient, workspace: Path) -> bool:
    source = str(workspace / ".acpd" / "plugins" / "late")
    return any(
        not r["errors"] and any(s.startswith(source) for s in r["sources"])
        for r in client.calls(RELOADED)
    )


def touch_turns(count: int) -> list[dict[str, Any]]:
    turns: list[dict[str, Any]] = []
    for name in ("a", "b") * count:
        turns += [{"tool_calls": [{"name": "bash", "arguments": {"command": f"touch {name}.txt"}}]},
                  {"text": name}]
    return turns


def session_calls(client: RecordingClient, session_id: str) -> list[dict[str, Any]]:
    return [c for c in client.tool_calls() if c["sessionId"] == session_id]


async def fresh_session(run: Run, root: Path, name: str) -> tuple[str, Path]:
    workspace = root / name
    (workspace / ".acpd" / "plugins").mkdir(parents=True)
    return await run.new_session(workspace), workspace


@pytest.mark.slow
async def test_an_overlay_written_around_the_first_decision_is_not_lost(
    tmp_path: Path, data_dir: Path
) -> None:
    trusted = tmp_path / "trusted"
    trusted.mkdir()
    config = tmp_path / "acpd.toml"
    config.write_text(f'[tools.shell]\nplugin_dirs = []\ntrusted_workspaces = ["{trusted}"]\n')
    script = write_script(tmp_path / "s.json", touch_turns(TRIALS + 2))
    client = RecordingClient(answer=always("allow_once"))
    lost: list[int] = []
    async with acpd(tmp_path, data_dir=data_dir, workspace=trusted, client=client,
                    args=("--model", f"scripted:{script}", "--config", str(config))) as run:
        await run.initialize()
        # Warm-up: how long a first decision of a new plugin set takes here.
        session_id, workspace = await fresh_session(run, trusted, "warm")
        start = time.monotonic()
        prompt = asyncio.ensure_future(run.conn.prompt(session_id=session_id,
                                                       prompt=text("one")))
        await client.wait_for(lambda: bool(session_calls(client, session_id)), 30)
        latency = time.monotonic() - start
        await prompt
        assert await run.prompt(session_id, "two") == "end_turn"
        for trial in range(TRIALS):
            session_id, workspace = await fresh_session(run, trusted, f"ws{trial}")
            prompt = asyncio.ensure_future(run.conn.prompt(session_id=session_id,
                                                           prompt=text("one")))
            await asyncio.sleep(latency * trial / TRIALS)
            await asyncio.to_thread(write_overlay, workspace)
            assert (await prompt).stop_reason == "end_turn"
            first = session_calls(client, session_id)[0]
            if client.final(first["toolCallId"])["status"] == "completed":
                # decided without the overlay: a reload must bring it in
                try:
                    await client.wait_for(functools.partial(overlay_loaded, client, workspace), 5)
                except TimeoutError:
                    lost.append(trial)
            assert await run.prompt(session_id, "two") == "end_turn"
            second = session_calls(client, session_id)[1]
            if trial not in lost:
                assert client.final(second["toolCallId"])["status"] == "failed"
                assert not (workspace / "b.txt").exists()
    assert lost == [], f"overlays lost in trials {lost} of {TRIALS} (latency {latency:.3f}s)"
