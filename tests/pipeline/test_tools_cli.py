"""`acpd tools list|describe|run` and `acpd audit tail` as real subprocesses."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


def acpd(tmp_path: Path, *args: str, config: str = "") -> subprocess.CompletedProcess[str]:
    cfg = tmp_path / "acpd.toml"
    cfg.write_text(config)
    env = {k: v for k, v in os.environ.items() if not k.startswith("ACPD_")}
    env.update(PYTHONPATH=str(REPO / "src"), ACPD_CONFIG=str(cfg))
    return subprocess.run(
        [sys.executable, "-m", "acpd", *args, "--data-dir", str(tmp_path / "data")],
        capture_output=True, text=True, errors="replace", env=env, timeout=60,
        stdin=subprocess.DEVNULL,
    )


def test_list_and_describe(tmp_path: Path) -> None:
    listed = acpd(tmp_path, "tools", "list", "--mode", "read-only")
    assert listed.returncode == 0
    rows = {line.split()[0]: line for line in listed.stdout.splitlines()}
    assert "core__bash" in rows["bash"] and "not shown" in rows["bash"]
    assert "not shown" not in rows["read"]
    described = acpd(tmp_path, "tools", "describe", "bash", "--mode", "ask",
                     config='[tools.permissions.bash]\ndeny = ["*sudo*"]\n')
    info = json.loads(described.stdout)
    assert info["effect"] == "external_side_effect" and info["executor"] == "shell"
    assert info["verdict"]["decision"] == "ask"
    assert info["rules"] == [{"pattern": "*sudo*", "action": "deny"}]
    assert info["input_schema"]["required"] == ["command"]
    auto = json.loads(acpd(tmp_path, "tools", "describe", "bash", "--mode", "auto").stdout)
    assert auto["verdict"]["decision"] == "allow"
    shell = auto["shell_policy"]
    assert shell["trust"] in ("untrusted", "provisional", "trusted")
    assert len(shell["policy_hash"]) == 16 and shell["errors"] == []
    assert "acpd policy check" in shell["each_command"]
    read = json.loads(acpd(tmp_path, "tools", "describe", "read").stdout)
    assert "shell_policy" not in read
    assert acpd(tmp_path, "tools", "describe", "nope").returncode == 2


def test_run_prints_the_result_and_the_exit_status_tells(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "a.txt").write_text("content\n")
    ok = acpd(tmp_path, "tools", "run", "read", "--args", '{"path": "a.txt"}', "--cwd", str(ws))
    assert ok.returncode == 0 and ok.stdout == "content\n"
    missing = acpd(tmp_path, "tools", "run", "read", "--args", '{"path": "b"}', "--cwd", str(ws))
    assert missing.returncode == 1 and "[tool_error]" in missing.stderr
    failing = acpd(tmp_path, "tools", "run", "bash", "--args", '{"command": "exit 3"}',
                   "--cwd", str(ws), "--mode", "auto")
    assert failing.returncode == 1 and "[exit code: 3]" in failing.stdout
    asked = acpd(tmp_path, "tools", "run", "write", "--args",
                 '{"path": "n.txt", "content": "x"}', "--cwd", str(ws))
    assert asked.returncode == 1 and "ConfirmationRequired" in asked.stderr
    assert "nobody can be asked" in asked.stderr and not (ws / "n.txt").exists()
    assert acpd(tmp_path, "tools", "run", "read", "--args", "[1]").returncode == 2
    tail = acpd(tmp_path, "audit", "tail", "-n", "2")
    lines = [json.loads(x) for x in tail.stdout.splitlines()]
    assert [line["name"] for line in lines] == ["bash", "write"]
    assert all(line["caller"] == "cli" and line["caller_id"] is None for line in lines)
    assert lines[1]["error_category"] == "ConfirmationRequired"


def test_arguments_json_cannot_carry_is_refused_without_a_traceback(tmp_path: Path) -> None:
    # A lone surrogate is valid to Python's json module but not JSON text the wire accepts;
    # it once reached the audit writer and crashed the CLI with a traceback.
    for args in ('{"path": "\\ud800"}', '{"path": "a\\udcff"}', "[1]", "{"):
        out = acpd(tmp_path, "tools", "run", "read", "--args", args, "--cwd", str(tmp_path))
        assert out.returncode == 2, (args, out.stderr)
        assert "Traceback" not in out.stderr and "--args" in out.stderr


def test_a_workspace_whose_name_is_not_utf8_is_checkpointed_and_undone(tmp_path: Path) -> None:
    ws = tmp_path / os.fsdecode(b"ws\xff")
    ws.mkdir()
    out = acpd(tmp_path, "tools", "run", "bash", "--args", '{"command": "echo hi > made"}',
               "--cwd", str(ws), "--mode", "auto")
    assert "Traceback" not in out.stderr and out.returncode == 0, out.stderr
    assert "1 created (made)" in out.stdout  # the checkpoint was taken
    assert (tmp_path / "data" / "audit.jsonl").read_bytes().decode("utf-8").count("\n") == 1
    listed = acpd(tmp_path, "undo")
    assert "echo hi > made" in listed.stdout, listed.stdout + listed.stderr
    undone = acpd(tmp_path, "undo", "last", "--cwd", str(ws))
    assert undone.returncode == 0 and not (ws / "made").exists(), undone.stderr
