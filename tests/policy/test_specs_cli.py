"""Issue 15 classes through the real CLI (`python -m acpd policy check`, a subprocess), with
HOME under /tmp: exit codes 0 allow, 1 ask, 2 deny. One process judges one command, so the
cases are few spellings per class (tests/policy/test_specs.py holds the long lists)."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

EXIT = {0: "allow", 1: "ask", 2: "deny"}


@pytest.fixture(scope="module")
def env_ws(tmp_path_factory: pytest.TempPathFactory) -> tuple[dict[str, str], str]:
    root = tmp_path_factory.mktemp("cli-ws")
    subprocess.run(["git", "init", "-q", str(root)], check=True)
    (root / ".env").write_text("T=1\n")
    (root / "src").mkdir()
    (root / "src" / "a.txt").write_text("a\n")
    home = tmp_path_factory.mktemp("xyz-home")
    env = {**os.environ, "HOME": str(home)}
    return env, os.path.realpath(root)


def check(env_ws: tuple[dict[str, str], str], cmd: str, *flags: str) -> str:
    env, ws = env_ws
    proc = subprocess.run([sys.executable, "-m", "acpd", "policy", "check", "--cwd", ws,
                           "--trust", "trusted", *flags, "--", cmd],
                          env=env, capture_output=True, text=True, timeout=60)
    assert proc.returncode in EXIT, proc.stderr
    assert "Traceback" not in proc.stderr
    return EXIT[proc.returncode]


@pytest.mark.slow
@pytest.mark.parametrize(("cmd", "want", "sandboxed_want"), [
    # A: modelled vs not
    ("git status", "allow", "allow"),
    ("sort -o out.txt src/a.txt", "allow", "allow"),
    ("sort --frobnicate src/a.txt", "ask", "allow"),
    ("tar -xf a.tar", "ask", "ask"),  # members the judge cannot list ask even sandboxed
    # B: .git writes
    ("cp src/a.txt .git/", "deny", "deny"),
    ("tar -C .git/hooks -xf a.tar", "deny", "deny"),
    ("mkdir -p sub/.git", "deny", "deny"),
    # C: code in arguments
    ("sed -f e.sed src/a.txt", "ask", "ask"),  # hidden code asks even sandboxed
    ("awk 'BEGIN{system(\"id\")}'", "deny", "deny"),
    # D: prefixes, tree reads, destructive git, system state, detaching
    ("sort --outp=/etc/x src/a.txt", "deny", "deny"),
    ("cp --target=/etc src/a.txt", "deny", "deny"),
    ("grep -r T .", "ask", "allow"),
    ("git diff --no-index .env /dev/null", "deny", "deny"),
    ("git stash clear", "ask", "ask"),
    ("git switch -f main", "ask", "ask"),
    ("date -s 12:00", "deny", "deny"),
    ("hostname evil", "deny", "deny"),
    ("setsid sleep 9", "ask", "allow"),
    # E, F
    ("rm -rf .git src; rm(){ :; }", "deny", "deny"),
    ("cat(){ :; }; cat src/a.txt", "ask", "ask"),
    ("rm -rf ~", "deny", "deny"),
    ("rm -rf \"$HOME\"/", "deny", "deny"),
])
def test_cli_decisions(env_ws: tuple[dict[str, str], str], cmd: str, want: str,
                       sandboxed_want: str) -> None:
    assert check(env_ws, cmd) == want, cmd
    assert check(env_ws, cmd, "--sandboxed") == sandboxed_want, cmd


def test_cli_home_under_tmp_is_protected(env_ws: tuple[dict[str, str], str]) -> None:
    assert check(env_ws, "rm -rf ~/.") == "deny"
