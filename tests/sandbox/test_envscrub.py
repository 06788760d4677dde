"""The editor-terminal prologue that keeps blocked environment names from a command, run by
real bash with an environment made here (what an editor started from a login shell holding
secrets would pass)."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from acpd.daemon.config import DEFAULT_ENV_BLOCKLIST
from acpd.daemon.envscrub import original, wrap

EDITOR_ENV = {
    "PATH": "/usr/local/bin:/usr/bin:/bin",
    "HOME": "/nonexistent",
    "OPENAI_API_KEY": "CANARY-1",
    "github_token": "CANARY-2",  # lower case: the blocklist matches case-insensitively
    "A-B_SECRET": "CANARY-3",  # not a shell identifier: bash cannot unset it
    "MY_PASSWORD_FILE": "CANARY-4",
    "PLAIN": "visible",
}


def run(script: str, env: dict[str, str] | None = None, *args: str
        ) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["bash", "-c", script, "bash", *args], env=env or EDITOR_ENV,
                          capture_output=True, text=True, timeout=30)


def scrubbed(command: str, **kw: object) -> subprocess.CompletedProcess[str]:
    return run(wrap(command, DEFAULT_ENV_BLOCKLIST, **kw))  # type: ignore[arg-type]


@pytest.mark.parametrize("probe", [
    "env", "cat /proc/self/environ | tr '\\0' '\\n'", "declare -p", "python3 -c "
    "'import os; print(os.environ)'", 'echo "$OPENAI_API_KEY $github_token"',
    "bash -c env", "sh -c env", "compgen -e",
])
def test_no_blocked_name_reaches_the_command_or_its_children(probe: str) -> None:
    result = scrubbed(probe)
    assert result.returncode == 0, result.stderr
    assert "CANARY" not in result.stdout + result.stderr


def test_other_names_and_the_runners_own_stay() -> None:
    result = scrubbed("echo $PLAIN; echo $MY_PASSWORD_FILE; env | grep -c ^PATH=",
                      keep=["MY_PASSWORD_FILE"])
    assert result.stdout.split() == ["visible", "CANARY-4", "1"], result.stderr


def test_the_command_runs_unchanged() -> None:
    command = ("set -- a 'b c'; printf '<%s>' \"$@\" \"it's\"; echo; cat <<'EOF'\n$HOME `x`\n"
               "EOF\nf() { return 4; }; f; echo rc=$?; [[ abc == ABC ]] || echo case-kept; "
               "shopt extglob nocasematch")
    result = scrubbed(command)
    assert result.stdout.splitlines() == [
        "<a><b c><it's>", "$HOME `x`", "rc=4", "case-kept", "extglob        \toff",
        "nocasematch    \toff"], result.stderr
    assert scrubbed("compgen -v | grep -c __acpd").stdout == "0\n"  # its own are gone too


@pytest.mark.parametrize(("command", "status"), [
    ("exit 7", 7), ("false", 1), ("kill -TERM $$", -15), ("if then", 2),
    ("nosuchprogram-xyz", 127), ("(exit 300)", 44)])
def test_the_exit_status_is_the_commands(command: str, status: int) -> None:
    assert scrubbed(command).returncode == run(command).returncode == status


def test_a_syntax_error_is_reported_as_bash_would() -> None:
    result = scrubbed("echo before; if then")
    assert "syntax error" in result.stderr and "before" not in result.stdout


def test_nothing_blocked_leaves_the_command_as_it_is() -> None:
    assert wrap("echo hi", []) == "echo hi"


@pytest.mark.parametrize("command", [
    "echo hi", "a'b", "'''", "x\neval -- 'y'", "", "printf '%s' \"$(cat <<'E'\nq'\nE\n)\"",
    "echo \\'", "\n"])
def test_the_command_shown_is_the_one_run(command: str) -> None:
    assert original(wrap(command, DEFAULT_ENV_BLOCKLIST)) == command
    assert original(command) == command


def test_glob_patterns_mean_what_fnmatch_says(tmp_path: Path) -> None:
    env = {"PATH": EDITOR_ENV["PATH"], "AWS_X": "1", "AWSX": "2", "GCP_1": "3", "GCP_A": "4"}
    script = wrap("env | sort | cut -d= -f1 | tr '\\n' ' '", ["AWS_?", "gcp_[0-9]"])
    assert run(script, env).stdout.split() == ["AWSX", "GCP_A", "PATH", "PWD", "SHLVL", "_"]
