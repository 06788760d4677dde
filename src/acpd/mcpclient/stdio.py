"""The stdio transport: the server as a child in its own process group, owned by acpd.

The SDK's `stdio_client` hides the process; acpd needs it: the group is registered with the
connection's ProcessGroups (a daemon stop ends it with every other command), stderr is kept
(its tail says why a server failed to start) instead of going to the daemon's log, and the
environment is built here.

Environment: a few harmless variables of the daemon (PATH, HOME, locale; what the SDK also
passes), then the request's `env`. The daemon's own credentials (provider API keys) never
reach a server the editor named unless the editor passes them.

Stop (the MCP lifecycle): close stdin, give the server STOP_GRACE to exit, then TERM the
group and KILL it after KILL_GRACE; descendants that left the group (setsid, double fork) are
found through /proc before the kill and ended too.
"""

from __future__ import annotations

import contextlib
import logging
import os
import signal
from collections.abc import AsyncIterator
from dataclasses import dataclass, field

import anyio
import anyio.abc
import mcp_types as types
from anyio.streams.memory import MemoryObjectReceiveStream, MemoryObjectSendStream
from mcp.client._transport import TransportStreams
from mcp.shared.message import SessionMessage

from acpd.mcpclient.servers import ServerParams

log = logging.getLogger("acpd.mcp")

INHERITED = ("HOME", "LOGNAME", "PATH", "SHELL", "USER", "LANG", "LC_ALL", "LC_CTYPE", "TMPDIR",
             "TZ")
STOP_GRACE = 1.0
KILL_GRACE = 1.0
MAX_LINE = 16 * 1024 * 1024
STDERR_TAIL = 4096


def server_env(params: ServerParams) -> dict[str, str]:
    env = {k: os.environ[k] for k in INHERITED if k in os.environ}
    env["TERM"] = "dumb"
    env.update(dict(params.env))
    return env


@dataclass(slots=True)
class Child:
    """The running server: its process and the tail of what it wrote to stderr."""

    process: anyio.abc.Process
    stderr: bytearray = field(default_factory=bytearray)

    @property
    def pid(self) -> int:
        return self.process.pid

    def stderr_tail(self) -> str:
        return self.stderr.decode("utf-8", "replace").strip()[-STDERR_TAIL:]


Streams = TransportStreams


@contextlib.asynccontextmanager
async def stdio_transport(
    params: ServerParams, cwd: str, child_ref: list[Child],
) -> AsyncIterator[Streams]:
    """Spawn the server; yield the SDK's streams. Raises OSError when it cannot be spawned.
    `child_ref` receives the Child as soon as it exists (for the caller's process groups)."""
    process = await anyio.open_process(
        [params.command, *params.args], cwd=cwd, env=server_env(params),
        start_new_session=True,
    )
    child = Child(process)
    child_ref.append(child)
    read_in, read_out = anyio.create_memory_object_stream[SessionMessage | Exception](0)
    write_in, write_out = anyio.create_memory_object_stream[SessionMessage](0)
    try:
        async with anyio.create_task_group() as tg:
            tg.start_soon(_read_stdout, process, read_in)
            tg.start_soon(_write_stdin, process, write_out, read_in)
            tg.start_soon(_read_stderr, child)
            try:
                yield read_out, write_in
            finally:
                with anyio.CancelScope(shield=True):
                    await stop_child(child)
                tg.cancel_scope.cancel()
    finally:
        for stream in (read_in, read_out, write_in, write_out):
            stream.close()


async def _read_stdout(
    process: anyio.abc.Process, sink: MemoryObjectSendStream[SessionMessage | Exception]
) -> None:
    assert process.stdout is not None
    buffer = bytearray()
    async with sink:
        with contextlib.suppress(anyio.EndOfStream, anyio.ClosedResourceError,
                                 anyio.BrokenResourceError, OSError):
            async for chunk in process.stdout:
                buffer += chunk
                if b"\n" not in chunk:  # split only when a line ended: no quadratic rescans
                    if len(buffer) > MAX_LINE:
                        await sink.send(ValueError(f"a line from the server passed {MAX_LINE} "
                                                   "bytes; the connection is closed"))
                        return
                    continue
                *lines, rest = bytes(buffer).split(b"\n")
                buffer = bytearray(rest)
                for line in lines:
                    if line.strip():
                        await sink.send(_parse(line))


def _parse(line: bytes) -> SessionMessage | Exception:
    try:
        return SessionMessage(types.jsonrpc_message_adapter.validate_json(line, by_name=False))
    except ValueError as exc:
        return exc


async def _write_stdin(
    process: anyio.abc.Process, source: MemoryObjectReceiveStream[SessionMessage],
    reader: MemoryObjectSendStream[SessionMessage | Exception],
) -> None:
    assert process.stdin is not None
    try:
        async with source:
            async for message in source:
                data = message.message.model_dump_json(by_alias=True, exclude_unset=True)
                await process.stdin.send(data.encode() + b"\n")
    except (anyio.ClosedResourceError, anyio.BrokenResourceError, OSError):
        # The server stopped reading: end the session's view of it, or a request hangs.
        reader.close()


async def _read_stderr(child: Child) -> None:
    stream = child.process.stderr
    assert stream is not None
    with contextlib.suppress(anyio.EndOfStream, anyio.ClosedResourceError,
                             anyio.BrokenResourceError, OSError):
        async for chunk in stream:
            child.stderr += chunk
            del child.stderr[:-STDERR_TAIL]


async def stop_child(child: Child) -> None:
    """Close stdin, wait STOP_GRACE, TERM the group (and strays), KILL after KILL_GRACE."""
    process = child.process
    if process.stdin is not None:
        with contextlib.suppress(OSError, anyio.BrokenResourceError, anyio.ClosedResourceError):
            await process.stdin.aclose()
    with anyio.move_on_after(STOP_GRACE):
        while process.returncode is None:  # noqa: ASYNC110 - nothing signals the exit
            await anyio.sleep(0.02)
    await end_tree(child.pid)
    with anyio.move_on_after(KILL_GRACE):
        while process.returncode is None:  # noqa: ASYNC110 - wait() also waits for pipe EOF
            await anyio.sleep(0.02)
    for stream in (process.stdout, process.stderr):
        if stream is not None:
            with contextlib.suppress(OSError, anyio.BrokenResourceError):
                await stream.aclose()
    # A killed tree may leave a pipe end open somewhere: close the loop's transport now, not
    # at garbage collection (after the loop is gone).
    transport = getattr(getattr(process, "_process", None), "_transport", None)
    close = getattr(transport, "close", None)
    if callable(close):
        with contextlib.suppress(PermissionError, ProcessLookupError):
            close()


async def end_tree(pid: int) -> None:
    """TERM the group `pid` leads and every descendant of `pid`; KILL what is left."""
    strays = descendants(pid)
    targets = [pid, *strays]
    _signal(pid, strays, signal.SIGTERM)
    with anyio.move_on_after(KILL_GRACE):
        while any(_alive(p) for p in targets) or _group_alive(pid):  # noqa: ASYNC110
            await anyio.sleep(0.02)
    _signal(pid, strays, signal.SIGKILL)


def _signal(pgid: int, pids: list[int], sig: signal.Signals) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, sig)
    for pid in pids:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.kill(pid, sig)


def _group_alive(pgid: int) -> bool:
    try:
        os.killpg(pgid, 0)
    except (ProcessLookupError, PermissionError):
        return False
    return True


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat", "rb") as handle:
            return handle.read().rsplit(b")", 1)[1].split()[0] != b"Z"
    except (OSError, IndexError):
        return False


def descendants(pid: int) -> list[int]:
    """Every live descendant of `pid` (from /proc; empty where there is no /proc)."""
    parents: dict[int, list[int]] = {}
    try:
        entries = os.listdir("/proc")
    except OSError:
        return []
    for entry in entries:
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat", "rb") as handle:
                ppid = int(handle.read().rsplit(b")", 1)[1].split()[1])
        except (OSError, IndexError, ValueError):
            continue
        parents.setdefault(ppid, []).append(int(entry))
    found: list[int] = []
    todo = [pid]
    while todo:
        for child in parents.get(todo.pop(), []):
            found.append(child)
            todo.append(child)
    return found
