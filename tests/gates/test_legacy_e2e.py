"""Legacy text invocation through the real daemon: calls written in the reply's text run
through the same pipeline (policy, cards, audit), results go back as text."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.gates.daemon import DENIED, run_turns, shown

pytestmark = pytest.mark.anyio

LEGACY = '[tools.legacy]\nmodels = ["scripted:*legacy*"]\n'
HALLUCINATION = "[tools.hallucination]\nenabled = true\n"


def text(value: str) -> dict[str, str]:
    return {"text": value}


async def test_a_bash_block_and_a_tool_call_run_through_the_pipeline(
    tmp_path: Path, data_dir: Path, workspace: Path
) -> None:
    reply = (
        "I will look.\n```bash\necho legacy > out.txt\n```\nThen read it:\n"
        '```tool_call\n{"tool_id": "read", "params": {"path": "hello.txt"}}\n```\n'
        "```sh\necho shown-only > no.txt\n```\n"
    )
    done = await run_turns(tmp_path, data_dir, workspace, [text(reply), text("done")],
                           LEGACY, model="legacy.json")
    assert done.stop == "end_turn"
    assert (workspace / "out.txt").read_text() == "legacy\n"
    assert not (workspace / "no.txt").exists()
    bash, read = done.lines
    assert (bash["name"], read["name"]) == ("bash", "read")
    assert all(x["phase"] == "executor" and x["caller_id"] == f"acp:{done.session_id}"
               for x in done.lines)
    cards = done.client.tool_calls()
    assert cards[0]["rawInput"]["command"] == "echo legacy > out.txt"
    assert cards[1]["rawInput"] == {"path": "hello.txt"}
    assert all(f["status"] == "completed" for f in done.finals())


@pytest.mark.parametrize("block", [
    f"```bash\n{DENIED}\n```",
    f"~~~Bash title=x\n{DENIED}\n~~~",
    f"  ```bash\n  {DENIED}\n  ```",
    f'```tool_call\n{{"tool_id": "bash", "params": {{"command": "{DENIED}"}}}}\n```',
    f'```json\n{{"name": "bash", "arguments": {{"command": "{DENIED}"}}}}\n```',
    f'Running it:\n{{"tool_id": "bash",\n "params": {{"command": "{DENIED}"}}}}',
])
async def test_a_denied_command_in_a_legacy_block_stays_denied(
    block: str, tmp_path: Path, data_dir: Path, workspace: Path
) -> None:
    done = await run_turns(tmp_path, data_dir, workspace, [text(block), text("done")],
                           LEGACY, model="legacy.json")
    (line,) = done.lines
    assert line["decision"] == "deny" and line["decided_by"] == "policy"
    assert "network" in line["shell_policy"]["rules"]
    (final,) = done.finals()
    assert final["status"] == "failed" and shown(final).startswith("Blocked:")
    assert not (workspace / "got.txt").exists()


@pytest.mark.parametrize("reply", [
    "```bash\necho cut > cut.txt",  # cut off: never closed
    "````markdown\n```bash\necho inner > cut.txt\n```\n````",  # an example inside a block
    '```tool_call\n{"tool_id": "bash", "params": {"command": "echo x > cut.txt"}\n```',
    '```tool_call\n{"tool_id": "bash", "params": "echo x > cut.txt"}\n```',
])
async def test_blocks_that_are_not_whole_calls_do_not_run(
    reply: str, tmp_path: Path, data_dir: Path, workspace: Path
) -> None:
    done = await run_turns(tmp_path, data_dir, workspace, [text(reply), text("done")],
                           LEGACY, model="legacy.json")
    assert not (workspace / "cut.txt").exists()
    assert done.lines == [] and done.client.tool_calls() == []
    assert done.stop == "end_turn"


async def test_a_native_model_does_not_run_blocks_from_its_text(
    tmp_path: Path, data_dir: Path, workspace: Path
) -> None:
    done = await run_turns(tmp_path, data_dir, workspace,
                           [text("```bash\necho x > native.txt\n```")], LEGACY)
    assert not (workspace / "native.txt").exists() and done.lines == []


async def test_missing_paths_get_a_warning_not_a_block(
    tmp_path: Path, data_dir: Path, workspace: Path
) -> None:
    reply = (
        "```bash\ncat ghost/notes.md src/main.py > copy.txt\n```\n"
        '```tool_call\n{"tool_id": "read", "params": {"path": "src/invented.py"}}\n```\n'
        '```tool_call\n{"tool_id": "read", "params": {"path": "hello.txt"}}\n```\n'
    )
    done = await run_turns(tmp_path, data_dir, workspace, [text(reply), text("done")],
                           LEGACY + HALLUCINATION, model="legacy.json")
    bash, invented, real = done.lines
    assert bash["decision"] == "allow" and (workspace / "copy.txt").exists()  # it still ran
    assert bash["gates"]["hallucination"] == ["ghost/notes.md"]
    assert invented["gates"]["hallucination"] == ["src/invented.py"]
    assert real["gates"] is None
