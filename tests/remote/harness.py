"""Editor windows on the shared daemon: each one `acpd serve --remote=auto` spawned by the
official Python SDK client, all of a test in one private runtime directory and data dir.

A `Place` is one test's world: its own XDG_RUNTIME_DIR (short, under /tmp: a Unix socket
path is limited to 107 bytes), its data directory and config; `window()` opens an editor
window on it (optionally behind the logging tee, whose wire log is then validated like the
e2e runs'); `stop_daemons()` ends whatever daemon a test left (SIGTERM, then SIGKILL).
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from acp.stdio import spawn_agent_process

from tests.e2e.client import RecordingClient
from tests.e2e.harness import Run, alive, check_wire, daemon_env
from tests.e2e.schema import REPO


@dataclass
class Place:
    root: Path
    data_dir: Path
    workspace: Path
    script: Path | None = None
    config: Path | None = None
    extra_env: dict[str, str] = field(default_factory=dict)
    windows: int = 0

    @property
    def runtime(self) -> Path:
        return self.root / "run"

    @property
    def socket_dir(self) -> Path:
        return self.runtime / "acpd"

    def env(self) -> dict[str, str]:
        env = {**os.environ, **daemon_env(self.root, self.extra_env)}
        env["XDG_RUNTIME_DIR"] = str(self.runtime)
        if self.config is not None:
            env["ACPD_CONFIG"] = str(self.config)
        return env

    def serve_argv(self, *extra: str) -> list[str]:
        argv = [sys.executable, "-m", "acpd", "serve", "--remote=auto",
                "--data-dir", str(self.data_dir)]
        if self.script is not None:
            argv += ["--model", f"scripted:{self.script}"]
        return [*argv, *extra]

    def cli(self, *args: str, timeout: float = 60) -> subprocess.CompletedProcess[str]:
        """`acpd ARGS` in this place's environment."""
        return subprocess.run([sys.executable, "-m", "acpd", *args], env=self.env(), cwd=REPO,
                              capture_output=True, text=True, timeout=timeout)

    def daemon_pids(self) -> list[int]:
        """Live daemons of this place (their life-lock files name them)."""
        pids = []
        for lock in self.socket_dir.glob("*.pid") if self.socket_dir.exists() else []:
            text = lock.read_text().strip()
            if text.isdigit() and alive(int(text)) and _is_daemon(int(text)):
                pids.append(int(text))
        return pids

    def sockets(self) -> list[Path]:
        return sorted(self.socket_dir.glob("*.sock")) if self.socket_dir.exists() else []

    def daemon_log(self) -> str:
        logs = sorted(self.socket_dir.glob("*.log")) if self.socket_dir.exists() else []
        return "\n".join(p.read_text(errors="replace") for p in logs)

    def stop_daemons(self) -> None:
        pids = self.daemon_pids()
        for pid in pids:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGTERM)
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline and any(alive(p) for p in pids):
            time.sleep(0.05)
        for pid in pids:
            if alive(pid):
                with contextlib.suppress(ProcessLookupError):
                    os.kill(pid, signal.SIGKILL)


def _is_daemon(pid: int) -> bool:
    try:
        cmdline = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
    except OSError:
        return False
    return b"daemon" in cmdline and b"acpd" in cmdline


@contextlib.contextmanager
def place(tmp_path: Path, data_dir: Path, workspace: Path) -> Iterator[Place]:
    root = Path(tempfile.mkdtemp(prefix="acpd-rt-"))
    (root / "run").mkdir(mode=0o700)
    here = Place(root, data_dir, workspace)
    try:
        yield here
    finally:
        here.stop_daemons()
        shutil.rmtree(root, ignore_errors=True)


@dataclass
class Window:
    run: Run
    process: asyncio.subprocess.Process
    stderr_path: Path

    def stderr(self) -> str:
        return self.stderr_path.read_text(errors="replace")


@asynccontextmanager
async def window(
    where: Place, *, client: RecordingClient | None = None, tee: bool = True,
    extra: tuple[str, ...] = (),
) -> AsyncIterator[Window]:
    """One editor window: the SDK client spawning `acpd serve --remote=auto`. The wire
    is checked at the end when it went through the tee and the window was not killed."""
    where.windows += 1
    name = f"w{where.windows}"
    log = where.root / f"{name}.wire.log"
    stderr_path = where.root / f"{name}.stderr.log"
    client = client or RecordingClient()
    argv = where.serve_argv(*extra)
    if tee:
        argv = [sys.executable, "-m", "tests.e2e.tee", str(log), "--", *argv]
    opened: Window | None = None
    killed = False
    try:
        with stderr_path.open("ab") as stderr:
            async with spawn_agent_process(
                client, argv[0], *argv[1:], env=where.env(), cwd=REPO,
                transport_kwargs={"stderr": stderr.fileno(), "shutdown_timeout": 5.0},
            ) as (conn, process):
                run = Run(conn, process, client, log, stderr_path, where.workspace)
                opened = Window(run, process, stderr_path)
                try:
                    yield opened
                finally:
                    killed = process.returncode is not None
                    await client.close()
    except (ConnectionResetError, BrokenPipeError):
        if opened is None or opened.process.returncode is None:
            raise
    if tee and not killed and opened is not None:
        try:
            check_wire(opened.run)
        except AssertionError as exc:
            tail = where.daemon_log()[-4000:]
            raise AssertionError(f"{exc}\n--- daemon log ---\n{tail}") from None


async def close_window(win: Window) -> int:
    """The editor quits: the agent process is terminated (as Zed does on closing)."""
    with contextlib.suppress(ProcessLookupError):
        win.process.terminate()
    return await asyncio.wait_for(win.process.wait(), 10)


async def wait_until(predicate: Any, within: float = 30.0, what: str = "condition") -> None:
    deadline = time.monotonic() + within
    while not await asyncio.to_thread(predicate):
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        await asyncio.sleep(0.05)


def socket_path(where: Place) -> Path:
    """Where the forwarders of this place look for their daemon (asked of acpd itself, in
    the same environment and with the same options)."""
    model = f"scripted:{where.script}" if where.script is not None else None
    code = ("import sys; from acpd.remote.paths import socket_name; "
            "print(socket_name(None, sys.argv[1], sys.argv[2] or None))")
    out = subprocess.run([sys.executable, "-c", code, str(where.data_dir), model or ""],
                         env=where.env(), cwd=REPO, capture_output=True, text=True, check=True)
    return where.socket_dir / f"{out.stdout.strip()}.sock"


def raw_forwarder(where: Place) -> subprocess.CompletedProcess[bytes]:
    """One `acpd serve --remote=auto` that gets an initialize and then end of input."""
    line = (b'{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":1,'
            b'"clientCapabilities":{}}}\n')
    return subprocess.run(where.serve_argv(), input=line, env=where.env(), cwd=REPO,
                          capture_output=True, timeout=60)
