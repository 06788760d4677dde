"""The real `acpd serve` driven over ACP v2 by the official TypeScript SDK's experimental v2
client (tests/e2e/ts/client_v2.mjs), which parses every message with its own v2 schemas;
the wire log is validated against schema/v2 as well."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.e2e.harness import daemon_env, write_script
from tests.e2e.schema import REPO, TS_DIR, assert_valid_log, read_log

pytestmark = [pytest.mark.node, pytest.mark.slow]

COMMAND = "python3 -c 'print(7 * 6)' > ts-answer.txt"


def run_v2_client(tmp_path: Path, data_dir: Path, workspace: Path) -> tuple[dict[str, Any], Path]:
    node = shutil.which("node")
    if node is None or not (TS_DIR / "node_modules" / "@agentclientprotocol" / "sdk").is_dir():
        pytest.fail("Node.js and `npm ci` in tests/e2e/ts are needed (scripts/test does it)")
    script = write_script(tmp_path / "s.json", [
        {"text": "Reading.", "tool_calls": [{"name": "read", "arguments": {"path": "hello.txt"}}]},
        {"tool_calls": [{"name": "write", "arguments": {"path": "ts.txt", "content": "ts\n"}}]},
        {"tool_calls": [{"name": "bash", "arguments": {"command": COMMAND}}]},
        {"text": "done"},
    ])
    log = tmp_path / "ts-v2.wire.log"
    daemon = [sys.executable, "-m", "acpd", "serve", "--data-dir", str(data_dir),
              "--model", f"scripted:{script}"]
    config = {
        "argv": [sys.executable, "-m", "tests.e2e.tee", str(log), "--", *daemon],
        "repo": str(REPO), "workspace": str(workspace), "env": daemon_env(tmp_path),
    }
    config_path = tmp_path / "ts-v2-config.json"
    config_path.write_text(json.dumps(config))
    done = subprocess.run(
        [node, str(TS_DIR / "client_v2.mjs"), str(config_path)],
        capture_output=True, text=True, timeout=90, cwd=TS_DIR, env=os.environ.copy(),
    )
    assert done.returncode == 0, done.stderr[-4000:]
    summary: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    assert "error" not in summary, f"{summary['error']}\n{done.stderr[-4000:]}"
    return summary, log


def test_typescript_sdk_v2_client_end_to_end(
    tmp_path: Path, data_dir: Path, workspace: Path
) -> None:
    summary, log = run_v2_client(tmp_path, data_dir, workspace)
    init = summary["initialize"]
    assert init["protocolVersion"] == 2 and init["agent"] == "acpd"
    assert {"delete", "mcp", "prompt"} <= set(init["session"])
    assert {"mode", "model"} <= set(summary["configIds"])
    prompt = summary["prompt"]
    assert prompt["echoed"] == [prompt["messageId"]]
    assert prompt["stopReason"] == "end_turn"
    assert prompt["states"][0] == "running" and prompt["states"][-1] == "idle"
    assert prompt["toolCalls"] == 3 and prompt["completed"] == 3
    assert ["add"] in prompt["diffs"]
    assert "tool_call" not in prompt["kinds"] and "plan" not in prompt["kinds"]
    subjects = [p["subject"]["type"] for p in prompt["permissions"]]
    assert "command" in subjects
    assert prompt["text"].startswith("Reading.") and prompt["text"].endswith("done")
    assert (workspace / "ts.txt").read_text() == "ts\n"
    assert (workspace / "ts-answer.txt").read_text().strip() == "42"
    assert summary["resume"] == {"toolCalls": 3, "last": "state_update", "lastState": "idle"}
    assert summary["listed"] is True and summary["close"] == {}
    assert summary["otherRequests"] == []  # no fs/*, no terminal/*
    assert summary["exitCode"] == 0
    assert_valid_log(log, 2)
    assert_state_before_resume_answer(log)


def assert_state_before_resume_answer(log: Path) -> None:
    """v2: a resume sends the session's state after any replay and before its answer: the
    last update acpd wrote before each resume answer is a state update."""
    lines = read_log(log)
    resumes = {
        line.message["id"] for line in lines
        if line.direction == "C" and isinstance(line.message, dict)
        and line.message.get("method") == "session/resume"
    }
    assert resumes
    last_kind: str | None = None
    for line in lines:
        message = line.message
        if line.direction != "A" or not isinstance(message, dict):
            continue
        if message.get("method") == "session/update":
            last_kind = message["params"]["update"]["sessionUpdate"]
        elif message.get("id") in resumes and "result" in message:
            assert last_kind == "state_update", (
                f"line {line.number}: the resume answer follows {last_kind}, not the state")
