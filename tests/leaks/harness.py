"""The real daemon code in this process, so that a leak test can count what it keeps.

`acpd serve` and the shared daemon are subprocesses everywhere else; a leak of a dict entry
per session cannot be seen from outside them. Here the same objects run in the test's own
event loop: an `AcpAgent` over a `Connection` on one end of a socketpair (what
remote/daemon.py does for each window), the official Python SDK client on the other end,
real SQLite, real bash, the scripted model. `shared()` gives a real `Hub` (the shared
daemon's state) whose windows are served the way remote/daemon.py serves them.

`held()` counts the live instances of every acpd class (the garbage collector's view after
a collection): a test runs K rounds after a warm-up and asserts nothing grew with K.
"""

from __future__ import annotations

import asyncio
import contextlib
import gc
import json
import os
import socket
from collections import Counter, deque
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio
from acp.client.connection import ClientSideConnection
from acp.schema import ClientCapabilities, FileSystemCapabilities, TextContentBlock

from acpd.daemon.agent import AcpAgent, ServeOptions
from acpd.daemon.rpc import Connection
from acpd.daemon.stdio import FdReader, FdWriter
from acpd.policy import parse
from acpd.remote.hub import Hub
from tests.e2e.client import RecordingClient


def bash(command: str, **extra: Any) -> dict[str, Any]:
    return {"name": "bash", "arguments": {"command": command, **extra}}


@dataclass
class Place:
    root: Path

    @property
    def workspace(self) -> Path:
        return self.root / "ws"

    @property
    def data(self) -> Path:
        return self.root / "data"

    def options(self, turns: list[dict[str, Any]], config: str = "") -> ServeOptions:
        script = self.root / "script.json"
        script.write_text(json.dumps({"turns": turns}))
        config_file = self.root / "config.toml"
        config_file.write_text(config)
        return ServeOptions(str(config_file), str(self.data), f"scripted:{script}")


def make_place(root: Path) -> Place:
    here = Place(root)
    here.workspace.mkdir()
    (here.workspace / "hello.txt").write_text("hello\n")
    return here


def caps(*, terminal: bool = False) -> ClientCapabilities:
    return ClientCapabilities(
        fs=FileSystemCapabilities(read_text_file=True, write_text_file=True), terminal=terminal
    )


def text(value: str) -> list[Any]:
    return [TextContentBlock(type="text", text=value)]


@dataclass
class Window:
    conn: ClientSideConnection
    agent: AcpAgent
    client: RecordingClient
    daemon_conn: Connection

    async def open(self, cwd: Path, *, terminal: bool = False) -> str:
        await self.conn.initialize(protocol_version=1, client_capabilities=caps(terminal=terminal))
        return (await self.conn.new_session(cwd=str(cwd), mcp_servers=[])).session_id

    async def prompt(self, session_id: str, value: str = "go") -> str:
        return str((await self.conn.prompt(session_id=session_id, prompt=text(value))).stop_reason)

    async def raw(self, method: str, params: dict[str, Any]) -> Any:
        return await self.conn._conn.send_request(method, params)


async def _serve(conn: Connection, reader: FdReader, fd: int, hub: Hub | None,
                 agent: AcpAgent, done: anyio.Event) -> None:
    window = hub.open_window(conn, agent, os.getpid()) if hub is not None else None
    try:
        await conn.serve()
    finally:
        if hub is not None and window is not None:
            hub.close_window(window)
        reader.close()
        os.close(fd)
        done.set()


@contextlib.asynccontextmanager
async def window(
    options: ServeOptions, tg: Any, *, hub: Hub | None = None,
    client: RecordingClient | None = None,
) -> AsyncIterator[Window]:
    """One editor connection to the daemon code; closing it is the editor going away
    (end of input), and waits until the daemon side has finished with it. The judge's parse
    memo (process-wide, emptied whole when it reaches its bound) starts empty: filled by the
    earlier tests of this worker, it could empty itself during the measured rounds, and
    refilling it looks like a leak."""
    parse.clear_memo()
    ours, theirs = socket.socketpair()
    fd = ours.detach()
    reader = FdReader(fd)
    conn = Connection(reader, FdWriter(fd))
    agent = AcpAgent(conn, options, hub)
    done = anyio.Event()
    tg.start_soon(_serve, conn, reader, fd, hub, agent, done)
    client = client or RecordingClient()
    stream_reader, stream_writer = await asyncio.open_unix_connection(sock=theirs)
    sdk = ClientSideConnection(client, stream_writer, stream_reader)
    try:
        yield Window(sdk, agent, client, conn)
    finally:
        await client.close()
        await sdk.close()
        stream_writer.close()
        with contextlib.suppress(Exception):
            await stream_writer.wait_closed()
        with anyio.fail_after(30):
            await done.wait()


@contextlib.asynccontextmanager
async def shared(options: ServeOptions) -> AsyncIterator[tuple[Hub, Any]]:
    """The shared daemon's hub, loaded, with the task group its turns run in."""
    async with anyio.create_task_group() as tg:
        hub = Hub(options, "/nonexistent/acpd-test.sock")
        await hub.load(tg)
        try:
            yield hub, tg
        finally:
            await hub.stop()
            tg.cancel_scope.cancel()


def held() -> Counter[str]:
    """Live instances of acpd's own classes, by qualified name."""
    gc.collect()
    counts: Counter[str] = Counter()
    for obj in gc.get_objects():
        kind = type(obj)
        module = getattr(kind, "__module__", "") or ""
        if module.startswith("acpd."):
            counts[f"{module}.{kind.__qualname__}"] += 1
    return counts


def grown(before: Counter[str], after: Counter[str], rounds: int) -> dict[str, int]:
    """The classes that gained at least one instance per round."""
    return {name: after[name] - before[name] for name in after
            if after[name] - before[name] >= rounds}


async def settle() -> None:
    """Let closed transports and finished tasks go (a few loop steps, no timing)."""
    for _ in range(20):
        await asyncio.sleep(0)


def containers(**objects: Any) -> dict[str, int]:
    """The size of every dict, list, set and deque attribute of each object, by name: a
    table keyed by session that only fills shows up whatever it is called."""
    sizes: dict[str, int] = {}
    for label, obj in objects.items():
        attrs = vars(obj) if hasattr(obj, "__dict__") else {
            name: getattr(obj, name) for name in getattr(type(obj), "__slots__", ())
            if hasattr(obj, name)}
        for name, value in attrs.items():
            if isinstance(value, dict | list | set | frozenset | deque):
                sizes[f"{label}.{name}"] = len(value)
    return sizes
