"""Red-team 6, A1 (sandbox side): what git obeys in a git directory, at any depth, cannot be
written from inside the sandbox. Proven with real repositories through `acpd sandbox run`:

- always: existing `commondir`, `gitdir`, `config.worktree` (a linked worktree's admin
  directory under `.git/worktrees`, a submodule's git directory under `.git/modules`, a
  nested repository) are read-only, and git's everyday writes (add, commit, switch, stash,
  gc) still work;
- with read-only git directories (`ACPD_SANDBOX_GIT=read-only`, `PathRules.git_writes`
  False): nothing can be created at the top of any git directory (`commondir`,
  `config.worktree`, `worktrees/X`, `rebase-merge`), while reads and object/ref writes work.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from acpd.sandbox.status import sandbox_status
from tests.sandbox.conftest import sandbox_env, sandbox_run

pytestmark = [
    pytest.mark.slow,  # each case starts `acpd sandbox run` (a Python process)
    pytest.mark.skipif(not (sandbox_status().available and sandbox_status().kind == "bwrap"),
                       reason="needs bubblewrap"),
]


def _git(cwd: Path, *args: str) -> str:
    return subprocess.run(["git", "-C", str(cwd), *args], check=True, capture_output=True,
                          text=True).stdout


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    """A repository with a linked worktree whose admin directory is inside the workspace,
    a submodule-style git directory under .git/modules, and a nested repository."""
    ws = tmp_path / "ws"
    ws.mkdir()
    _git(ws, "init", "-q", "-b", "main", ".")
    _git(ws, "config", "user.email", "a@b")
    _git(ws, "config", "user.name", "a")
    (ws / "a.txt").write_text("a\n")
    _git(ws, "add", "a.txt")
    _git(ws, "commit", "-qm", "init")
    _git(ws, "worktree", "add", "-q", str(ws / "wt"), "-b", "side")
    sub = tmp_path / "subsrc"
    sub.mkdir()
    _git(sub, "init", "-q", ".")
    (ws / ".git" / "modules").mkdir()
    _git(ws / ".git" / "modules", "clone", "-q", "--bare", str(sub), "sub")
    (ws / ".git" / "modules" / "sub" / "config.worktree").write_text("[core]\n")
    (ws / "vendor").mkdir()
    _git(ws / "vendor", "init", "-q", ".")
    return Path(os.path.realpath(ws))


def _run(repo: Path, tmp_path: Path, command: str, read_only_git: bool = False
         ) -> subprocess.CompletedProcess[str]:
    home = tmp_path / "home"
    home.mkdir(exist_ok=True)
    extra = {"ACPD_SANDBOX_GIT": "read-only"} if read_only_git else {}
    return sandbox_run(repo, home, tmp_path, command, env=sandbox_env(home, tmp_path, **extra))


def _state(repo: Path) -> dict[str, str]:
    """Every file under the git directories that redirection or config could live in."""
    out: dict[str, str] = {}
    for base in (repo / ".git", repo / "vendor" / ".git"):
        for dirpath, dirs, files in os.walk(base):
            if "/objects" in dirpath or "/logs" in dirpath or "/refs" in dirpath:
                continue
            out.update((os.path.relpath(os.path.join(dirpath, d), repo), "dir") for d in dirs)
            for name in files:
                path = os.path.join(dirpath, name)
                if name in ("index", "ORIG_HEAD", "COMMIT_EDITMSG", "HEAD") or \
                        name.endswith(".lock"):
                    continue
                with open(path, "rb") as fh:
                    out[os.path.relpath(path, repo)] = fh.read().hex()
    return out


WRITES_ALWAYS_REFUSED = [
    "printf '../g\\n' > .git/worktrees/wt/commondir",
    "printf '/tmp/x/.git\\n' > .git/worktrees/wt/gitdir",
    "printf '[core]\\n\\tfsmonitor = touch /tmp/pwn\\n' > .git/modules/sub/config",
    "printf '[core]\\n\\tfsmonitor = touch /tmp/pwn\\n' > .git/modules/sub/config.worktree",
    "printf '[core]\\n\\tfsmonitor = touch /tmp/pwn\\n' > vendor/.git/config",
    "rm -rf .git/worktrees/wt/gitdir",
]


@pytest.mark.parametrize("command", WRITES_ALWAYS_REFUSED)
def test_existing_redirection_files_are_read_only(repo: Path, tmp_path: Path,
                                                  command: str) -> None:
    before = _state(repo)
    _run(repo, tmp_path, command)
    assert _state(repo) == before, command


def test_everyday_git_still_works(repo: Path, tmp_path: Path) -> None:
    run = _run(repo, tmp_path, "set -e; echo b > b.txt; git add b.txt; git commit -qm b; "
               "git switch -q -c topic; echo c >> a.txt; git stash -q; git stash list; "
               "git switch -q main; git status --short; git gc -q; git log --oneline | wc -l; "
               "cd wt; echo w > w.txt; git add w.txt; git commit -qm w; echo done")
    assert run.returncode == 0 and "done" in run.stdout, run.stderr
    assert "b" in _git(repo, "log", "--format=%s", "-1", "main")
    assert _git(repo, "stash", "list").strip()
    assert "w" in _git(repo, "log", "--format=%s", "-1", "side")


CREATIONS = [
    "printf '../g\\n' > .git/commondir",
    "printf '[core]\\n\\tfsmonitor = touch /tmp/pwn\\n' > .git/config.worktree",
    "mkdir .git/worktrees/x",
    "mkdir -p .git/rebase-merge && printf 'exec touch /tmp/pwn\\n' "
    "> .git/rebase-merge/git-rebase-todo",
    "mkdir .git/sequencer",
    "mkdir .git/modules/new && printf '[core]\\n' > .git/modules/new/config",
    "printf '../g\\n' > vendor/.git/commondir",
    "printf '../../../g\\n' > .git/modules/sub/commondir",
    "printf 'x' > .git/objects/../commondir",
    "mv .git/refs .git/refs2",
]


@pytest.mark.parametrize("command", CREATIONS)
def test_read_only_git_directories_refuse_creation(repo: Path, tmp_path: Path,
                                                   command: str) -> None:
    before = _state(repo)
    _run(repo, tmp_path, command, read_only_git=True)
    assert _state(repo) == before, command
    assert not (repo / ".git" / "commondir").exists()
    assert (repo / ".git" / "refs").is_dir()


def test_read_only_git_directories_keep_reads_and_object_writes(repo: Path,
                                                                 tmp_path: Path) -> None:
    run = _run(repo, tmp_path, "set -e; git status --short; git log --oneline | wc -l; "
               "git diff; echo z > z.txt; h=$(git hash-object -w z.txt); "
               "git update-ref refs/heads/zz HEAD; git cat-file -p $h; echo done",
               read_only_git=True)
    assert run.returncode == 0 and "done" in run.stdout, run.stderr
    assert _git(repo, "rev-parse", "zz").strip() == _git(repo, "rev-parse", "main").strip()
    add = _run(repo, tmp_path, "git add z.txt", read_only_git=True)
    assert add.returncode != 0 and "index.lock" in add.stderr  # the documented cost
