"""Item 7: a running command's output is streamed into its card only when it changed, in
bounded updates. Through the real daemon on the local path: 1.3 MB of output (past the
1 MiB byte limit) and then a silent `sleep 3` used to re-send the whole 1 MiB tail every
quarter second (12 updates, 12.6 MB); now no two streamed updates are the same, each is at
most the live view's size, and the silence sends nothing."""

from __future__ import annotations

import itertools
import json
from pathlib import Path

import pytest

from acpd.tools.output import LIVE_CHARS
from tests.e2e.client import RecordingClient
from tests.e2e.harness import acpd, caps, write_script
from tests.guards.conftest import bash_turns

pytestmark = pytest.mark.anyio

COMMAND = "yes 0123456789abcdefghijklmnopqrstuvwxyz | head -c 1300000; sleep 3; echo the-end"


@pytest.mark.slow
async def test_a_silent_command_past_the_limit_sends_nothing_new(
    tmp_path: Path, data_dir: Path, workspace: Path
) -> None:
    client = RecordingClient()
    script = write_script(tmp_path / "s.json", bash_turns(COMMAND))
    async with acpd(tmp_path, data_dir=data_dir, workspace=workspace, script=script,
                    client=client) as run:
        session = await run.open_session(caps(terminal=False))
        assert await run.prompt(session, "go") == "end_turn"
    (call,) = client.tool_calls()
    # After the update that marks it running, every in_progress update is streamed output.
    live = [u for u in client.tool_updates(call["toolCallId"])
            if u.get("status") == "in_progress"][1:]
    texts = [u["content"][-1]["content"]["text"] for u in live]
    sizes = [len(json.dumps(u)) for u in live]
    assert texts, "the output was streamed"
    # Nothing changed during the silent sleep: nothing was sent again.
    assert all(a != b for a, b in itertools.pairwise(texts)), (len(texts), sizes)
    assert max(sizes) < LIVE_CHARS + 4096, sizes
    assert sum(sizes) < 1 << 20, f"{len(sizes)} updates, {sum(sizes)} bytes"
    final = client.final(call["toolCallId"])
    assert "the-end" in json.dumps(final)
