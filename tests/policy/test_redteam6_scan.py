"""Red-team 6, B5 and B6: the tree scan narrows what a search reads only where the tool's own
semantics are certain to agree. Each bypass is proven against the real tool (GNU grep, the
ripgrep the test extra installs) before the verdict is checked: the command prints a canary
from a `deny_read` file, and the policy must not allow it unasked."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from acpd.policy.decision import RANK
from acpd.policy.engine import CompiledPolicy

RG = shutil.which("rg") or os.path.join(os.path.dirname(sys.executable), "rg")
CANARY = "CANARY_RT6"


def _git(ws: Path, *args: str) -> None:
    subprocess.run(["git", "-C", str(ws), *args], check=True, capture_output=True)


def _workspace(base: Path, git: bool) -> str:
    ws = base / "ws"
    (ws / "secrets").mkdir(parents=True)
    (ws / "src").mkdir()
    (ws / "src" / "m.py").write_text("x = 1\n")
    (ws / "README.md").write_text("hello\n")
    (ws / ".env").write_text(f"SECRET={CANARY}_ENV\n")
    (ws / "secrets" / "k.txt").write_text(f"{CANARY}_SECRETS\n")
    (ws / "server.pem").write_text(f"{CANARY}_PEM\n")
    if git:
        _git(ws, "init", "-q", ".")
    return os.path.realpath(ws)


@pytest.fixture()
def ws(tmp_path: Path) -> str:
    return _workspace(tmp_path, git=True)


def _leaks(cmd: str, cwd: str) -> bool:
    shell_cmd = cmd.replace("rg ", f"{RG} ", 1) if cmd.startswith("rg ") else cmd
    out = subprocess.run(["bash", "-c", shell_cmd], cwd=cwd, capture_output=True, text=True,
                         timeout=60)
    return CANARY in out.stdout


def _check(default: CompiledPolicy, cmd: str, cwd: str) -> None:
    assert _leaks(cmd, cwd), f"the tool did not print a canary: the case proves nothing: {cmd}"
    d = default.judge(cmd, cwd=cwd)
    assert RANK[d.verdict] >= RANK["ask"], (cmd, d)


@pytest.mark.parametrize("cmd", [
    # GNU: the last matching option wins; --exclude first: unmatched names are read
    "grep -r --exclude='k.txt' --include='k.txt' CANARY .",
    "grep -r --exclude='*.txt' --include='*.txt' CANARY secrets",
    "grep -r --exclude='*.md' --include='*.py' CANARY .",
    "grep -r --include='*.py' --exclude='*.md' --include='*.txt' CANARY secrets",
    # glibc fnmatch: `\x` is `x`, `[^...]` negates, POSIX classes
    "grep -r --include='k\\.txt' CANARY .",
    "grep -r --include='\\k.txt' CANARY secrets",
    "grep -r --include='[^x].txt' CANARY secrets",
    "grep -r --include='[[:alpha:]].txt' CANARY secrets",
    "grep -r --incl='k.tx\\t' CANARY .",
])
def test_grep_include_exclude(default: CompiledPolicy, ws: str, cmd: str) -> None:
    _check(default, cmd, ws)


def test_grep_exclude_dir_backslash(default: CompiledPolicy, ws: str) -> None:
    """glibc reads `secret\\s` as `secrets`: a directory named `secret\\s` is searched."""
    Path(ws, "secret\\s").mkdir()
    Path(ws, "secret\\s", "k.pem").write_text(f"{CANARY}_DIR\n")
    for name in ("server.pem", "secrets/k.txt"):
        os.unlink(os.path.join(ws, name))
    _check(default, "grep -r --exclude-dir='secret\\s' CANARY .", ws)


@pytest.mark.parametrize("cmd", [
    # later globs win; a whitelist glob overrides hidden-file and .gitignore skipping
    "rg -g '!k.txt' -g 'k.txt' CANARY",
    "rg -g '!*.txt' -g '*.txt' CANARY secrets",
    "rg -g '.env' CANARY",
    "rg -g '*.pem' CANARY",
    "rg -g '*.{txt,md}' CANARY",
    "rg -g 'k\\.txt' CANARY",
    "rg -g '[k].txt' CANARY",
    "rg --glob-case-insensitive -g '*.TXT' CANARY",
    "rg -g '**.txt' CANARY",
])
def test_rg_globs(default: CompiledPolicy, ws: str, cmd: str) -> None:
    _check(default, cmd, ws)


SECRET = {"secrets/k.txt": f"{CANARY}_SECRETS\n", "server.pem": f"{CANARY}_PEM\n"}


@pytest.mark.parametrize("files", [
    {".gitignore": " secrets\n *.pem\n", **SECRET},               # leading blanks are kept
    {".gitignore": "secrets/\n*.pem\n", ".rgignore": "!secrets/\n", **SECRET},
    {".gitignore": "secrets/\n*.pem\n", ".ignore": "!secrets/\n!*.pem\n", **SECRET},
    {".gitignore": "*.pem\n", "src/.gitignore": "!*.pem\n", "src/x.pem": f"{CANARY}_N\n"},
    {".gitignore": "src/.ignore\n*.pem\n", "src/.ignore": "!*.pem\n",
     "src/x.pem": f"{CANARY}_N\n"},
    # `s2/sec**t` is `s2/sec*t` to git (no `secrets`); a regex `.*` would cross into it
    {".gitignore": "s2/sec**t\n", "s2/secrets/k.txt": f"{CANARY}_DEEP\n"},
    {".gitignore": "[!]x]ecrets/\n", "a]ecrets/k.pem": f"{CANARY}_CLASS\n"},
])
def test_rg_gitignore_forms(default: CompiledPolicy, tmp_path: Path,
                            files: dict[str, str]) -> None:
    ws = tmp_path / "g"
    ws.mkdir()
    _git(ws, "init", "-q", ".")
    for name, text in files.items():
        (ws / name).parent.mkdir(parents=True, exist_ok=True)
        (ws / name).write_bytes(text.encode())
    _check(default, "rg CANARY", os.path.realpath(ws))


def test_rg_outside_a_repository_reads_what_gitignore_names(
        default: CompiledPolicy, tmp_path: Path) -> None:
    ws = _workspace(tmp_path, git=False)
    Path(ws, ".gitignore").write_text("secrets/\n*.pem\n")
    _check(default, "rg CANARY", ws)


@pytest.mark.parametrize("cmd", [
    "grep -r --include='*.py' CANARY .",
    "grep -r --include='*.py' --include='*.md' x .",
    "grep -r --exclude='*.env' --exclude='*.pem' --exclude-dir=secrets x .",
    "rg -g '*.py' x",
    "rg -g '!secrets' -g '!*.pem' -g '!.env' x",
    "rg x",
])
def test_benign_searches_stay_allowed(default: CompiledPolicy, ws: str, cmd: str) -> None:
    Path(ws, ".gitignore").write_text("secrets/\n*.pem\n# comment\n\n*.log   \n")
    d = default.judge(cmd, cwd=ws)
    assert d.verdict == "allow", (cmd, d)
