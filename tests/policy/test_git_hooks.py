"""A git command that would run an existing hook runs workspace code (husky's `core.hooksPath
= .husky`, the pre-commit framework's `.git/hooks/pre-commit`): like a build, it is allowed
only in a trusted workspace or in the sandbox (issue 15, "what allow must mean"). Git without
hooks, and git forms that run none, stay allowed."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from acpd.policy.engine import CompiledPolicy
from acpd.policy.githooks import Uncertain, config_entries

ENV = {**os.environ, "GIT_CONFIG_NOSYSTEM": "1", "GIT_AUTHOR_NAME": "t",
       "GIT_AUTHOR_EMAIL": "t@t", "GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@t"}


def git(ws: Path, home: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["git", *args], cwd=ws, env={**ENV, "HOME": str(home)},
                          capture_output=True, text=True, check=False)


@pytest.fixture
def home(tmp_path: Path) -> Path:
    home = tmp_path / "home"
    home.mkdir()
    return home


@pytest.fixture
def ws(tmp_path: Path, home: Path) -> Path:
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "a.txt").write_text("a\n")
    for args in (("init", "-q", "-b", "main"), ("add", "a.txt"), ("commit", "-q", "-m", "one")):
        git(ws, home, *args)
    return Path(os.path.realpath(ws))


def hook(directory: Path, name: str, canary: Path, *, executable: bool = True) -> None:
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / name
    path.write_text(f"#!/bin/sh\ntouch {canary}\n")
    path.chmod(0o755 if executable else 0o644)


def verdict(policy: CompiledPolicy, ws: Path, home: Path, cmd: str, *, trust: str = "provisional",
            sandboxed: bool = False, cwd: Path | None = None) -> str:
    decision = policy.judge(cmd, cwd=str(cwd or ws), roots=(str(ws),), trust=trust,  # type: ignore[arg-type]
                            home=str(home), sandboxed=sandboxed)
    return decision.verdict


def set_config(path: Path, text: str) -> None:
    with path.open("a") as fh:
        fh.write(text)


def test_a_husky_hook_runs_on_commit_in_plain_bash_and_now_asks(
    default: CompiledPolicy, ws: Path, home: Path, tmp_path: Path
) -> None:
    canary = tmp_path / "canary"
    set_config(ws / ".git" / "config", "[core]\n\thooksPath = .husky\n")
    hook(ws / ".husky", "pre-commit", canary)
    git(ws, home, "commit", "-q", "--allow-empty", "-m", "x")
    assert canary.exists()  # the class is real: the workspace's file ran
    canary.unlink()
    for cmd in ("git commit -m x", "git commit --allow-empty -m x", "git -C . commit -m x",
                "git commit --no-verify -m x", "git merge other", "git am x.patch",
                "git cherry-pick HEAD", "git revert HEAD", "git pull"):
        assert verdict(default, ws, home, cmd) != "allow", cmd
    assert verdict(default, ws, home, "git commit -m x", trust="trusted") == "allow"
    assert verdict(default, ws, home, "git commit -m x", sandboxed=True) == "allow"
    assert verdict(default, ws, home, "git commit -m x", trust="untrusted",
                   sandboxed=True) != "allow"
    reason = " ".join(default.judge("git commit -m x", cwd=str(ws), roots=(str(ws),),
                           trust="provisional", home=str(home)).reasons)
    assert ".husky/pre-commit" in reason and "workspace" in reason


def test_each_subcommand_asks_only_for_the_hooks_it_runs(
    default: CompiledPolicy, ws: Path, home: Path, tmp_path: Path
) -> None:
    hooks = ws / ".git" / "hooks"
    hook(hooks, "pre-commit", tmp_path / "c1")
    # pre-commit does not run for these: they stay allowed
    for cmd in ("git status", "git add a.txt", "git log", "git diff --stat", "git branch -a",
                "git branch new", "git tag -l", "git stash list", "git switch -c b2",
                "git rev-parse HEAD", "git show --stat"):
        assert verdict(default, ws, home, cmd) == "allow", cmd
    assert verdict(default, ws, home, "git commit -m x") == "ask"
    hook(hooks, "post-index-change", tmp_path / "c2")
    hook(hooks, "reference-transaction", tmp_path / "c3")
    hook(hooks, "post-checkout", tmp_path / "c4")
    for cmd in ("git status", "git add a.txt", "git branch new", "git tag v1",
                "git switch -c b2", "git stash", "git stash pop", "git checkout main"):
        assert verdict(default, ws, home, cmd) != "allow", cmd
    for cmd in ("git log", "git diff --stat", "git branch -a", "git tag -l", "git stash list"):
        assert verdict(default, ws, home, cmd) == "allow", cmd


def test_the_measured_hooks_are_the_ones_git_runs(ws: Path, home: Path, tmp_path: Path) -> None:
    """The table is checked against the git installed here: each form runs only hooks the
    table lists for it (a git that runs more would make the table unsound)."""
    from acpd.policy.githooks import hooks_of

    log = tmp_path / "ran"
    for name in ("pre-commit", "prepare-commit-msg", "commit-msg", "post-commit",
                 "post-checkout", "post-index-change", "reference-transaction", "post-merge",
                 "pre-auto-gc", "post-rewrite"):
        path = ws / ".git" / "hooks" / name
        path.write_text(f'#!/bin/sh\necho {name} >> {log}\n')
        path.chmod(0o755)
    (ws / "a.txt").write_text("changed\n")
    forms = [["status"], ["add", "a.txt"], ["commit", "-q", "-m", "two"], ["branch", "nb"],
             ["tag", "t1"], ["switch", "-q", "nb"], ["checkout", "-q", "main"], ["log", "-1"],
             ["diff"], ["branch", "-a"], ["tag", "-l"]]
    for form in forms:
        log.write_text("")
        git(ws, home, *form)
        ran = set(log.read_text().split())
        assert ran <= hooks_of(form[0], form[1:]), (form, ran)


def test_hooks_path_from_every_config_git_reads(
    default: CompiledPolicy, ws: Path, home: Path, tmp_path: Path
) -> None:
    canary = tmp_path / "canary"
    hook(ws / "tools" / "hooks", "pre-commit", canary)
    assert verdict(default, ws, home, "git commit -m x") == "allow"  # nothing points there
    configs = [
        (ws / ".git" / "config", "[core]\n\thooksPath = tools/hooks\n"),
        (ws / ".git" / "config", '[core] hooksPath = "tools/hooks" ; same line as the header\n'),
        (ws / ".git" / "config", "[CORE]\n\tHOOKSPATH=tools/\\\nhooks\n"),
        (ws / ".git" / "config.worktree", "[core]\n\thooksPath = tools/hooks\n"),
        (ws / ".git" / "config", "[include]\n\tpath = extra.cfg\n"),
        (ws / ".git" / "config", '[includeIf "gitdir:/nowhere/"]\n\tpath = extra.cfg\n'),
        (home / ".gitconfig", f"[core]\n\thooksPath = {ws}/tools/hooks\n"),
        (home / ".gitconfig", "[include]\n\tpath = ~/more.cfg\n"),
        (home / ".config" / "git" / "config", f"[core]\n\thooksPath = {ws}/tools/hooks\n"),
    ]
    for path, text in configs:
        original = {p: p.read_text() for p in (ws / ".git" / "config",) if p.exists()}
        path.parent.mkdir(parents=True, exist_ok=True)
        set_config(path, text)
        (ws / ".git" / "extra.cfg").write_text("[core]\n\thooksPath = tools/hooks\n")
        (home / "more.cfg").write_text(f"[core]\n\thooksPath = {ws}/tools/hooks\n")
        assert verdict(default, ws, home, "git commit -m x") == "ask", (path, text)
        for p, body in original.items():
            p.write_text(body)
        if path != ws / ".git" / "config":
            path.unlink()


def test_a_hook_git_would_not_run_does_not_count(
    default: CompiledPolicy, ws: Path, home: Path, tmp_path: Path
) -> None:
    hooks = ws / ".git" / "hooks"
    hook(hooks, "pre-commit", tmp_path / "c", executable=False)  # git ignores it
    hook(hooks, "pre-commit.sample", tmp_path / "c")
    (hooks / "post-commit").mkdir()
    assert verdict(default, ws, home, "git commit -m x") == "allow"


def test_unreadable_or_cyclic_config_is_not_a_guess(
    default: CompiledPolicy, ws: Path, home: Path
) -> None:
    set_config(ws / ".git" / "config", "[include]\n\tpath = config\n")  # includes itself
    decision = default.judge("git commit -m x", cwd=str(ws), roots=(str(ws),),
                             trust="provisional", home=str(home))
    assert decision.verdict == "ask" and "cannot tell which hooks" in " ".join(decision.reasons)
    assert verdict(default, ws, home, "git log") == "allow"


def test_config_syntax() -> None:
    text = ('[core]\n\thooksPath = "a b" # comment\n[core "x"] k = v\n[a.B]\n\tflag\n'
            '\tesc = "q\\"t" ; c\n\tcont = one\\\n two\n')
    assert list(config_entries(text)) == [
        ("core", "hookspath", "a b"), ('core.x', "k", "v"), ("a.b", "flag", "true"),
        ("a.b", "esc", 'q"t'), ("a.b", "cont", "one two"),
    ]
    with pytest.raises(Uncertain):
        list(config_entries('[core "x\n'))
