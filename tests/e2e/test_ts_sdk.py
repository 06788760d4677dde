"""The real `acpd serve` driven by the official TypeScript SDK (tests/e2e/ts/client.mjs).

The node client runs the whole scenario and prints a JSON summary; this test asserts on it,
checks the cancelled command's process tree is gone, and validates every message acpd wrote
(logged by the tee) against the ACP v1 schema and the ordering rules.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from tests.e2e.harness import assert_wire_rules, daemon_env, marked, sleep_marker, write_script
from tests.e2e.schema import REPO, TS_DIR, assert_valid_log, read_log

pytestmark = [pytest.mark.node, pytest.mark.slow]

# python3 -c: the default shell policy asks for inline interpreter code, so this prompts.
BASH = "echo ts-bash; ls; python3 -c 'print(1)'"
MARK = sleep_marker()
# Inside the sandbox's PID namespace $$ is not a host pid: the tree is found by MARK.
TREE = (
    "echo $$ >> pids.txt; "
    f"(echo $BASHPID >> pids.txt; sleep {MARK} & echo $! >> pids.txt; wait) & "
    f"sleep {MARK} & echo $! >> pids.txt; wait"
)


def run_ts_client(tmp_path: Path, data_dir: Path, workspace: Path) -> tuple[dict[str, Any], Path]:
    node = shutil.which("node")
    if node is None or not (TS_DIR / "node_modules" / "@agentclientprotocol" / "sdk").is_dir():
        pytest.fail("Node.js and `npm ci` in tests/e2e/ts are needed (scripts/test does it)")
    script = write_script(
        tmp_path / "s.json",
        [
            {"text": "Reading.", "tool_calls": [
                {"name": "read", "arguments": {"path": "hello.txt"}}]},
            {"tool_calls": [{"name": "bash", "arguments": {"command": BASH}}]},
            {"text": "done"},
            {"tool_calls": [{"name": "bash", "arguments": {"command": TREE}}]},
        ],
    )
    log = tmp_path / "ts.wire.log"
    daemon = [sys.executable, "-m", "acpd", "serve", "--data-dir", str(data_dir),
              "--model", f"scripted:{script}"]
    config = {
        "argv": [sys.executable, "-m", "tests.e2e.tee", str(log), "--", *daemon],
        "repo": str(REPO),
        "workspace": str(workspace),
        "pidsFile": str(workspace / "pids.txt"),
        "env": daemon_env(tmp_path),
    }
    config_path = tmp_path / "ts-config.json"
    config_path.write_text(json.dumps(config))
    done = subprocess.run(
        [node, str(TS_DIR / "client.mjs"), str(config_path)],
        capture_output=True, text=True, timeout=90, cwd=TS_DIR, env=os.environ.copy(),
    )
    assert done.returncode == 0, done.stderr[-4000:]
    summary: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    assert "error" not in summary, f"{summary['error']}\n{done.stderr[-4000:]}"
    return summary, log


def test_typescript_sdk_client_end_to_end(
    tmp_path: Path, data_dir: Path, workspace: Path
) -> None:
    summary, log = run_ts_client(tmp_path, data_dir, workspace)

    assert summary["initialize"] == {
        "protocolVersion": 1, "loadSession": True,
        "sessionCapabilities": ["additionalDirectories", "close", "delete", "list", "resume"],
    }
    assert summary["modes"] == ["read-only", "ask", "auto"]

    prompt = summary["prompt"]
    assert prompt["stopReason"] == "end_turn"
    assert prompt["reads"] == [str(workspace / "hello.txt")]
    read, bash = prompt["toolCalls"]
    assert (read["title"], read["kind"]) == ("Read hello.txt", "read")
    assert read["finals"] == [
        {"status": "completed", "text": "hello from the workspace\n", "terminals": []}
    ]
    assert (bash["title"], bash["kind"]) == (f"{BASH} (in {workspace})", "execute")
    (bash_final,) = bash["finals"]
    assert bash_final["status"] == "completed"
    assert bash_final["text"].startswith("ts-bash\nhello.txt\nsrc\n")
    assert len(bash_final["terminals"]) == 1
    assert prompt["permissions"] == [
        {"title": f"{BASH} (in {workspace})",
         "kinds": ["allow_once", "allow_always", "reject_once", "reject_always"]}
    ]
    calls = prompt["terminalCalls"]
    assert calls[0] == "terminal/create" and calls.count("terminal/release") == 1
    assert calls[-1] == "terminal/release"
    assert prompt["agentText"] == "Reading.done"

    cancel = summary["cancel"]
    assert cancel["stopReason"] == "cancelled"
    assert cancel["finalStatus"] == ["failed"]
    assert "terminal/kill" in cancel["terminalCalls"]
    assert cancel["terminalCalls"].count("terminal/release") == 1
    assert len(cancel["pids"]) == 4
    deadline = time.monotonic() + 5
    while marked(MARK) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert marked(MARK) == [], "the cancelled tree survived"

    load = summary["load"]
    assert load["firstText"] == "read hello.txt and run bash"
    assert load["toolCallTitles"] == ["Read hello.txt", f"{BASH} (in {workspace})",
                                      f"{TREE} (in {workspace})"]
    assert load["terminalContent"] == 0
    assert load["kinds"].count("user_message_chunk") == 2

    assert summary["sessionId"] in summary["list"]["ids"]
    assert summary["delete"] == {}
    assert summary["loadAfterDelete"]["code"] == -32002
    assert summary["sessionId"] not in summary["listAfterDelete"]
    assert summary["exitCode"] == 0

    report = assert_valid_log(log)
    lines = read_log(log)
    assert_wire_rules(lines)
    for kind in ("result initialize", "result session/new", "result session/prompt",
                 "result session/load", "result session/list", "result session/delete",
                 "request fs/read_text_file", "request terminal/create",
                 "request terminal/wait_for_exit", "request terminal/output",
                 "request terminal/kill", "request terminal/release",
                 "request session/request_permission", "update tool_call",
                 "update tool_call_update", "update agent_message_chunk",
                 "update user_message_chunk", "update available_commands_update",
                 "error session/load"):
        assert report.by_kind.get(kind), f"the run never exercised {kind}: {report.by_kind}"
