"""Item 10: a failing shell command the taxonomy classifies (exit 126, exit 127, "No such file
or directory") reaches the model as a `[tool_error]` block after
its output, and its audit line carries the category; every audit line says the workspace's
trust level. Through the real daemon, on the local path and in the editor's terminal."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.e2e.client import RecordingClient
from tests.e2e.harness import acpd, caps, write_script
from tests.guards.conftest import audit_lines, bash_turns
from tests.output.conftest import messages

pytestmark = pytest.mark.anyio

CASES = [
    # (command, category, what the message names)
    ("no_such_program_q7 --help", "PermanentFailure", "exit code 127"),
    ("./not-executable.sh", "PolicyBlocked", "exit code 126"),
    ("cat missing-file.txt", "PermanentFailure", "No such file or directory"),
    ("ls ./nowhere/at/all", "PermanentFailure", "No such file or directory"),
    ("cd missing-dir && ls", "PermanentFailure", "No such file or directory"),
]


@pytest.mark.parametrize("terminal", [False, True], ids=["local", "editor-terminal"])
async def test_classified_failures_are_tool_errors_in_model_and_audit(
    terminal: bool, tmp_path: Path, data_dir: Path, workspace: Path
) -> None:
    script_file = workspace / "not-executable.sh"
    script_file.write_text("#!/bin/sh\necho hi\n")
    script_file.chmod(0o644)
    commands = [c for c, _, _ in CASES] + ["false", "echo fine"]
    script = write_script(tmp_path / "s.json", bash_turns(*commands))
    async with acpd(tmp_path, data_dir=data_dir, workspace=workspace, script=script,
                    client=RecordingClient()) as run:
        session = await run.open_session(caps(terminal=terminal))
        assert await run.prompt(session, "go") == "end_turn"
    results = [m["text"] for m in messages(data_dir, session) if m["role"] == "tool"]
    lines = [line for line in audit_lines(data_dir) if line["name"] == "bash"]
    assert len(results) == len(lines) == len(commands)
    for (command, category, named), text, line in zip(CASES, results, lines, strict=False):
        assert "[tool_error]" in text, (command, text)
        block = text[text.index("[tool_error]"):]
        assert f"category: {category}" in block and named in block, (command, block)
        assert line["error_category"] == category, (command, line)
        assert line["trust"] in ("untrusted", "provisional", "trusted")
    for text, line in zip(results[len(CASES):], lines[len(CASES):], strict=True):
        # A plain non-zero exit (`false`) and a success are answers, not tool errors.
        assert "[tool_error]" not in text and line["error_category"] is None
    assert all("trust" in line for line in audit_lines(data_dir))
