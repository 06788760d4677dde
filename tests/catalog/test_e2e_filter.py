"""Schema filtering through the real daemon (BM25, offline): what each model request carried,
the tools always included, a tool called this turn kept, the /status line."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.catalog.e2e import names, requests, setup, status
from tests.e2e.client import RecordingClient
from tests.e2e.harness import acpd

pytestmark = [pytest.mark.anyio, pytest.mark.slow]

CONFIG = """
[agent.catalog]
enabled = true
top_k = 1
always_on = ["read"]
"""
GREP_QUERY = "search the contents of every file for TODO with a regular expression"


async def test_filtered_catalog_per_request(
    tmp_path: Path, data_dir: Path, workspace: Path
) -> None:
    args, script = setup(tmp_path, CONFIG, [
        {"text": "salut"},                                        # prompt 1
        {"tool_calls": [{"name": "list_directory", "arguments": {"path": "."}}]},  # prompt 2
        {"text": "found it"},
        {"text": "ok"},                                           # prompt 3
    ])
    client = RecordingClient()
    async with acpd(tmp_path, data_dir=data_dir, workspace=workspace, client=client,
                    script=script, args=args) as run:
        session_id = await run.open_session()
        assert await run.prompt(session_id, "/status") == "end_turn"
        assert status(client.texts()) == "Tools: no model request yet in this session"
        # No word in common with any tool: no query vector, so nothing is filtered.
        assert await run.prompt(session_id, "bonjour tout le monde") == "end_turn"
        assert await run.prompt(session_id, "/status") == "end_turn"
        unfiltered = status(client.texts())
        assert await run.prompt(session_id, GREP_QUERY) == "end_turn"
        (card,) = client.tool_calls()
        assert client.final(card["toolCallId"])["status"] == "completed"
        assert await run.prompt(session_id, "/status") == "end_turn"
        referenced = status(client.texts())
        assert await run.prompt(session_id, "now use find_path and move_path") == "end_turn"
        assert await run.prompt(session_id, "/status") == "end_turn"
        named = status(client.texts())
    everything, first, second, third = requests(tmp_path)
    full = names(everything)
    assert len(full) > 10 and {"read", "grep", "list_directory", "find_path"} <= set(full)
    assert unfiltered == f"Tools: {len(full)} of {len(full)} sent (no query vector (no word " \
        "of the message is in any tool): no filtering)"
    # read: always on; grep: the best match. Catalog order is kept.
    assert names(first) == ["read", "grep"]
    # The model called list_directory (not sent): the next request of the turn carries it.
    assert names(second) == ["read", "list_directory", "grep"]
    assert referenced == (f"Tools: 3 of {len(full)} sent (BM25: 1 always on, "
                          "1 already called this turn, 1 ranked)")
    # Named tools are always sent; a new prompt starts a new turn (list_directory is gone).
    assert {"read", "find_path", "move_path"} <= set(names(third))
    assert "list_directory" not in names(third) and len(names(third)) == 4
    assert named.startswith(f"Tools: 4 of {len(full)} sent (BM25: 1 always on, 2 named")
