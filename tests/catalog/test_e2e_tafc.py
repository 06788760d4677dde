"""TAFC through the real daemon: the field in the schema sent, never in a card, the audit, the
session store or the log; a call carrying only the field is skipped."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.catalog.e2e import files_holding, names, requests, setup, status
from tests.e2e.client import RecordingClient
from tests.e2e.harness import acpd

pytestmark = [pytest.mark.anyio, pytest.mark.slow]

ENTRIES = [{"content": "Read the file", "status": "in_progress", "priority": "high"}]
THOUGHT = "SECRET-REASONING-7f3a"


async def test_tafc_field_is_offered_stripped_and_never_kept(
    tmp_path: Path, data_dir: Path, workspace: Path
) -> None:
    args, script = setup(
        tmp_path,
        "[agent.catalog.tafc]\nenabled = true\ncomplexity_threshold = 0.5\n",
        [
            {"tool_calls": [{"name": "update_plan",
                             "arguments": {"_tafc_think": THOUGHT + "-1", "entries": ENTRIES}}]},
            {"tool_calls": [{"name": "update_plan",
                             "raw_arguments": f'{{"_tafc_think_2": "{THOUGHT}-2"}}'}]},
            {"text": "done"},
        ],
    )
    client = RecordingClient()
    async with acpd(tmp_path, data_dir=data_dir, workspace=workspace, client=client,
                    script=script, args=args, env={"ACPD_LOG": "DEBUG"}) as run:
        session_id = await run.open_session()
        assert await run.prompt(session_id, "plan the work") == "end_turn"
        assert await run.prompt(session_id, "/status") == "end_turn"
        line = status(client.texts())
        # One card: the call that carried only the reasoning field got none and ran nothing.
        (card,) = client.tool_calls()
        assert card["rawInput"] == {"entries": ENTRIES}
        plans = [u for u in client.updates if u["sessionUpdate"] == "plan"]
        assert [p["entries"] for p in plans] == [ENTRIES]
        daemon_log = run.daemon_log()
    first, _, third = requests(tmp_path)
    thinking = [t["name"] for t in first["tools"]
                if "_tafc_think" in t["parameters"].get("properties", {})]
    assert thinking == ["update_plan"]
    plan = next(t for t in first["tools"] if t["name"] == "update_plan")
    assert next(iter(plan["parameters"]["properties"])) == "_tafc_think"
    assert "_tafc_think" not in plan["parameters"].get("required", [])
    assert names(first) == names(third)
    assert "reasoning field in update_plan" in line
    # Nowhere at rest and nowhere in the log, the editor's wire included.
    assert THOUGHT not in daemon_log
    assert THOUGHT not in (tmp_path / "run.wire.log").read_text(errors="replace")
    assert files_holding(data_dir, THOUGHT) == []


async def test_threshold_nan_means_the_default(
    tmp_path: Path, data_dir: Path, workspace: Path
) -> None:
    args, script = setup(tmp_path, "[agent.catalog.tafc]\nenabled = true\n"
                         "complexity_threshold = nan\n", [{"text": "hi"}])
    async with acpd(tmp_path, data_dir=data_dir, workspace=workspace, script=script,
                    args=args) as run:
        session_id = await run.open_session()
        assert await run.prompt(session_id, "hello") == "end_turn"
    (request,) = requests(tmp_path)
    # 0.6: no built-in tool is that complex (update_plan, the most complex, scores 0.55).
    assert not any("_tafc_think" in t["parameters"].get("properties", {})
                   for t in request["tools"])
