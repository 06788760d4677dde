"""Found by the review of session 6's change, each a class:

- GNU sed -i's backup suffix is a path (`-i'DIR/*'`: each `*` is the file's base name): the
  original lands wherever it names, mode kept (an executable hook in `.git/hooks`);
- a write over a file deny_read names (`sort -o secrets/k.txt`, `cp x server.pem`, `> .env.local`)
  changes what the card cannot show: it asks, through every write form."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from acpd.policy.engine import CompiledPolicy


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    ws = tmp_path / "ws"
    ws.mkdir()
    subprocess.run(["git", "init", "-q", str(ws)], check=True)
    (ws / "README.md").write_text("x\n")
    (ws / "run.sh").write_text("#!/bin/sh\ntouch PWNED\n")
    (ws / "run.sh").chmod(0o755)
    (ws / "secrets").mkdir()
    (ws / "secrets" / "k.txt").write_text("CANARY\n")
    (ws / "server.pem").write_text("PEM\n")
    (ws / ".env.local").write_text("K=1\n")
    return Path(os.path.realpath(ws))


def verdict(policy: CompiledPolicy, ws: Path, cmd: str, *, sandboxed: bool = False) -> str:
    return policy.judge(cmd, cwd=str(ws), roots=(str(ws),), trust="provisional",
                        sandboxed=sandboxed).verdict


def test_a_sed_backup_suffix_is_a_path(default: CompiledPolicy, ws: Path) -> None:
    subprocess.run(["sed", "-i.git/hooks/*", "s/x/x/", "run.sh"], cwd=ws, check=True)
    planted = ws / ".git" / "hooks" / "run.sh"
    assert planted.exists() and os.access(planted, os.X_OK)  # the class is real
    for cmd in ("sed --in-place='.git/hooks/*' s/x/x/ run.sh",
                "sed -i'.git/hooks/pre-*' s/x/x/ run.sh", "sed -E -i'/etc/*' s/a/a/ README.md",
                "sed --in-pl='.git/*' s/a/a/ README.md", "sed -si'/root/*' s/a/a/ README.md",
                "sed -n -e p -i'.git/hooks/*' README.md"):
        for sandboxed in (False, True):
            assert verdict(default, ws, cmd, sandboxed=sandboxed) == "deny", cmd
    for cmd in ("sed -i s/a/b/ README.md", "sed -i.bak s/a/b/ README.md",
                "sed -i'bak/*' s/a/b/ README.md"):
        assert verdict(default, ws, cmd) == "allow", cmd


@pytest.mark.parametrize("cmd", [
    "sort -o secrets/k.txt README.md", "uniq README.md .env.local", "cp README.md server.pem",
    "echo x > .env.local", "printf x >> secrets/k.txt", "mv README.md secrets/k.txt",
    "cp -t secrets README.md", "cat README.md > ./secrets/../server.pem",
    "tee -a .env.local < README.md", "touch secrets/new.txt",
])
def test_writing_over_a_file_deny_read_names_asks(default: CompiledPolicy, ws: Path,
                                                  cmd: str) -> None:
    assert verdict(default, ws, cmd) in ("ask", "deny"), cmd


def test_ordinary_writes_stay_allowed(default: CompiledPolicy, ws: Path) -> None:
    for cmd in ("echo x > notes.txt", "cp README.md docs.md", "sort -o out.txt README.md"):
        assert verdict(default, ws, cmd) == "allow", cmd


@pytest.mark.parametrize("cmd", ["ruff check src", "mypy --strict .", "black --check .",
                                 "eslint --fix .", "tsc --noEmit", "shellcheck run.sh"])
def test_linters_run_without_a_prompt_only_where_workspace_code_may(
        default: CompiledPolicy, ws: Path, cmd: str) -> None:
    """Linters load the workspace's config, and eslint's, prettier's and mypy's plugins are
    code: allowed sandboxed (their worst case stays in the workspace), asked otherwise in a
    workspace that is not trusted."""
    assert verdict(default, ws, cmd, sandboxed=True) == "allow", cmd
    assert verdict(default, ws, cmd) == "ask", cmd
    assert default.judge(cmd, cwd=str(ws), roots=(str(ws),), trust="untrusted").verdict != "allow"
    assert verdict(default, ws, cmd + " > /etc/x", sandboxed=True) == "deny", cmd


@pytest.mark.parametrize("cmd", [
    "python3 -I -c 'import os'", "python3 -Ic 'import os'", "python3 -I -E -c x",
    "python3 -Is -m http.server", "python -I -c x", "pypy3 -I -c x", "python3 -IW error -c x",
    "python3 -Q -c x",
])
def test_inline_code_behind_an_interpreter_flag_still_asks(
        default: CompiledPolicy, ws: Path, cmd: str) -> None:
    """python's -I (isolated mode) is a flag; read with ruby's and perl's `-I DIR` it
    swallowed the `-c`, and the code ran as a "workspace script": allowed in a trusted
    workspace without a sandbox. Each interpreter family has its own option table."""
    decision = default.judge(cmd, cwd=str(ws), roots=(str(ws),), trust="trusted")
    assert decision.verdict != "allow", cmd


def test_interpreter_flags_keep_workspace_scripts_allowed(
        default: CompiledPolicy, ws: Path) -> None:
    for cmd in ("python3 -I run.py", "python3 -u -X dev run.py", "python3 -B run.py"):
        decision = default.judge(cmd, cwd=str(ws), roots=(str(ws),), trust="trusted")
        assert decision.verdict == "allow", (cmd, decision.reasons)
