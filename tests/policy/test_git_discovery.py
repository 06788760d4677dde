"""Git finds a repository in a directory shaped like a git directory (a bare repository:
HEAD, objects/, refs/), not only through a `.git` entry. Such a directory inside the
workspace is another repository, whose config (core.fsmonitor, core.worktree) the workspace
wrote: git run there asks, like git run in a nested `.git` repository (audit of issue 15)."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from acpd.policy.engine import CompiledPolicy

ENV = {**os.environ, "GIT_CONFIG_NOSYSTEM": "1", "GIT_AUTHOR_NAME": "t",
       "GIT_AUTHOR_EMAIL": "t@t", "GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@t"}


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "a.txt").write_text("a\n")
    (ws / "src").mkdir()
    for args in (("init", "-q", "-b", "main"), ("add", "a.txt"), ("commit", "-q", "-m", "one")):
        subprocess.run(["git", *args], cwd=ws, env=ENV, check=True, capture_output=True)
    return Path(os.path.realpath(ws))


def bare_shaped(directory: Path, canary: Path) -> None:
    """What allowed writes can make: no `.git` anywhere, a config with a hook command."""
    (directory / "objects").mkdir(parents=True)
    (directory / "refs" / "heads").mkdir(parents=True)
    (directory / "HEAD").write_text("ref: refs/heads/main\n")
    (directory / "config").write_text(
        "[core]\n\trepositoryformatversion = 0\n\tworktree = ..\n"
        f'\tfsmonitor = "touch {canary}; false"\n')


def test_git_in_a_bare_shaped_directory_runs_its_config_and_asks(
    default: CompiledPolicy, ws: Path, tmp_path: Path
) -> None:
    canary = tmp_path / "canary"
    bare_shaped(ws / "r", canary)
    subprocess.run(["git", "status"], cwd=ws / "r", env=ENV, capture_output=True, check=False)
    assert canary.exists()  # the class is real: git took r/ as its repository
    for cmd in ("git -C r status", "cd r && git status", "git -C r log", "cd r; git diff",
                "git -C r/objects status", "cd r/refs/heads && git status"):
        decision = default.judge(cmd, cwd=str(ws), roots=(str(ws),), trust="trusted")
        assert decision.verdict != "allow", cmd
        assert "git.other-repository" in decision.rules or decision.verdict == "deny", cmd
    for cmd in ("git status", "git -C src status", "cd src && git log"):
        assert default.judge(cmd, cwd=str(ws), roots=(str(ws),), trust="trusted").verdict \
            == "allow", cmd
