"""What a sandboxed command may keep: /tmp across the commands of a workspace, HOME caches;
and the editor path's bash launcher (its pins, its refusal without bubblewrap)."""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path

import anyio
import pytest

from acpd.daemon.confine import confine, editor_launch
from acpd.daemon.editor import EditorTerminalRunner
from acpd.daemon.local import LocalCommandRunner
from acpd.sandbox import relaybin
from acpd.sandbox.build import CACHES_ENV
from acpd.sandbox.rules import PathRules
from acpd.sandbox.status import sandbox_status
from acpd.tools.capabilities import CommandRequest, CommandResult
from tests.e2e.harness import sleep_marker, wait_unmarked
from tests.sandbox.conftest import FakeEditor, git_dir, kill_marked

pytestmark = [
    pytest.mark.anyio,
    pytest.mark.skipif(not sandbox_status().available, reason="no sandbox here"),
]


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture(autouse=True)
def sh_launcher(monkeypatch: pytest.MonkeyPatch) -> None:
    """These tests run the launcher's argv themselves: no relay (tests/sandbox/test_relay.py
    has the relay client's)."""
    monkeypatch.setenv(relaybin.SWITCH_ENV, "off")


def request(ws: Path, command: str, rules: PathRules | None = None) -> CommandRequest:
    return CommandRequest(command, str(ws), 30, 1 << 20, roots=(str(ws),),
                          sandbox=rules or PathRules())


async def run(ws: Path, command: str, rules: PathRules | None = None) -> CommandResult:
    async def ignore(*_: object) -> None:
        return None

    return await LocalCommandRunner().run(request(ws, command, rules), ignore, ignore)


async def test_tmp_persists_across_a_workspace_s_commands_and_no_further(
    tmp_path: Path,
) -> None:
    ws, other = tmp_path / "ws", tmp_path / "other"
    ws.mkdir()
    other.mkdir()
    first = await run(ws, "echo STATE-1 > /tmp/state; mkdir -p /tmp/build/obj; echo $TMPDIR")
    assert first.exit_code == 0 and first.sandbox == "bwrap"
    assert first.output.strip() == "/tmp"
    second = await run(ws, "cat /tmp/state; ls /tmp/build")
    assert "STATE-1" in second.output and "obj" in second.output
    elsewhere = await run(other, "cat /tmp/state")
    assert elsewhere.exit_code != 0 and "STATE-1" not in elsewhere.output
    assert "state" not in os.listdir("/tmp")  # not the host's /tmp
    (tmp_path / "host-marker").write_text("HOST-TMP")
    host = await run(ws, f"cat {tmp_path / 'host-marker'}")
    assert host.exit_code != 0 and "HOST-TMP" not in host.output


async def test_programs_on_path_under_tmp_still_run_read_only(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A checkout under /tmp (CI's, a scratch clone) has its tools in `.venv/bin` or
    `node_modules/.bin` on PATH: the private /tmp must not hide them (`ruff: command not
    found`), and they stay read-only; the rest of the host's /tmp stays hidden."""
    venv = tmp_path / "checkout" / ".venv"
    (venv / "bin").mkdir(parents=True)
    (venv / "lib").mkdir()
    (venv / "lib" / "data").write_text("LIB-DATA\n")
    tool = venv / "bin" / "mytool"
    tool.write_text('#!/bin/sh\ncat "$(dirname "$0")/../lib/data"\n')
    tool.chmod(0o755)
    (tmp_path / "checkout" / "private.txt").write_text("NOT-ON-PATH")
    monkeypatch.setenv("PATH", f"{venv / 'bin'}:{os.environ.get('PATH', '')}")
    ws = tmp_path / "ws"
    ws.mkdir()
    result = await run(ws, f"mytool; touch {venv / 'lib' / 'x'} 2>/dev/null || echo READ-ONLY; "
                           f"cat {tmp_path / 'checkout' / 'private.txt'}")
    assert result.sandbox == "bwrap"
    assert "LIB-DATA" in result.output and "READ-ONLY" in result.output, result.output
    assert "NOT-ON-PATH" not in result.output and not (venv / "lib" / "x").exists()


@pytest.fixture
def home() -> Iterator[Path]:
    """A HOME outside /tmp (the sandbox's /tmp is its own)."""
    path = Path(tempfile.mkdtemp(dir="/var/tmp"))
    yield path
    shutil.rmtree(path)


async def test_home_caches_are_writable_unless_deny_write_covers_them(
    tmp_path: Path, home: Path, monkeypatch: pytest.MonkeyPatch,
) -> None:
    for cache in (".cache/pip", ".npm", ".cargo/registry", ".config"):
        (home / cache).mkdir(parents=True)
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.delenv("XDG_CACHE_HOME", raising=False)
    ws = tmp_path / "ws"
    ws.mkdir()
    writes = ("touch ~/.cache/pip/wheel ~/.npm/pkg ~/.cargo/registry/crate; "
              "touch ~/.config/startup 2>/dev/null || echo CONFIG-READ-ONLY")
    result = await run(ws, writes)
    assert result.exit_code == 0, result.output
    assert "CONFIG-READ-ONLY" in result.output
    assert (home / ".cache/pip/wheel").exists() and (home / ".npm/pkg").exists()
    assert (home / ".cargo/registry/crate").exists()
    assert not (home / ".config/startup").exists()
    denied = await run(ws, "touch ~/.npm/other 2>/dev/null || echo NPM-READ-ONLY",
                       PathRules(deny_write=("~/.npm/**",)))
    assert "NPM-READ-ONLY" in denied.output and not (home / ".npm/other").exists()
    monkeypatch.setenv(CACHES_ENV, "off")
    off = await run(ws, "touch ~/.cache/pip/x 2>/dev/null || echo CACHE-READ-ONLY")
    assert "CACHE-READ-ONLY" in off.output and not (home / ".cache/pip/x").exists()


async def launch(ws: Path, command: str) -> tuple[list[str], object]:
    confined = await confine(request(ws, command), None)
    started = editor_launch(confined, command)
    return [started.command, *started.args], started


def test_the_editor_launcher_runs_the_command_confined_and_pins_git(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    git_dir(ws / ".git")
    argv, started = anyio.run(launch, ws, (
        "echo ran; mv .git moved 2>/dev/null || echo PINNED;"
        " printf x > .git/hooks/pre-commit 2>/dev/null || echo HOOKS-READ-ONLY;"
        " touch /usr/acpd-x 2>/dev/null || echo ROOT-READ-ONLY"))
    try:
        out = subprocess.run(argv, cwd=ws, capture_output=True, text=True, timeout=60)
    finally:
        started.cleanup()  # type: ignore[attr-defined]
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["ran", "PINNED", "HOOKS-READ-ONLY", "ROOT-READ-ONLY"]
    assert (ws / ".git").is_dir() and not (ws / ".git/hooks/pre-commit").exists()
    assert not any(Path(a).exists() for a in argv if a.endswith((".head", ".tail")))


def test_past_five_repositories_the_bash_launcher_pins_every_one(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    for i in range(7):
        git_dir(ws / f"r{i}" / ".git")
    argv, started = anyio.run(launch, ws, (
        "for i in 0 1 2 3 4 5 6; do mv r$i/.git r$i/moved 2>/dev/null || echo PINNED;"
        " printf x > r$i/.git/hooks/pre-commit 2>/dev/null || echo HOOKS-READ-ONLY; done"))
    assert os.path.basename(argv[0]) == "bash"
    try:
        out = subprocess.run(argv, cwd=ws, capture_output=True, text=True, timeout=60)
    finally:
        started.cleanup()  # type: ignore[attr-defined]
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["PINNED", "HOOKS-READ-ONLY"] * 7


def test_a_git_directory_swapped_for_a_link_is_not_pinned_writable(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    git_dir(ws / ".git")
    elsewhere = Path(tempfile.mkdtemp(dir="/var/tmp"))  # outside /tmp: visible in the sandbox
    try:
        argv, started = anyio.run(launch, ws, "touch .git/EVIL 2>/dev/null; echo done")
        shutil.rmtree(ws / ".git")  # after the walk, before the launcher runs
        git_dir(elsewhere / "repo")  # looks like one: the read-only binds find their paths
        os.symlink(elsewhere / "repo", ws / ".git")
        try:
            out = subprocess.run(argv, cwd=ws, capture_output=True, text=True, timeout=60)
        finally:
            started.cleanup()  # type: ignore[attr-defined]
        # bubblewrap may refuse the swapped paths outright; either way nothing is written
        # through the link (pinned by path, it would have been bound writable).
        assert out.returncode != 0 or "done" in out.stdout
        assert not (elsewhere / "repo" / "EVIL").exists()
    finally:
        shutil.rmtree(elsewhere)


def test_the_launcher_refuses_when_bubblewrap_is_gone(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    argv, started = anyio.run(launch, ws, "echo RAN")
    binary = argv.index("acpd-sandbox") + 1
    argv[binary] = str(tmp_path / "no-bwrap")
    try:
        out = subprocess.run(argv, cwd=ws, capture_output=True, text=True, timeout=60)
    finally:
        started.cleanup()  # type: ignore[attr-defined]
    assert out.returncode == 125 and "RAN" not in out.stdout
    assert "NOT RUN" in out.stderr


def test_the_launcher_pins_a_directory_only_where_its_physical_path_is(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    (ws / "real").mkdir(parents=True)
    os.symlink(ws / "real", ws / "link")
    argv, started = anyio.run(launch, ws, "cat /proc/self/mountinfo")
    cut = argv.index("--", argv.index("acpd-sandbox"))
    argv[cut:cut] = [str(ws / "real"), str(ws / "link"), str(ws / "missing")]
    try:
        out = subprocess.run(argv, cwd=ws, capture_output=True, text=True, timeout=60)
    finally:
        started.cleanup()  # type: ignore[attr-defined]
    assert out.returncode == 0, out.stderr
    mounts = [line.split()[4] for line in out.stdout.splitlines()]
    assert str(ws / "real") in mounts
    assert str(ws / "link") not in mounts and str(ws / "missing") not in mounts


async def test_a_launcher_command_cancelled_at_any_moment_leaves_nothing(
    tmp_path: Path,
) -> None:
    """An editor whose terminal/kill kills bubblewrap alone (its pid, not its group), in the
    sandbox's first milliseconds, left the sandbox's init alive: it ran the command anyway,
    or waited forever holding the terminal open. Cancelled at every moment of its start, the
    daemon ends what the kill left."""
    ws = tmp_path / "ws"
    ws.mkdir()
    editor = FakeEditor(dict(os.environ))
    runner = EditorTerminalRunner(editor, "s1", poll_interval=0.05)
    marker = sleep_marker()

    async def ignore(*_: object) -> None:
        return None

    try:
        for step in range(40):
            with anyio.move_on_after(step / 1000):
                await runner.run(request(ws, f"sleep {marker}"), ignore, ignore)
        assert await wait_unmarked(marker, within=5) == []
    finally:
        editor.close()
        kill_marked(marker)
