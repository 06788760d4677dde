"""A hard link is judged with its other names, by the shell and the file tools alike
(policy/hardlinks.py): `ln .env copy` made outside the policy's sight does not make `cat copy`
or the read tool give `.env` away."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from acpd.policy.decision import RANK
from acpd.policy.engine import CompiledPolicy
from acpd.tools.fs.pathguard import PathGuard, path_rules, prejudge

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture()
def ws(tmp_path: Path) -> str:
    work = tmp_path / "ws"
    (work / "sub").mkdir(parents=True)
    (work / ".env").write_text("TOKEN=hunter2\n")
    os.link(work / ".env", work / "copy")
    os.link(work / ".env", work / "sub" / "notes.txt")
    (work / "a.txt").write_text("a\n")
    os.link(work / "a.txt", work / "b.txt")  # two names, neither denied
    (tmp_path / "outside.txt").write_text("o\n")
    os.link(tmp_path / "outside.txt", work / "out.txt")  # its other name is not in sight
    (work / ".git").mkdir()
    (work / ".git" / "config").write_text("[core]\n")
    os.link(work / ".git" / "config", work / "cfg")
    return os.path.realpath(work)


@pytest.mark.parametrize("cmd", ["cat copy", "head -c3 sub/notes.txt", "cat < copy",
                                 "cp copy /tmp/x", "wc -c ./copy", "grep -r hunter2 sub",
                                 "rg hunter2 sub", "tar -cf out.tar sub", "cat c*",
                                 "sort sub/*.txt", "diff copy a.txt", "cd sub && cat notes.txt"])
def test_shell_reads_of_a_link_to_a_denied_file(default: CompiledPolicy, ws: str,
                                                cmd: str) -> None:
    d = default.judge(cmd, cwd=ws)
    assert RANK[d.verdict] >= RANK["ask"], (cmd, d)


def test_the_rule_that_names_the_original_denies(default: CompiledPolicy, ws: str) -> None:
    d = default.judge("cat copy", cwd=ws)
    assert d.verdict == "deny" and "path.deny-read-hardlink" in d.rules
    assert any(".env" in r for r in d.reasons)


def test_a_write_through_a_link_to_a_deny_write_file(default: CompiledPolicy, ws: str) -> None:
    d = default.judge("echo '[core]' >> cfg", cwd=ws)
    assert d.verdict == "deny" and "path.deny-write-hardlink" in d.rules


def test_links_whose_names_are_all_seen_and_allowed(default: CompiledPolicy, ws: str) -> None:
    for cmd in ("cat a.txt", "cat b.txt", "grep a b.txt", "cat [ab].txt"):
        assert default.judge(cmd, cwd=ws).verdict == "allow", cmd


def test_a_name_outside_the_workspace_asks(default: CompiledPolicy, ws: str) -> None:
    d = default.judge("cat out.txt", cwd=ws)
    assert d.verdict == "ask" and "path.hardlink" in d.rules


def test_renaming_or_removing_the_link_reads_nothing(default: CompiledPolicy, ws: str) -> None:
    assert default.judge("mv copy renamed", cwd=ws).verdict == "allow"


def test_the_file_tools_agree(default: CompiledPolicy, ws: str) -> None:
    decision = prejudge(default, "core__read", {"path": "copy"}, ws, (ws,))
    assert decision is not None and decision.verdict == "deny"
    assert prejudge(default, "core__read", {"path": "b.txt"}, ws, (ws,)) is None
    guard = PathGuard(path_rules(default, (ws,)), cwd=ws)
    assert guard.refusal("read", os.path.join(ws, "copy"), "copy") is not None
    assert guard.refusal("read", os.path.join(ws, "out.txt"), "out.txt") is not None
    assert guard.refusal("read", os.path.join(ws, "b.txt"), "b.txt") is None


def test_the_read_tool_refuses_the_link(ws: str, tmp_path: Path) -> None:
    """`acpd tools run read` as a subprocess: the secret is not printed."""
    cfg = tmp_path / "acpd.toml"
    cfg.write_text("")
    env = {k: v for k, v in os.environ.items() if not k.startswith("ACPD_")}
    env.update(PYTHONPATH=str(REPO / "src"), ACPD_CONFIG=str(cfg))
    for path in ("copy", "sub/notes.txt"):
        done = subprocess.run(
            [sys.executable, "-m", "acpd", "tools", "run", "read", "--args",
             json.dumps({"path": path}), "--cwd", ws, "--data-dir", str(tmp_path / "data")],
            capture_output=True, text=True, env=env, timeout=60, stdin=subprocess.DEVNULL)
        assert done.returncode != 0 and "hunter2" not in done.stdout + done.stderr, path


@pytest.mark.parametrize("cmd", ["grep -r hunter2 sub", "git grep --no-index hunter2",
                                 "rg -uuu hunter2", "grep -r hunter2 ."])
def test_sandboxed_tree_reads_still_see_hard_links(default: CompiledPolicy, ws: str,
                                                   cmd: str) -> None:
    """The sandbox masks `.env` by name; `sub/notes.txt` is the same file under another."""
    d = default.judge(cmd, cwd=ws, trust="trusted", sandboxed=True)
    assert RANK[d.verdict] >= RANK["ask"], (cmd, d)


def test_sandboxed_tree_reads_without_hard_links_are_allowed(default: CompiledPolicy,
                                                             tmp_path: Path) -> None:
    (tmp_path / ".env").write_text("T=1\n")
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "a.py").write_text("x\n")
    d = default.judge("grep -r x .", cwd=str(tmp_path), trust="trusted", sandboxed=True)
    assert d.verdict == "allow", d
