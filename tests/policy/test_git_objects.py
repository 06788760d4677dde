"""Issue 15, git's object store read by programs other than git (class A), and files a line
creates before a later command of it reads them (class B): each leaking form first leaks under
plain bash in a real repository (a `.env` committed once and deleted since), then asks under
the default policy, sandboxed or not; benign forms stay allowed."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

from acpd.policy.engine import CompiledPolicy

CANARY = "CANARY_OBJ_5e1d"
HEADER = "printf '\\x1f\\x8b\\x08\\0\\0\\0\\0\\0'"  # a gzip header in front of the deflate
ENV = {**os.environ, "GIT_CONFIG_NOSYSTEM": "1", "HOME": "/nonexistent", "LC_ALL": "C",
       "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@t", "GIT_COMMITTER_NAME": "t",
       "GIT_COMMITTER_EMAIL": "t@t"}


def git(ws: Path, *args: str) -> str:
    return subprocess.run(["git", *args], cwd=ws, env=ENV, check=True, capture_output=True,
                          text=True).stdout


def make_repo(ws: Path) -> Path:
    """`.env` committed and deleted; branch `feat` and the stash hold secrets/token.txt
    (absent from the work tree); an archive holding a `.env`; a bare clone; a module's git
    directory; an alternate-like store; a link into the object store; a packed twin."""
    ws.mkdir(parents=True)
    (ws / "a.txt").write_text("hello\n")
    (ws / ".env").write_text(f"TOKEN={CANARY}\n")
    git(ws, "init", "-q", "-b", "main")
    git(ws, "add", "-f", "a.txt", ".env")
    git(ws, "commit", "-q", "-m", "one")
    git(ws, "rm", "-q", ".env")
    git(ws, "commit", "-q", "-m", "no env")
    git(ws, "switch", "-q", "-c", "feat")
    (ws / "secrets").mkdir()
    (ws / "secrets" / "token.txt").write_text(f"{CANARY}\n")
    (ws / "peek").symlink_to("secrets/token.txt")  # a link a checkout creates
    git(ws, "add", "-f", "secrets/token.txt", "peek")
    git(ws, "commit", "-q", "-m", "token")
    git(ws, "switch", "-q", "main")
    (ws / "notes").mkdir()
    (ws / "notes" / "todo.txt").write_text(f"{CANARY}\n")
    git(ws, "stash", "push", "-q", "-u")
    tmp = ws.parent / "arch"
    tmp.mkdir()
    (tmp / ".env").write_text(f"TOKEN={CANARY}\n")
    subprocess.run(["tar", "-cf", str(ws / "s.tar"), "-C", str(tmp), ".env"], check=True)
    subprocess.run(["zip", "-q", "-r", str(ws / "s.zip"), "."], cwd=tmp, check=True)
    git(ws, "add", "s.tar", "s.zip")
    git(ws, "commit", "-q", "-m", "archives")
    subprocess.run(["git", "clone", "-q", "--bare", str(ws), str(ws / "bare.git")], env=ENV,
                   check=True)
    shutil.copytree(ws / ".git", ws / ".git" / "modules" / "sub",
                    ignore=shutil.ignore_patterns("modules"))
    shutil.copytree(ws / ".git" / "objects", ws / "store")
    (ws / "o").symlink_to(".git/objects")
    packed = ws / "packed"
    subprocess.run(["git", "clone", "-q", str(ws), str(packed)], env=ENV, check=True)
    git(packed, "gc", "-q")
    (ws / ".gitignore").write_text("bare.git/\nstore/\no\npacked/\n")
    return Path(os.path.realpath(ws))


@pytest.fixture(scope="module")
def repo(tmp_path_factory: pytest.TempPathFactory) -> Path:
    if shutil.which("zip") is None:
        pytest.skip("zip is not installed")
    return make_repo(tmp_path_factory.mktemp("objects") / "ws")


def env_object(ws: Path) -> str:
    blob = subprocess.run(["git", "hash-object", "--stdin"], input=f"TOKEN={CANARY}\n",
                          env=ENV, capture_output=True, text=True, check=True).stdout.strip()
    return f".git/objects/{blob[:2]}/{blob[2:]}"


def leaks(ws: Path, command: str) -> bool:
    """Run `command` under plain bash in a scratch copy of `ws`: does its output hold the
    canary, or the raw bytes of a stored copy of it (a loose object, a pack)?"""
    scratch = ws.parent / "scratch"
    if scratch.exists():
        shutil.rmtree(scratch)
    shutil.copytree(ws, scratch, symlinks=True)
    stored = [(scratch / env_object(scratch)).read_bytes()]
    stored += [p.read_bytes() for p in (scratch / "packed" / ".git" / "objects" / "pack")
               .glob("*.pack")]
    done = subprocess.run(["bash", "-c", command.replace("OBJ", env_object(scratch))],
                          cwd=scratch, env=ENV, stdin=subprocess.DEVNULL, capture_output=True,
                          timeout=60)
    out = done.stdout + done.stderr
    return CANARY.encode() in out or any(s in out for s in stored)


def verdict(policy: CompiledPolicy, ws: Path, command: str, *, sandboxed: bool) -> str:
    return policy.judge(command.replace("OBJ", env_object(ws)), cwd=str(ws), roots=(str(ws),),
                        trust="trusted", sandboxed=sandboxed).verdict


STORE_READS = [
    "cat .git/objects/*/*", "head -c 999 OBJ", "tail -c +1 OBJ", "cat < OBJ",
    "cat ./.git/./objects/../objects/*/*", "tar -cf - .git", "tar -cf - .",
    "tar -cf - .git/objects", "cp -r .git/objects cp1 && cat cp1/*/*",
    f"{HEADER} | cat - OBJ | gzip -dc", f"for f in .git/objects/*/*; do {HEADER} | cat - $f "
    "| gzip -dc; done", "cat packed/.git/objects/pack/*.pack",
    "cat .git/modules/sub/objects/*/*", "cat bare.git/objects/*/*", "cat store/*/*",
    "cat o/*/*", "grep -rah '' .", "grep -r -a -h '' .git", "grep --text -rh '' .",
    "grep --binary-files=text -rh '' .", "grep -rzh '' .",
    "sort OBJ", "cat .g?t/objects/*/*", "cd .git/objects && cat */*",
    "cd .git && tar -cf - objects", "cp -r .git g2 && cat g2/objects/*/*",
]
STORE_BENIGN = [
    "ls .git", "cat .git/HEAD", "cat .git/config", "grep -r hello .", "grep -rn hello a.txt",
    "cat a.txt", "ls -la", "git status", "git log --oneline", "tar -cf x.tar a.txt",
    "cp -r notes n2", "du -sh .git", "wc -l a.txt", "cat .git/refs/heads/main",
]
LINE_READS = [
    "git stash pop -q; cat */*", "git stash apply -q && grep -r CANARY .",
    "git switch -q feat && grep -r CANARY .", "git switch -q feat; cat */*",
    "git archive feat | tar -x && grep -r CANARY .", "tar -xf s.tar && grep -r CANARY .",
    "unzip -q s.zip && grep -r CANARY .", "git restore -s feat . ; grep -r CANARY .",
    "for i in 1 2; do grep -r CANARY .; git switch -q feat; done",
    "f(){ cat */*; }; git stash pop -q; f", "git switch -q feat && grep -r CANARY secrets",
    "(git stash pop -q) && rg -uu CANARY", "git checkout -q feat && cat */*",
    "git switch -q feat && git grep CANARY", "git switch -q feat && cat peek",
    "cat peek 2>/dev/null; git stash pop -q; git switch -q feat; head -n1 peek",
]
LINE_BENIGN = [
    "mkdir -p build && cp a.txt build/ && grep -r hello build", "git switch -q feat && git log",
    "git switch -q feat && git status", "tar -cf x.tar a.txt && grep -r hello a.txt",
]


@pytest.mark.slow
@pytest.mark.parametrize("command", STORE_READS + LINE_READS)
def test_each_form_leaks_in_plain_bash(repo: Path, command: str) -> None:
    if command.startswith("(git stash") and shutil.which("rg") is None:
        pytest.skip("rg is not installed")
    assert leaks(repo, command), command


@pytest.mark.parametrize("sandboxed", [False, True])
@pytest.mark.parametrize("command", STORE_READS + LINE_READS)
def test_each_form_asks(default: CompiledPolicy, repo: Path, command: str,
                        sandboxed: bool) -> None:
    assert verdict(default, repo, command, sandboxed=sandboxed) != "allow", command


@pytest.mark.parametrize("sandboxed", [False, True])
@pytest.mark.parametrize("command", STORE_BENIGN + LINE_BENIGN)
def test_benign_forms_stay_allowed(default: CompiledPolicy, repo: Path, command: str,
                                   sandboxed: bool) -> None:
    assert verdict(default, repo, command, sandboxed=sandboxed) == "allow", command


def test_the_reasons_say_why(default: CompiledPolicy, repo: Path) -> None:
    d = default.judge("cat .git/objects/*/*", cwd=str(repo), roots=(str(repo),))
    assert "git.object-store-read" in d.rules
    assert any("object store" in r for r in d.reasons)
    d = default.judge("git stash pop; cat */*", cwd=str(repo), roots=(str(repo),),
                      sandboxed=True)
    assert "line.creates-unseen" in d.rules
    assert any("no scan of this line saw" in r for r in d.reasons)


def test_without_deny_read_the_store_is_plain_files(default: CompiledPolicy,
                                                    repo: Path) -> None:
    from acpd.policy.engine import compile_policy
    from acpd.policy.rules import load_base

    base = load_base(None)[0]
    open_policy = compile_policy(base.model_copy(update={"paths": base.paths.model_copy(
        update={"deny_read": ()})}))
    for command in ("cat .git/objects/*/*", "git stash pop; cat */*"):
        assert verdict(open_policy, repo, command, sandboxed=True) == "allow", command
