"""A credential a command prints reaches no one: for each kind, bash prints it in a scripted
session through the real daemon, and it is absent from what the model is given next (the
tool result in the recorded history), every tool_call/tool_call_update (content and
rawOutput, streaming ones included), everything acpd wrote on the wire, audit.jsonl and
every table of sessions.sqlite3, while a warning names the kind.

The values are assembled at run time (tests/filters/test_secrets.py): the repository holds
no secret-shaped string. The command is `cat` of a file, so the value is never in the call's
own arguments.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.e2e.client import RecordingClient
from tests.e2e.harness import acpd, caps, write_script
from tests.filters.test_secrets import CASES
from tests.output.conftest import all_tables, messages

pytestmark = pytest.mark.anyio


def needles(value: str) -> list[str]:
    """What must not appear: the value, and each of its lines (JSON escapes newlines, so a
    leaked multi-line key would not show as the whole value)."""
    return [value, *(line for line in value.splitlines() if len(line) >= 8)]


@pytest.mark.parametrize(
    ("kind", "line", "value"), CASES, ids=[f"{c[0]}-{i}" for i, c in enumerate(CASES)]
)
async def test_a_printed_credential_is_redacted_everywhere(
    kind: str, line: str, value: str, tmp_path: Path, data_dir: Path, workspace: Path
) -> None:
    (workspace / "deploy.txt").write_text(f"deploying\n{line.format(v=value)}\ndone\n")
    script = write_script(
        tmp_path / "s.json",
        [{"tool_calls": [{"name": "bash", "arguments": {"command": "cat deploy.txt"}}]},
         {"text": "finished"}],
    )
    client = RecordingClient()
    async with acpd(
        tmp_path, data_dir=data_dir, workspace=workspace, client=client, script=script,
    ) as run:
        # No editor terminal: the daemon runs the command and streams its output into the
        # card itself, which is the path that could leak while the command runs.
        session_id = await run.open_session(caps(terminal=False))
        assert await run.prompt(session_id, "deploy") == "end_turn"
        (call,) = client.tool_calls()
        card = client.tool_updates(call["toolCallId"])
        final = client.final(call["toolCallId"])
        wire = run.log.read_text(errors="replace")

    tool_results = [m["text"] for m in messages(data_dir, session_id) if m["role"] == "tool"]
    audit = (data_dir / "audit.jsonl").read_text()
    tables = all_tables(data_dir)
    places = {
        "model's next request (tool result in history)": "\n".join(tool_results),
        "tool_call updates": json.dumps(card),
        "wire": wire,
        "audit.jsonl": audit,
        **{f"sessions.sqlite3 {name}": "\n".join(rows) for name, rows in tables.items()},
    }
    for needle in needles(value):
        for place, content in places.items():
            assert needle not in content, f"{kind} leaked into {place}"

    (result,) = tool_results
    assert "[security]" in result and kind in result
    assert "deploying" in result and "done" in result  # only the value goes
    shown = final["content"][-1]["content"]["text"]
    assert "[security]" in shown and kind in shown
    assert "[REDACTED:" in final["rawOutput"]["stdout"]
    (record,) = [json.loads(x) for x in audit.splitlines() if call["toolCallId"] in x] or [{}]
    assert kind in record["output"]["secrets"]
    # The session store kept the redacted card (what a session/load replays).
    assert any("[security]" in row for row in tables["updates"])
