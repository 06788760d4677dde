"""Issue 15, reads of deny_read files through git: every git form that prints files from the
object store, the index or the stash asks (whatever the sandbox, which cannot mask them)
unless the decision shows it cannot print a denied file; benign git stays allowed; and a
file-system error inside the judge is a verdict, never an error."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from acpd.policy.engine import CompiledPolicy
from acpd.policy.programs.git_index import Unreadable, find_repository, tracked_paths

RANK = {"allow": 0, "ask": 1, "deny": 2}
ENV = {**os.environ, "GIT_CONFIG_NOSYSTEM": "1", "HOME": "/nonexistent",
       "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@t", "GIT_COMMITTER_NAME": "t",
       "GIT_COMMITTER_EMAIL": "t@t"}


def git(ws: Path, *args: str) -> str:
    return subprocess.run(["git", *args], cwd=ws, env=ENV, check=True, capture_output=True,
                          text=True).stdout


def make_repo(ws: Path, *, secret: bool) -> Path:
    ws.mkdir(parents=True)
    (ws / "a.txt").write_text("hello\n")
    (ws / "src").mkdir()
    (ws / "src" / "m.py").write_text("x = 1\n")
    git(ws, "init", "-q", "-b", "main")
    git(ws, "add", "a.txt", "src/m.py")
    git(ws, "commit", "-q", "-m", "one")
    if secret:
        (ws / ".env").write_text("TOKEN=CANARY\n")
        git(ws, "add", "-f", ".env")
        git(ws, "commit", "-q", "-m", "two")
        (ws / ".env").write_text("TOKEN=CANARY\nMORE=1\n")
        git(ws, "tag", "envblob", "HEAD:.env")
    return Path(os.path.realpath(ws))


@pytest.fixture(scope="module")
def leaky(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return make_repo(tmp_path_factory.mktemp("leaky") / "ws", secret=True)


@pytest.fixture(scope="module")
def clean(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return make_repo(tmp_path_factory.mktemp("clean") / "ws", secret=False)


def verdict(policy: CompiledPolicy, ws: Path, cmd: str, *, sandboxed: bool = False,
            cwd: Path | None = None) -> str:
    d = policy.judge(cmd, cwd=str(cwd or ws), roots=(str(ws),), trust="trusted",
                     sandboxed=sandboxed)
    return d.verdict


HISTORY = [  # each prints (or tests) file contents from history, the index or the stash
    "git log -p", "git log --patch -1", "git log -u", "git log -U1", "git log --pat",
    "git log --word-diff", "git log --color-words", "git log --cc", "git log -c",
    "git log -m -1", "git log --remerge-diff", "git log --diff-merges=separate",
    "git log -GTOKEN", "git log -S CANARY --oneline", "git log --find-object=abc",
    "git log --check", "git log -W", "git log --binary", "git whatchanged -p",
    "git --no-pager log -p", "git -C . log -p", "git -C src log -p", "git log -p -- src",
    "git log -p -- a.txt", "git log -p -- '*.py'", "git log --all -p", "git reflog -p",
    "git reflog show -p", "git shortlog -p", "git log -L1,1:.env", "git log --full-diff -p",
    "git log -p --stat", "git log --patch-with-stat", "git log --patch-with-raw",
    "git show", "git show HEAD", "git show HEAD~0", "git show main", "git show -1",
    "git show --stat envblob", "git show -s envblob", "git show --name-only main",
    "git show --oneline", "git show --format=%H HEAD -- src", "git show :/two",
    "git diff HEAD", "git diff HEAD~0", "git diff main", "git diff --cached",
    "git diff --staged", "git diff --cach", "git diff HEAD~1 HEAD", "git diff main~1..main",
    "git diff HEAD -- .", "git diff --merge-base main", "git diff -U3 --cached",
    "git diff HEAD:src HEAD~1:src", "git diff", "git diff -p", "git diff -- .",
    "git diff --check", "git -C src diff", "cd src && git diff", "git diff -R",
    "git grep CANARY", "git grep -n TOKEN", "git grep CANARY HEAD", "git grep --cached C",
    "git grep -e CANARY main -- .", "git grep C HEAD:src", "git grep --recurse-submodules C",
    "git grep -e C -- .", "git stash show -p", "git stash show", "git stash show stash@{0}",
    "git stash list -p", "git stash show --patch", "git stash export --print",
    "git status -v", "git status --verbose", "git status -vv", "git commit -v -m x",
    "git commit -p -m x", "git commit --interactive", "git commit", "git add -p",
    "git add --patch", "git add -i", "git add -e", "git add --ed", "git stash push -p",
    "git stash -p", "git checkout -p", "git reset -p", "git restore -p",
    "git cat-file -p envblob", "git cat-file blob envblob", "git cat-file --batch",
    "git cat-file -p HEAD:.env", "git show HEAD:.env", "git show :.env", "git show :0:.env",
    "git show HEAD:./.env", "git -C src show HEAD:../.env", "git blame .env",
    "git blame HEAD -- .env", "git annotate .env", "git tag -l --format='%(raw)' envblob",
    "git for-each-ref --format='%(raw)'", "git branch --format='%(raw)'",
    "git config --blob=envblob --list", "git archive HEAD", "git archive --format=tar HEAD",
    "git format-patch -1 --stdout", "git bundle create x.b HEAD", "git range-diff A B C",
    "git notes show", "git replay --onto main HEAD~1..HEAD", "git fast-export --all",
    "git verify-pack -v x.idx", "git unpack-file envblob", "git checkout-index --prefix=x- -a",
    "git difftool HEAD", "git diff-tree -p HEAD", "git diff-index -p HEAD", "git diff-files -p",
    "git request-pull -p HEAD~1 .", "git lg", "git my-alias", "git log -p --output=x",
    "git log --ext-diff -p", "git log --textconv -p", "git -p log -p", "git mv .env x",
    "git show --no-such-option", "git log --no-such-option -p", "git fsck --lost-found",
    "git worktree add ../x HEAD~1", "git lgo -p", "git show HEAD^{tree}", "git show -s main",
    "git diff envblob HEAD:a.txt", "git grep -l CANARY", "git log -p -- ':!src'",
    "git diff -- ':(exclude).env'", "git stash show --include-untracked", "git log -p5",
    "git log --pa", "env git log -p", "nice git log -p", "bash -c 'git log -p'",
    "/usr/bin/git log -p", "g\\it log -p", "x=log; git $x -p", "git commit --verb -m x",
    "git status --short --verb", "git show 'HEAD@{10:00}:.env'", "git grep -e -- HEAD",
]


@pytest.mark.parametrize("sandboxed", [False, True], ids=["plain", "sandboxed"])
@pytest.mark.parametrize("cmd", HISTORY)
def test_history_and_index_reads_ask(default: CompiledPolicy, leaky: Path, cmd: str,
                                     sandboxed: bool) -> None:
    cwd = leaky / "src" if cmd.startswith("cd src") else leaky
    got = verdict(default, leaky, cmd, sandboxed=sandboxed)
    assert RANK[got] >= RANK["ask"], (cmd, default.judge(cmd, cwd=str(cwd), roots=(
        str(leaky),), trust="trusted", sandboxed=sandboxed))


BENIGN = [
    "git status", "git status -sb", "git status --porcelain", "git log", "git log --oneline",
    "git log --oneline -n 20 --graph", "git log --stat", "git log --name-only -3",
    "git log --format='%h %s' --since=2.weeks", "git log --grep=fix --oneline",
    "git log -3 --stat -- src", "git whatchanged -1", "git reflog", "git shortlog -sn",
    "git diff --stat", "git diff --stat HEAD~1", "git diff --name-only HEAD",
    "git diff --cached --stat", "git diff --numstat main", "git diff --shortstat",
    "git show --stat", "git show HEAD --stat", "git show -s --format=%B HEAD",
    "git show --name-status HEAD~1", "git show HEAD:a.txt", "git show HEAD:src",
    "git show HEAD~1:src/m.py", "git show :a.txt", "git branch", "git branch -a",
    "git tag -l", "git rev-parse --show-toplevel", "git rev-parse HEAD:.env",
    "git ls-files", "git ls-files -s", "git describe --always", "git config --get user.name",
    "git stash list", "git stash show --stat", "git stash", "git blame a.txt",
    "git grep -n hello -- a.txt", "git grep -n x -- src", "git grep --cached x -- src/m.py",
    "git diff -- a.txt", "git diff src", "git add a.txt", "git commit -m 'fix: x'",
    "git commit -am x", "git switch -c feature",
]


@pytest.mark.parametrize("sandboxed", [False, True], ids=["plain", "sandboxed"])
@pytest.mark.parametrize("cmd", BENIGN)
def test_benign_git_stays_allowed_with_a_tracked_secret(default: CompiledPolicy, leaky: Path,
                                                        cmd: str, sandboxed: bool) -> None:
    d = default.judge(cmd, cwd=str(leaky), roots=(str(leaky),), trust="trusted",
                      sandboxed=sandboxed)
    assert d.verdict == "allow", (cmd, d)


@pytest.mark.parametrize("cmd", ["git diff", "git grep -n hello", "git grep --cached x",
                                 "git diff -p", "cd src && git diff", "git diff -- ."])
def test_index_forms_are_allowed_without_a_tracked_secret(default: CompiledPolicy,
                                                          clean: Path, cmd: str) -> None:
    d = default.judge(cmd, cwd=str(clean), roots=(str(clean),), trust="trusted")
    assert d.verdict == "allow", (cmd, d)


def test_pathspecs_are_compared_without_case(default: CompiledPolicy, tmp_path: Path) -> None:
    """`git --icase-pathspecs diff -- sub` prints a tracked `Sub/.env`."""
    ws = make_repo(tmp_path / "ws", secret=False)
    (ws / "Sub").mkdir()
    (ws / "Sub" / ".env").write_text("K=V\n")
    git(ws, "add", "-f", "Sub/.env")
    for cmd in ("git --icase-pathspecs diff -- sub", "git diff -- Sub", "git grep K -- Sub"):
        assert verdict(default, ws, cmd) == "ask", cmd
    assert verdict(default, ws, "git diff -- a.txt") == "allow"


def test_reasons_name_the_file_and_the_pattern(default: CompiledPolicy, leaky: Path) -> None:
    d = default.judge("git diff", cwd=str(leaky), roots=(str(leaky),), trust="trusted")
    assert any(".env" in r and "'**/.env'" in r for r in d.reasons), d
    d = default.judge("git log -p", cwd=str(leaky), roots=(str(leaky),), trust="trusted")
    assert "git.history-read" in d.rules and any("deny_read" in r for r in d.reasons), d


def test_the_index_is_read_afresh_for_each_decision(default: CompiledPolicy,
                                                    tmp_path: Path) -> None:
    """No file-system fact outlives a decision: a secret staged between two decisions is
    seen by the second."""
    ws = make_repo(tmp_path / "ws", secret=False)
    assert verdict(default, ws, "git diff") == "allow"
    (ws / "k.pem").write_text("KEY\n")
    git(ws, "add", "k.pem")
    assert verdict(default, ws, "git diff") == "ask"
    git(ws, "rm", "-q", "--cached", "k.pem")
    assert verdict(default, ws, "git diff") == "allow"


@pytest.mark.parametrize("setup", ["v4", "v3", "split", "worktree", "submodule", "sub-dir"])
def test_every_index_layout_is_read(default: CompiledPolicy, tmp_path: Path,
                                    setup: str) -> None:
    ws = make_repo(tmp_path / "ws", secret=True)
    cwd = ws
    if setup in ("v4", "v3"):
        git(ws, "update-index", "--index-version", setup[1])
        if setup == "v3":
            git(ws, "update-index", "--skip-worktree", ".env")
    elif setup == "split":
        git(ws, "update-index", "--split-index")
        (ws / "b.txt").write_text("b\n")
        git(ws, "add", "b.txt")
    elif setup == "worktree":
        git(ws, "worktree", "add", "-q", "wt", "main~0")
        cwd = ws / "wt"
    elif setup == "submodule":
        inner = ws / "inner"
        inner.mkdir()
        (inner / ".git").write_text(f"gitdir: {ws}/.git\n")
        cwd = inner
    else:
        cwd = ws / "src"
    if setup == "worktree":
        repo = find_repository(str(cwd))
        assert repo is not None and repo.git_dir != str(ws / ".git")
    d = default.judge("git diff", cwd=str(cwd), roots=(str(ws),), trust="trusted")
    assert d.verdict == "ask" and "git.index-read" in d.rules, (setup, d)


def test_a_broken_index_asks(default: CompiledPolicy, tmp_path: Path) -> None:
    ws = make_repo(tmp_path / "ws", secret=False)
    (ws / ".git" / "index").write_bytes(b"DIRC\x00\x00\x00\x09junk")
    d = default.judge("git diff", cwd=str(ws), roots=(str(ws),), trust="trusted")
    assert d.verdict == "ask" and "git.index-unreadable" in d.rules, d
    with pytest.raises(Unreadable):
        tracked_paths(b"DIRC\x00\x00\x00\x02\x00\x00\x00\x05", "x")


def test_the_parser_reads_what_git_wrote(leaky: Path) -> None:
    names = [n for n, _ in tracked_paths((leaky / ".git" / "index").read_bytes(), "index")]
    assert names == git(leaky, "ls-files").split()


# ---- file-system errors inside the judge are verdicts ---------------------------------------

def _weird_paths(tmp: Path) -> dict[str, str]:
    (tmp / "locked").mkdir()
    (tmp / "locked" / "f").write_text("x")
    (tmp / "locked").chmod(0)
    (tmp / "loop1").symlink_to("loop2")
    (tmp / "loop2").symlink_to("loop1")
    (tmp / "file").write_text("x")
    long = "n" * 300
    return {"proc": "/proc/1/root/etc/shadow", "proc-cwd": "/proc/1/cwd/x",
            "locked": "locked/f", "loop": "loop1/x", "loop-self": "loop1",
            "too-long": f"{long}/x", "too-long-total": "/".join(["d" * 200] * 30),
            "not-dir": "file/x", "through-file": "file/../x"}


@pytest.mark.parametrize("template", [
    "cat {p}", "ls {p}", "grep -r x {p}", "echo x > {p}", "cp a.txt {p}", "rm -rf {p}",
    "git -C {p} diff", "git -C {p} log -p", "cd {p} && git grep x", "{p}",
    "git show HEAD:{p}", "ln -s {p} l && cat l", "mv {p} y", "tar -cf x.tar {p}",
])
def test_file_system_errors_are_verdicts(default: CompiledPolicy, tmp_path: Path,
                                         template: str) -> None:
    ws = Path(os.path.realpath(tmp_path))
    try:
        for name, path in _weird_paths(ws).items():
            cmd = template.format(p=path)
            d = default.judge(cmd, cwd=str(ws), roots=(str(ws),), trust="trusted")
            assert d.verdict in ("allow", "ask", "deny"), (name, cmd, d)
            if name.startswith("proc") and _proc_root_refused():
                assert d.verdict != "allow", (cmd, d)
    finally:
        (ws / "locked").chmod(0o755)


def _proc_root_refused() -> bool:
    try:
        os.readlink("/proc/1/root")
    except OSError:
        return True
    return False


@pytest.mark.parametrize("cmd", ["cat /proc/1/root/etc/shadow", "ls /proc/1/root/",
                                 "/proc/1/root/bin/ls", "git -C /proc/1/root/tmp diff"])
def test_cli_gives_a_verdict_for_proc_paths(cmd: str, tmp_path: Path) -> None:
    done = subprocess.run([sys.executable, "-m", "acpd", "policy", "check", "--cwd",
                           str(tmp_path), "--", cmd], capture_output=True, text=True,
                          timeout=60)
    assert done.returncode in (0, 1, 2), done.stderr
    assert "Error" not in done.stderr and "Traceback" not in done.stderr, done.stderr
    if _proc_root_refused():
        assert done.returncode in (1, 2), done.stdout


@pytest.mark.parametrize(("cmd", "code"), [
    ("git log -p", 1), ("git show HEAD", 1), ("git diff HEAD~0", 1), ("git grep CANARY", 1),
    ("git diff", 1), ("git show HEAD:.env", 2), ("git status", 0), ("git log --oneline", 0),
    ("git show --stat", 0), ("git diff --stat", 0),
])
def test_cli_check(leaky: Path, cmd: str, code: int) -> None:
    done = subprocess.run([sys.executable, "-m", "acpd", "policy", "check", "--cwd",
                           str(leaky), "--", cmd], capture_output=True, text=True, timeout=60)
    assert done.returncode == code, (cmd, done.stdout, done.stderr)


@pytest.mark.parametrize("cmd", ["/proc/1/root/bin/ls; curl https://example.com",
                                 "git -C /proc/1/root diff; rm -rf ~",
                                 "cat /proc/1/root/etc/shadow && rm -rf ~"])
def test_a_file_system_error_does_not_hide_the_rest_of_the_line(default: CompiledPolicy,
                                                                tmp_path: Path,
                                                                cmd: str) -> None:
    d = default.judge(cmd, cwd=str(tmp_path), roots=(str(tmp_path),), trust="trusted")
    assert d.verdict == "deny", d


def test_history_asks_only_for_patterns_that_reach_the_repository(leaky: Path) -> None:
    """A deny list of absolute paths elsewhere (`~/.ssh/**`) cannot name a file of this
    repository's history: `git log -p` stays allowed; a pattern under it asks."""
    from acpd.policy.engine import compile_policy
    from acpd.policy.rules import load_base

    base = load_base(None)[0]
    for deny, want in ((["/nonexistent-home/.ssh/**", "/etc/shadow"], "allow"),
                       ([f"{leaky}/sub/**"], "ask"), (["**/.env"], "ask")):
        paths = base.paths.model_copy(update={"deny_read": tuple(deny)})
        policy = compile_policy(base.model_copy(update={"paths": paths}))
        assert verdict(policy, leaky, "git log -p") == want, deny
