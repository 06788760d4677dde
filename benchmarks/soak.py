"""Soak: drive one real acpd daemon through many rounds of sessions and watch what it keeps.

A user runs one daemon for days (one per editor window, or the shared daemon of
acpd/remote serving every window). Whatever a finished session, prompt, tool call, terminal,
permission prompt or window leaves behind adds up. This script drives the real daemon
through the official Python SDK client and the scripted model, round after round, and
samples after each batch of rounds: the daemon's open fds, RSS, threads, child processes
(zombies apart), asyncio tasks (shared daemon only: `acpd ps` reports them), files in its
private TMPDIR and its data directory.

One round: a new session whose prompt reads, greps, writes and edits a file, runs bash
(plain, a big output that overflows to the store, one killed at its timeout, one failing),
calls an unknown tool; a second prompt whose `sleep` is cancelled mid-command; then the
session is closed, loaded again (history replayed), prompted once more and deleted.
Modes: `editor` (the client offers terminals: bash runs in editor terminals), `local`
(no terminal: the daemon's local runner), `remote` (the shared daemon: each round is a
new editor window, `acpd serve --remote=auto`; every other round the window is closed
in the middle of a command, its turn going on detached).

Figures: each metric after the warm-up batch and after the last one, and the growth per
round between them. Baseline: the warm-up batch of the same run. A metric that grows
with rounds after warm-up is a leak; RSS is noisy (allocator arenas), fds, children,
tasks and files are exact.

Run: .venv/bin/python benchmarks/soak.py [--rounds 40] [--batch 10] [--mode editor|local|remote|all]
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import logging
import os
import re
import shutil
import signal
import sys
import tempfile
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from acp.schema import ClientCapabilities, FileSystemCapabilities, TextContentBlock
from acp.stdio import spawn_agent_process
from tests.e2e.client import RecordingClient

REPO = Path(__file__).resolve().parents[1]


def bash(command: str, **extra: Any) -> dict[str, Any]:
    return {"name": "bash", "arguments": {"command": command, **extra}}


SCRIPT = [
    # prompt 1: files, commands, failures
    {"text": "Looking.", "tool_calls": [
        {"name": "read", "arguments": {"path": "hello.txt"}},
        {"name": "grep", "arguments": {"pattern": "hello", "path": "."}}]},
    {"tool_calls": [{"name": "write", "arguments": {"path": "out.txt", "content": "alpha\n"}}]},
    {"tool_calls": [{"name": "edit", "arguments": {
        "path": "out.txt", "old_string": "alpha", "new_string": "beta"}}]},
    {"tool_calls": [bash("echo hi; ls")]},
    {"tool_calls": [bash("seq 1 200000")]},  # past the output limit: overflow to the store
    {"tool_calls": [bash("echo started; sleep 5", timeout=1)]},  # killed at its timeout
    {"tool_calls": [bash("echo failing >&2; exit 3"),
                    {"name": "no_such_tool", "arguments": {}},
                    {"name": "read", "raw_arguments": '{"path": '}]},
    {"text": "Done."},
    # prompt 2: cancelled in the middle of a command
    {"tool_calls": [bash("echo cancel-me; sleep 6")]},
    {"text": "never reached"},
]


def text(value: str) -> list[Any]:
    return [TextContentBlock(type="text", text=value)]


# --- sampling -----------------------------------------------------------------------------


def _stat(pid: int) -> tuple[str, int] | None:
    try:
        raw = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    fields = raw[raw.rindex(")") + 2:].split()
    return fields[0], int(fields[1])


def descendants(pid: int) -> tuple[int, int]:
    """(live descendants, zombies among them) of `pid`."""
    parents: dict[int, tuple[str, int]] = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            found = _stat(int(entry))
            if found is not None:
                parents[int(entry)] = found
    kids: dict[int, list[int]] = {}
    for child, (_state, parent) in parents.items():
        kids.setdefault(parent, []).append(child)
    live = zombies = 0
    todo = list(kids.get(pid, []))
    while todo:
        child = todo.pop()
        if parents[child][0] == "Z":
            zombies += 1
        else:
            live += 1
        todo.extend(kids.get(child, []))
    return live, zombies


def fd_kinds(pid: int, root: Path) -> list[tuple[int, str]]:
    """What the daemon's fds point at, counted by kind (numbers and the world's path
    folded), most first: where a growing fd count comes from."""
    kinds: dict[str, int] = {}
    for fd in os.listdir(f"/proc/{pid}/fd"):
        try:
            target = os.readlink(f"/proc/{pid}/fd/{fd}")
        except OSError:
            continue
        target = target.replace(str(root), "ROOT")
        target = re.sub(r"[0-9a-f]{16,}", "HASH", target)
        target = re.sub(r"\d+", "N", target)
        kinds[target] = kinds.get(target, 0) + 1
    return sorted(((n, k) for k, n in kinds.items()), reverse=True)


def count_files(root: Path) -> int:
    total = 0
    for _dir, dirs, files in os.walk(root):
        total += len(files) + len(dirs)
    return total


def proc_status(pid: int) -> dict[str, int]:
    values: dict[str, int] = {}
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        key, _, rest = line.partition(":")
        if key in ("VmRSS", "Threads"):
            values[key] = int(rest.split()[0])
    return values


@dataclass
class Sample:
    rounds: int
    fds: int
    rss_kb: int
    threads: int
    children: int
    zombies: int
    tmp_files: int
    data_files: int
    data_kb: int
    tasks: int | None = None
    sessions: int | None = None


def sample(pid: int, rounds: int, tmp: Path, data: Path, tasks: int | None = None,
           sessions: int | None = None) -> Sample:
    status = proc_status(pid)
    live, zombies = descendants(pid)
    size = sum(p.stat().st_size for p in data.rglob("*") if p.is_file())
    return Sample(
        rounds, len(os.listdir(f"/proc/{pid}/fd")), status["VmRSS"], status["Threads"],
        live, zombies, count_files(tmp), count_files(data), size // 1024, tasks, sessions,
    )


# --- one world ----------------------------------------------------------------------------


@dataclass
class World:
    root: Path
    spread: bool = False

    @property
    def data(self) -> Path:
        return self.root / "data"

    @property
    def tmp(self) -> Path:
        return self.root / "tmp"

    @property
    def workspace(self) -> Path:
        return self.root / "ws"

    @property
    def script(self) -> Path:
        return self.root / "script.json"

    def env(self) -> dict[str, str]:
        return {
            **os.environ,
            "ACPD_CONFIG": str(self.root / "config.toml"),
            "XDG_CONFIG_HOME": str(self.root / "config"),
            "XDG_DATA_HOME": str(self.root / "share"),
            "XDG_RUNTIME_DIR": str(self.root / "run"),
            "TMPDIR": str(self.tmp),
            "PYTHONPATH": str(REPO),
            "ACPD_LOG": "WARNING",
        }


@contextlib.contextmanager
def world(spread: bool = False) -> Any:
    root = Path(tempfile.mkdtemp(prefix="acpd-soak-"))
    here = World(root, spread)
    for folder in (here.data, here.tmp, here.workspace, root / "run"):
        folder.mkdir(mode=0o700)
    (here.workspace / "hello.txt").write_text("hello world\n")
    here.script.write_text(json.dumps({"turns": SCRIPT}))
    # `ask` mode: the writes and commands that are not auto-allowed ask the client.
    (root / "config.toml").write_text('[tools.shell]\noutput_byte_limit = 65536\n')
    try:
        yield here
    finally:
        if os.environ.get("SOAK_KEEP"):
            print(f"  (kept {root})")
        else:
            shutil.rmtree(root, ignore_errors=True)


def serve_argv(here: World, remote: bool) -> list[str]:
    argv = [sys.executable, "-m", "acpd", "serve", "--data-dir", str(here.data),
            "--model", f"scripted:{here.script}"]
    return [*argv, "--remote=auto"] if remote else argv


@contextlib.asynccontextmanager
async def editor(here: World, remote: bool, client: RecordingClient) -> AsyncIterator[Any]:
    errors = (here.root / "stderr.log").open("ab")
    try:
        argv = serve_argv(here, remote)
        async with spawn_agent_process(
            client, argv[0], *argv[1:], env=here.env(), cwd=str(REPO),
            transport_kwargs={"stderr": errors.fileno(), "shutdown_timeout": 5.0},
        ) as (conn, process):
            try:
                yield conn, process
            finally:
                await client.close()
    finally:
        errors.close()


# --- one round ----------------------------------------------------------------------------


async def send(conn: Any, method: str, params: dict[str, Any]) -> Any:
    return await conn._conn.send_request(method, params)


async def wait_for_update(client: RecordingClient, needle: str, start: int) -> None:
    def seen() -> bool:
        return any(needle in json.dumps(u) for u in client.updates[start:])

    await client.wait_for(seen, within=60)


async def cancelled_prompt(conn: Any, client: RecordingClient, session_id: str) -> str:
    start = len(client.updates)
    prompt = asyncio.ensure_future(conn.prompt(session_id=session_id, prompt=text("cancel")))
    await wait_for_update(client, "cancel-me", start)
    await asyncio.sleep(0.2)  # the command runs
    await conn.cancel(session_id=session_id)
    return str((await prompt).stop_reason)


async def session_round(conn: Any, client: RecordingClient, here: World, n: int) -> None:
    """With `here.spread`, each round works in a workspace of its own, removed after it
    (a shared daemon serves many projects over its life)."""
    workspace = here.workspace
    if here.spread:
        workspace = here.root / f"ws-{n}"
        workspace.mkdir()
        (workspace / "hello.txt").write_text("hello world\n")
    cwd = str(workspace)
    session_id = (await conn.new_session(cwd=cwd, mcp_servers=[])).session_id
    stop = (await conn.prompt(session_id=session_id, prompt=text("work"))).stop_reason
    assert stop == "end_turn", stop
    assert await cancelled_prompt(conn, client, session_id) == "cancelled"
    await send(conn, "session/close", {"sessionId": session_id})
    await conn.load_session(cwd=cwd, session_id=session_id, mcp_servers=[])
    stop = (await conn.prompt(session_id=session_id, prompt=text("again"))).stop_reason
    assert stop == "end_turn", stop
    await send(conn, "session/delete", {"sessionId": session_id})
    if here.spread:
        shutil.rmtree(workspace)


def capabilities(terminal: bool) -> ClientCapabilities:
    return ClientCapabilities(
        fs=FileSystemCapabilities(read_text_file=True, write_text_file=True), terminal=terminal
    )


# --- the modes ----------------------------------------------------------------------------


def settle(pid: int, quiet: float = 1.0) -> None:
    """Let killed commands be reaped and closed transports go before a sample."""
    time.sleep(quiet)


async def stdio_soak(rounds: int, batch: int, terminal: bool, spread: bool) -> list[Sample]:
    samples: list[Sample] = []
    with world(spread) as here:
        client = RecordingClient()
        async with editor(here, False, client) as (conn, process):
            await conn.initialize(protocol_version=1, client_capabilities=capabilities(terminal))
            samples.append(sample(process.pid, 0, here.tmp, here.data))
            for n in range(1, rounds + 1):
                async with asyncio.timeout(180):
                    await session_round(conn, client, here, n)
                client.events.clear()
                if n % batch == 0:
                    await asyncio.to_thread(settle, process.pid)
                    samples.append(sample(process.pid, n, here.tmp, here.data))
                    report_line(samples[-1])
            for count, kind in fd_kinds(process.pid, here.root)[:6]:
                print(f"    {count:4d} fds: {kind}")
    return samples


def daemon_pid(here: World) -> int:
    for lock in (here.root / "run" / "acpd").glob("*.pid"):
        value = lock.read_text().strip()
        if value.isdigit() and Path(f"/proc/{value}").exists():
            return int(value)
    raise RuntimeError("no shared daemon found")


async def daemon_status(here: World) -> tuple[int | None, int | None]:
    """The shared daemon's asyncio task count and live sessions, as `_acpd/ps` says."""
    from acpd.remote.cli import Control

    def ask() -> Any:
        sockets = sorted((here.root / "run" / "acpd").glob("*.sock"))
        control = Control(str(sockets[0]))
        try:
            return control.call("_acpd/ps", {})
        finally:
            control.close()

    status = await asyncio.to_thread(ask)
    value = status.get("tasks") if isinstance(status, dict) else None
    sessions = status.get("sessions") if isinstance(status, dict) else None
    return (value if isinstance(value, int) else None,
            len(sessions) if isinstance(sessions, list) else None)


async def remote_round(here: World, n: int) -> None:
    client = RecordingClient()
    async with editor(here, True, client) as (conn, process):
        await conn.initialize(protocol_version=1, client_capabilities=capabilities(n % 2 == 0))
        await session_round(conn, client, here, n)
        if n % 2:
            # The window goes away in the middle of a command; its turn goes on detached
            # and ends by itself (it needs no editor after the command).
            cwd = str(here.workspace)
            session_id = (await conn.new_session(cwd=cwd, mcp_servers=[])).session_id
            await send(conn, "session/set_mode", {"sessionId": session_id, "modeId": "auto"})
            await conn.prompt(session_id=session_id, prompt=text("work"))
            start = len(client.updates)
            prompt = asyncio.ensure_future(conn.prompt(session_id=session_id, prompt=text("go")))
            await wait_for_update(client, "cancel-me", start)
            with contextlib.suppress(ProcessLookupError):
                process.send_signal(signal.SIGTERM)
            await asyncio.wait_for(process.wait(), 10)
            prompt.cancel()
            with contextlib.suppress(BaseException):
                await prompt


async def remote_soak(rounds: int, batch: int, spread: bool) -> list[Sample]:
    samples: list[Sample] = []
    with world(spread) as here:
        config = here.root / "config.toml"
        config.write_text(config.read_text() + "[daemon]\nidle_exit = 0\n")
        try:
            await remote_round(here, 0)
            pid = daemon_pid(here)
            samples.append(sample(pid, 0, here.tmp, here.data, *await daemon_status(here)))
            for n in range(1, rounds + 1):
                async with asyncio.timeout(180):
                    with contextlib.suppress(ConnectionResetError, BrokenPipeError):
                        await remote_round(here, n)
                if n % batch == 0:
                    await asyncio.sleep(10)  # the detached turns (a 6 s sleep) end
                    samples.append(sample(pid, n, here.tmp, here.data, *await daemon_status(here)))
                    report_line(samples[-1])
        finally:
            with contextlib.suppress(Exception):
                os.kill(daemon_pid(here), signal.SIGTERM)
    return samples


# --- report -------------------------------------------------------------------------------

METRICS = ("fds", "rss_kb", "threads", "children", "zombies", "tmp_files", "data_files",
           "data_kb", "tasks", "sessions")


def report_line(s: Sample) -> None:
    values = " ".join(f"{m}={getattr(s, m)}" for m in METRICS)
    print(f"  after {s.rounds:4d} rounds: {values}", flush=True)


def summary(name: str, samples: list[Sample]) -> None:
    if len(samples) < 3:
        print(f"{name}: too few batches for a trend")
        return
    warm, last = samples[1], samples[-1]
    rounds = last.rounds - warm.rounds
    print(f"{name}: growth per round after the warm-up batch (rounds {warm.rounds}..{last.rounds})")
    for metric in METRICS:
        a, b = getattr(warm, metric), getattr(last, metric)
        if a is None or b is None:
            continue
        print(f"  {metric:10s} {a:>9} -> {b:>9}   {(b - a) / rounds:+.2f}/round")


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rounds", type=int, default=40)
    parser.add_argument("--batch", type=int, default=10)
    parser.add_argument("--mode", choices=("editor", "local", "remote", "all"), default="all")
    parser.add_argument("--spread", action="store_true",
                        help="each round in a new workspace directory, removed after it")
    args = parser.parse_args()
    logging.getLogger().setLevel(logging.CRITICAL)  # the SDK logs every $/cancel_request
    modes = ("editor", "local", "remote") if args.mode == "all" else (args.mode,)
    results: dict[str, list[Sample]] = {}
    for mode in modes:
        print(f"{mode}:", flush=True)
        if mode == "remote":
            results[mode] = await remote_soak(args.rounds, args.batch, args.spread)
        else:
            results[mode] = await stdio_soak(args.rounds, args.batch, mode == "editor", args.spread)
    for mode, samples in results.items():
        summary(mode, samples)


if __name__ == "__main__":
    asyncio.run(main())
