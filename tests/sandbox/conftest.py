from __future__ import annotations

import contextlib
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import anyio.abc
import pytest

REPO = Path(__file__).resolve().parents[2]


def git_dir(path: Path) -> Path:
    for name in ("hooks", "info", "objects", "refs"):
        (path / name).mkdir(parents=True)
    (path / "HEAD").write_text("ref: refs/heads/main\n")
    (path / "config").write_text("[core]\n\tbare = false\n")
    (path / "hooks" / "pre-commit.sample").write_text("#!/bin/sh\n")
    return path


@pytest.fixture
def home(tmp_path: Path) -> Path:
    home = tmp_path / "home"
    (home / ".ssh").mkdir(parents=True)
    (home / ".ssh" / "id_ed25519").write_text("PRIVATE-KEY-CANARY")
    (home / ".aws").mkdir()
    (home / ".aws" / "credentials").write_text("AWS-CANARY")
    return home


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    """A workspace with secrets, a repository and a nested repository."""
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / ".env").write_text("ENV-CANARY\n")
    (ws / "src").mkdir()
    (ws / "src" / ".env.local").write_text("ENV-LOCAL-CANARY\n")
    (ws / "secrets").mkdir()
    (ws / "secrets" / "token.txt").write_text("TOKEN-CANARY\n")
    (ws / "hello.txt").write_text("hello\n")
    git_dir(ws / ".git")
    git_dir(ws / "vendor" / "lib" / ".git")
    return ws


@pytest.fixture
def outside(tmp_path: Path) -> Path:
    path = tmp_path / "outside"
    path.mkdir()
    return path


def sandbox_env(home: Path, tmp_path: Path, **extra: str) -> dict[str, str]:
    env = {**os.environ, "HOME": str(home), "ACPD_CONFIG": str(tmp_path / "no-config.toml"),
           "XDG_CONFIG_HOME": str(tmp_path / "cfg"), "PYTHONPATH": str(REPO)}
    env.update(extra)
    return env


def sandbox_run(ws: Path, home: Path, tmp_path: Path, command: str, *options: str,
                env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    argv = [sys.executable, "-m", "acpd", "sandbox", "run", "--cwd", str(ws), *options, "--",
            "bash", "-c", command]
    return subprocess.run(argv, capture_output=True, text=True, timeout=60,
                          env=env or sandbox_env(home, tmp_path), stdin=subprocess.DEVNULL)


@pytest.fixture
def loopback_server() -> Iterator[int]:
    """A TCP listener on 127.0.0.1 in the test's (the host's) network namespace."""
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(8)
    try:
        yield server.getsockname()[1]
    finally:
        server.close()


def marked(marker: str) -> list[int]:
    """Live processes whose command line holds `marker` (found from the host's /proc)."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            cmdline = (entry / "cmdline").read_bytes()
            state = (entry / "stat").read_text().rsplit(")", 1)[1].split()[0]
        except (OSError, IndexError):
            continue
        if marker.encode() in cmdline and state not in ("Z", "X"):
            found.append(int(entry.name))
    return found


def escapes(marker: str) -> str:
    """Every way a command tries to leave something running after it ends."""
    return (
        f"setsid sleep {marker} & "
        f"nohup sleep {marker} >/dev/null 2>&1 & "
        f"(sleep {marker} &) ; "
        f"sleep {marker} & disown; "
        f"( trap '' TERM HUP INT; while :; do sleep {marker}; done ) & "
        f"setsid bash -c 'trap \"\" TERM; sleep {marker}' & "
    )


def sleep_marker() -> str:
    return f"77.{int.from_bytes(os.urandom(3), 'big'):07d}"


def kill_marked(marker: str) -> None:
    """What a failed test left running."""
    for pid in marked(marker):
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)


class FakeEditor:
    """`terminal/*` as an editor serves them: the command runs with the editor's own
    environment plus the params' `env`, its output (both streams) collected."""

    def __init__(self, env: dict[str, str]) -> None:
        self.env = env
        self.created: list[dict[str, Any]] = []
        self._terminals: dict[str, tuple[anyio.abc.Process, Path]] = {}
        self._dir = Path(tempfile.mkdtemp(prefix="acpd-fake-editor-"))

    input_closed = False

    async def notify(self, method: str, params: Any) -> None:
        return None

    async def request(self, method: str, params: Any, *,
                      timeout: float | None = 30.0) -> Any:  # noqa: ASYNC109 (EditorPeer's)
        if method == "terminal/create":
            self.created.append(params)
            tid = f"t{len(self.created)}"
            out = self._dir / tid
            env = {**self.env, **{v["name"]: v["value"] for v in params["env"]}}
            with out.open("wb") as sink:
                proc = await anyio.open_process([params["command"], *params["args"]], env=env,
                                                cwd=params["cwd"], stdin=subprocess.DEVNULL,
                                                stdout=sink, stderr=subprocess.STDOUT)
            self._terminals[tid] = (proc, out)
            return {"terminalId": tid}
        proc, out = self._terminals[params["terminalId"]]
        if method == "terminal/output":
            return {"output": out.read_text(errors="replace"), "truncated": False}
        if method == "terminal/wait_for_exit":
            code = await proc.wait()
            return {"exitCode": code} if code >= 0 else {"signal": signal.Signals(-code).name}
        if method == "terminal/kill":
            proc.kill()
            return {}
        if method == "terminal/release":
            proc.kill()
            return {}
        raise AssertionError(method)

    def close(self) -> None:
        for proc, _out in self._terminals.values():
            if proc.returncode is None:
                proc.kill()
        shutil.rmtree(self._dir, ignore_errors=True)
