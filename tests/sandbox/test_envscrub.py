"""The script in front of the editor-terminal launcher that keeps blocked environment names
from every process after it, run by real bash with an environment made here (what an editor
started from a login shell holding secrets would pass), and through the real sandbox, whose
init (PID 1 there) a command can read the environment of."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import anyio
import pytest

from acpd.daemon.config import DEFAULT_ENV_BLOCKLIST
from acpd.daemon.confine import confine, editor_launch
from acpd.daemon.envscrub import scrubbed
from tests.sandbox.test_persist import request, sh_launcher  # noqa: F401 (autouse)

EDITOR_ENV = {
    "PATH": "/usr/local/bin:/usr/bin:/bin",
    "HOME": "/nonexistent",
    "LANG": "C.UTF-8",
    "OPENAI_API_KEY": "CANARY-1",
    "github_token": "CANARY-2",  # lower case: the blocklist matches case-insensitively
    "A-B_SECRET": "CANARY-3",  # not a shell identifier: bash cannot unset it
    "\u0131_TOKEN": "CANARY-4",  # dotless i: a letter to bash in a UTF-8 locale
    "BASH_FUNC_get_token%%": "() { echo CANARY-5; }",  # an exported function
    "MY_PASSWORD_FILE": "CANARY-6",
    "PLAIN": "visible",
}


def run(argv: list[str], env: dict[str, str] | None = None, cwd: Path | None = None
        ) -> subprocess.CompletedProcess[str]:
    return subprocess.run(argv, env=env or EDITOR_ENV, capture_output=True, text=True,
                          timeout=60, cwd=cwd)


def scrubbed_bash(command: str, keep: tuple[str, ...] = ()) -> subprocess.CompletedProcess[str]:
    return run(scrubbed(["bash", "-c", command], DEFAULT_ENV_BLOCKLIST, keep))


@pytest.mark.parametrize("probe", [
    "env", "cat /proc/self/environ | tr '\\0' '\\n'", "declare -p; declare -F",
    "python3 -c 'import os; print(os.environ)'", 'echo "$OPENAI_API_KEY $github_token"',
    "bash -c env", "sh -c env", "get_token", "tr '\\0' '\\n' < /proc/$$/environ",
])
def test_no_blocked_name_reaches_the_command_or_its_children(probe: str) -> None:
    result = scrubbed_bash(probe)
    assert "CANARY" not in result.stdout + result.stderr, probe
    assert "PLAIN=visible" in run(scrubbed(["env"], DEFAULT_ENV_BLOCKLIST)).stdout


def test_the_names_the_runner_sets_stay() -> None:
    result = scrubbed_bash("echo $PLAIN $MY_PASSWORD_FILE", keep=("MY_PASSWORD_FILE",))
    assert result.stdout.split() == ["visible", "CANARY-6"], result.stderr


@pytest.mark.parametrize("command", [
    "exit 7", "false", "kill -TERM $$", "if then", "nosuchprogram-xyz", "(exit 300)",
    "printf '<%s>' \"$0\" \"$@\"", "echo \"it's\" `echo x` $((1+2))",
])
def test_the_command_runs_as_it_would_without_the_scrub(command: str) -> None:
    plain = run(["bash", "-c", command])
    result = scrubbed_bash(command)
    assert (result.returncode, result.stdout) == (plain.returncode, plain.stdout)


def test_nothing_blocked_leaves_the_argv_as_it_is() -> None:
    assert scrubbed(["bash", "-c", "echo hi"], []) == ["bash", "-c", "echo hi"]


def test_glob_patterns_mean_what_fnmatch_says() -> None:
    env = {"PATH": EDITOR_ENV["PATH"], "AWS_X": "1", "AWSX": "2", "GCP_1": "3", "GCP_A": "4"}
    argv = scrubbed(["bash", "-c", "env | sort | cut -d= -f1 | tr '\\n' ' '"],
                    ["AWS_?", "gcp_[0-9]"])
    assert run(argv, env).stdout.split() == ["AWSX", "GCP_A", "PATH", "PWD", "SHLVL", "_"]


def test_inside_the_sandbox_no_process_holds_a_blocked_name(tmp_path: Path) -> None:
    """bubblewrap's init is PID 1 in the sandbox; a command can read its environment (and
    its parent's). The names must be gone before bubblewrap starts."""
    ws = tmp_path / "ws"
    ws.mkdir()
    command = ("for p in /proc/[0-9]*; do tr '\\0' '\\n' < $p/environ; done 2>/dev/null;"
               " echo PIDS $(ls -d /proc/[0-9]* | wc -l)")

    async def launch() -> tuple[list[str], object]:
        confined = await confine(request(ws, command), None)
        assert confined.status.kind == "bwrap"
        started = editor_launch(confined, command, DEFAULT_ENV_BLOCKLIST)
        return [started.command, *started.args], started

    argv, started = anyio.run(launch)
    try:
        result = run(argv, {**EDITOR_ENV, "PATH": os.environ["PATH"]}, cwd=ws)
    finally:
        started.cleanup()  # type: ignore[attr-defined]
    assert "PIDS" in result.stdout, result.stderr
    assert "PLAIN=visible" in result.stdout  # it did read the environments
    assert "CANARY" not in result.stdout + result.stderr


def test_nothing_in_the_editors_environment_runs_before_the_names_are_gone(
        tmp_path: Path) -> None:
    """An exported function named `exec` (this one drops `env -u ...` and runs the command
    with every name), BASH_ENV, BASHOPTS=execfail: the scrub runs in bash's privileged mode,
    which takes none of them."""
    rc = tmp_path / "rc"
    rc.write_text("echo BASH_ENV-RAN >&2\n")
    skip_env = ('() { while [ "$#" -gt 0 ] && [ "${1##*/}" != bash ]; do shift; done; '
                'builtin exec "$@"; }')
    env = {**EDITOR_ENV, "BASH_FUNC_exec%%": skip_env, "BASH_ENV": str(rc),
           "BASHOPTS": "execfail"}
    result = run(scrubbed(["bash", "-c", "env"], DEFAULT_ENV_BLOCKLIST), env)
    assert "CANARY" not in result.stdout + result.stderr
    assert result.stderr.count("BASH_ENV-RAN") <= 1  # the command's own bash may read it
    assert "PLAIN=visible" in result.stdout


def test_programs_outside_the_sandbox_go_by_absolute_path(tmp_path: Path) -> None:
    """With `.` or `node_modules/.bin` on the editor's PATH (resolved from the workspace),
    a planted `env`, `sh` or `bash` would run outside the sandbox with every secret."""
    ws = tmp_path / "ws"
    (ws / "node_modules" / ".bin").mkdir(parents=True)
    for name in ("env", "sh", "bash"):
        planted = ws / "node_modules" / ".bin" / name
        planted.write_text(f"#!/bin/sh\necho PLANTED-{name} >> {tmp_path}/ran\nexit 3\n")
        planted.chmod(0o755)
    command = "echo ran; exit 5"

    async def launch() -> tuple[list[str], object]:
        confined = await confine(request(ws, command), None)
        started = editor_launch(confined, command, DEFAULT_ENV_BLOCKLIST)
        return [started.command, *started.args], started

    argv, started = anyio.run(launch)
    try:
        path = f"node_modules/.bin:.:{os.environ['PATH']}"
        result = run(argv, {**EDITOR_ENV, "PATH": path}, cwd=ws)
    finally:
        started.cleanup()  # type: ignore[attr-defined]
    assert not (tmp_path / "ran").exists()
    assert (result.returncode, result.stdout) == (5, "ran\n"), result.stderr
    assert argv[0].startswith("/") and "CANARY" not in result.stdout + result.stderr


def test_the_launcher_for_many_repositories_takes_nothing_from_the_environment(
        tmp_path: Path) -> None:
    """Past five git directories the launcher is bash, not sh: it runs privileged too, so
    the editor's BASH_ENV runs only inside the sandbox (where /tmp is private)."""
    from tests.sandbox.conftest import git_dir

    ws = tmp_path / "ws"
    for i in range(7):
        git_dir(ws / f"r{i}" / ".git")
    marker = tmp_path / "outside"
    rc = tmp_path / "rc"
    rc.write_text(f"touch {marker}\n")

    async def launch() -> tuple[list[str], object]:
        confined = await confine(request(ws, "echo ran"), None)
        started = editor_launch(confined, "echo ran", DEFAULT_ENV_BLOCKLIST)
        return [started.command, *started.args], started

    argv, started = anyio.run(launch)
    try:
        result = run(argv, {**EDITOR_ENV, "PATH": os.environ["PATH"], "BASH_ENV": str(rc)},
                     cwd=ws)
    finally:
        started.cleanup()  # type: ignore[attr-defined]
    assert result.stdout == "ran\n", result.stderr
    assert not marker.exists()
