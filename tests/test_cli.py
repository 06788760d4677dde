"""The command line, end to end: real `acpd` subprocesses, a real `acpd serve` behind them."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import anyio
import pytest

import acpd
from acpd.daemon.demo import bundled_script
from acpd.daemon.demo_client import AcpClient, AgentExited
from acpd.daemon.local import TailBuffer
from acpd.daemon.store import SessionStore


def run_acpd(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    environment = {k: v for k, v in os.environ.items() if not k.startswith("ACPD_")}
    # Wide enough that rich never wraps a title or an output line in the middle.
    environment.update({"COLUMNS": "200", **(env or {})})
    return subprocess.run(
        [sys.executable, "-m", "acpd", *args],
        capture_output=True, text=True, timeout=60, env=environment, stdin=subprocess.DEVNULL,
    )


def test_version() -> None:
    done = run_acpd("--version")
    assert done.returncode == 0
    assert done.stdout.strip() == f"acpd {acpd.__version__}"


def test_demo_shows_the_session_with_the_editor_terminal() -> None:
    done = run_acpd("demo")  # its speed is benchmarks/startup.py's business, not a test's
    assert done.returncode == 0, done.stdout + done.stderr
    out = done.stdout
    # Tool titles, each seen going pending -> in_progress -> completed.
    for title in ("Plan: 4 steps", "List .", "Read src/inventory.py",
                  "wc -l README.md src/*.py data/*.csv", "grep -rn TODO src notes"):
        pending = out.index(f"pending     {_kind(title)} {title}")
        running = out.index(f"in_progress {_kind(title)} {title}", pending)
        assert out.index(title, running + len(title)) > running
    assert out.count("✔ completed · execute") == 4
    # The file came through the editor, the commands through its terminals.
    assert "fs/read_text_file src/inventory.py" in out
    assert "LOW_STOCK = 10  # TODO: make the threshold a command-line flag" in out
    assert "terminal/create term-1: wc -l README.md src/*.py data/*.csv" in out
    # The shell policy allows the read-only commands. Running workspace code runs confined
    # where the kernel sandbox is available; without one it asks first, with the real command
    # in the prompt.
    from acpd.sandbox.status import sandbox_status

    if sandbox_status().available:
        assert out.count("permission  ") == 0
    else:
        assert out.count("permission  ") == 1
        assert "permission  python3 src/inventory.py data/stock.csv  → allow once" in out
    assert "running low: banana, kiwi" in out
    assert "$ terminal term-1" in out and "$ terminal term-3" in out
    # What the terminals printed.
    assert "30 total" in out
    assert "notes/todo.md:3:- TODO: tests for load()" in out
    assert "74 items in stock" in out
    # The plan, usage and the final message.
    assert "✔ Read the main module through the editor" in out
    assert "usage: 2573 of 200000 tokens" in out
    assert "The stock file currently holds 74 items." in out
    assert "stop reason end_turn · 8 tool calls (8 completed, 0 failed)" in out


def test_demo_without_terminal_runs_bash_locally() -> None:
    done = run_acpd("demo", "--no-terminal")
    assert done.returncode == 0, done.stdout + done.stderr
    out = done.stdout
    assert "terminal/create" not in out and "$ terminal" not in out
    assert "30 total" in out
    assert "src/inventory.py:6:LOW_STOCK = 10  # TODO" in out
    assert "74 items in stock" in out
    assert "stop reason end_turn · 8 tool calls (8 completed, 0 failed)" in out


def test_demo_reports_a_daemon_failure() -> None:
    # The daemon reads this variable into its config; a bad value makes session/new fail.
    done = run_acpd("demo", env={"ACPD_MAX_TOOL_ITERATIONS": "lots"})
    assert done.returncode == 1
    assert "acpd demo failed: session/new failed: configuration error" in done.stdout
    assert "agent.max_tool_iterations" in done.stdout
    assert "acpd serve stderr" in done.stdout


def test_demo_refuses_a_missing_script(tmp_path: Path) -> None:
    done = run_acpd("demo", "--script", str(tmp_path / "nope.json"))
    assert done.returncode == 2
    assert "cannot use the script" in done.stdout and "nope.json" in done.stdout


def test_doctor_healthy(tmp_path: Path) -> None:
    config = tmp_path / "config.toml"
    config.write_text(f'[agent]\nmodel = "scripted:{bundled_script()}"\ndefault_mode = "auto"\n')
    data = tmp_path / "data"
    store = SessionStore(data / "sessions.sqlite3")
    store.create("sess_a", str(tmp_path), "ask", None)
    store.create("sess_b", str(tmp_path), "ask", None)
    store.close()
    done = run_acpd("doctor", "--config", str(config), "--data-dir", str(data),
                    env={"OPENAI_API_KEY": "sk-must-not-be-printed"})
    assert done.returncode == 0, done.stdout + done.stderr
    out = done.stdout
    assert f"{config} (--config) loads" in out
    assert f"{data} holds 2 session(s)" in out
    assert "scripted provider builds" in out
    assert "initialize  answered in" in out and "protocol version 1" in out
    assert "loadSession=True" in out
    assert "session/new answered in" in out
    assert "negotiated per connection" in out and "local bash in its own process group" in out
    assert "healthy" in out
    assert "sk-must-not-be-printed" not in out
    from acpd.policy import _native

    built = _native.manifest_matches(_native.native_root())
    assert ("policy judge compiled" if built else "policy judge in pure Python") in out
    from acpd.checkpoint import statdir

    listed_in_c = statdir.native_listing() is not None
    assert ("directories listed in C" if listed_in_c else "directories listed in Python") in out


def test_doctor_names_the_env_var_not_the_key(tmp_path: Path) -> None:
    done = run_acpd("doctor", "--config", str(tmp_path / "none.toml"), "--data-dir",
                    str(tmp_path / "d"), "--model", "anthropic:claude-x",
                    env={"ANTHROPIC_API_KEY": "sk-ant-secret-value"})
    assert "$ANTHROPIC_API_KEY is set" in done.stdout
    assert "sk-ant-secret-value" not in done.stdout + done.stderr


def test_doctor_broken_config(tmp_path: Path) -> None:
    config = tmp_path / "config.toml"
    config.write_text('[agent]\nmodle = "openai:gpt-4o"\n')
    done = run_acpd("doctor", "--config", str(config), "--data-dir", str(tmp_path / "data"))
    assert done.returncode == 1
    out = done.stdout
    assert f"FAIL config      {config} (--config) does not load" in out
    assert "agent.modle: Extra inputs are not permitted" in out
    assert "problem(s) found" in out
    assert not (tmp_path / "data").exists()  # the doctor does not create the user's data dir


# --- the client on its own ---------------------------------------------------------------------


def test_terminal_output_limit_cuts_the_front_at_a_character_boundary() -> None:
    tail = TailBuffer(7)
    tail.add(b"abc")
    assert not tail.truncated
    tail.add("éééé".encode())  # 3 + 8 bytes: the cut at byte 4 lands inside an "é"
    assert tail.truncated
    assert tail.text() == "ééé"
    assert len(tail.data) <= 7


SILENT_AGENT = [sys.executable, "-c", "import sys; sys.stdin.buffer.read()"]


def test_client_terminals_kill_wait_and_release(tmp_path: Path) -> None:
    async def scenario() -> dict[str, Any]:
        async with AcpClient.start(SILENT_AGENT, tmp_path) as client:
            created = await client.serve_request("terminal/create", {
                "sessionId": "s", "command": "bash",
                "args": ["-c", "printf 'é%.0s' $(seq 100); sleep 30 & wait"],
                "cwd": str(tmp_path), "outputByteLimit": 51,
            })
            ids = {"sessionId": "s", "terminalId": created["terminalId"]}
            await anyio.sleep(0.3)
            output = await client.serve_request("terminal/output", ids)
            with anyio.fail_after(5):
                await client.serve_request("terminal/kill", ids)
                status = await client.serve_request("terminal/wait_for_exit", ids)
            await client.serve_request("terminal/release", ids)
            assert created["terminalId"] not in client.terminals
            return {"output": output, "status": status}

    result = anyio.run(scenario)
    assert result["output"]["truncated"] is True
    assert result["output"]["output"] == "é" * 25  # 50 of the 51 bytes: whole characters only
    assert "exitStatus" not in result["output"]
    assert result["status"]["signal"] == "SIGTERM"


def test_client_reports_an_agent_that_dies(tmp_path: Path) -> None:
    dying = [sys.executable, "-c", "import sys; sys.stderr.write('boom: no config\\n'); exit(3)"]

    async def scenario() -> AgentExited:
        async with AcpClient.start(dying, tmp_path) as client:
            with pytest.raises(AgentExited) as caught:
                await client.initialize()
            return caught.value

    exited = anyio.run(scenario)
    assert exited.returncode == 3
    assert "boom: no config" in exited.stderr


def _kind(title: str) -> str:
    kind = "think" if title.startswith("Plan") else "read" if title[:4] in ("List", "Read") else (
        "execute"
    )
    return f"{kind:<8}"


def test_doctor_warns_of_a_torn_audit_log_tail_and_reports_the_loop(tmp_path: Path) -> None:
    data = tmp_path / "data"
    data.mkdir()
    (data / "audit.jsonl").write_bytes(b'{"tool": "bash"}\n{"tool": "re')
    done = run_acpd("doctor", "--config", str(tmp_path / "none.toml"), "--data-dir", str(data))
    out = done.stdout
    assert "warn" in out and "the last line is torn (12 bytes without a newline" in out
    assert "event loop" in out and "uvloop" in out
    assert "audit log" not in "".join(line for line in out.splitlines() if "FAIL" in line)
