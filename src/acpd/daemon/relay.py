"""The editor path through the sandbox parent: one command handed over by the relay client.

bubblewrap per command costs more than the 5 ms a command may add, and the sandbox parent
(sandbox/parent.py) that avoids it needs the command's descriptors passed to it, which a
shell launcher cannot do. So, where the relay client is built (sandbox/relay.c), the editor's
terminal runs `acpd-relay SOCKET TOKEN -- BASH -c COMMAND`: the client connects to a
one-use socket this module listens on in the daemon's private run directory, and hands over
its standard descriptors (the editor's terminal) and its environment. The daemon runs the
command it judged with them, in a parent when one is ready for the profile, else under
bubblewrap it starts itself, and sends the exit status back; the client exits with it, so
`terminal/wait_for_exit` reports the command's own code.

- What runs is the command the daemon judged for the token: the words the editor shows after
  `--` are not read.
- Only a client of this user in the daemon's own PID namespace is heard (a confined command
  lives in another one), and only with the token; anything else is closed unheard.
- The editor's environment reaches the command minus the blocked names (`env_blocklist`),
  removed here rather than by the shell scrub (envscrub.py) the launcher path needs.
- When the client goes (the editor's `terminal/kill`, Ctrl-C in its terminal), the
  connection closes and the command's whole PID namespace is killed; so it is when the call
  is cancelled. A daemon that dies takes the parent and its commands with it
  (`--die-with-parent`); the client then says so and exits 125.
"""

from __future__ import annotations

import contextlib
import logging
import os
import secrets
import socket
import struct
from collections.abc import Awaitable, Callable
from typing import Protocol

import anyio

from acpd.daemon import tmpdirs

log = logging.getLogger("acpd.relay")

MAGIC = b"acpd-relay 1"
MAX_BODY = 8 << 20
"""The client refuses to send more (an environment is a few KiB)."""
READ_TIMEOUT = 5.0
"""A connection must deliver its request within this (the client sends it at once)."""
KILL_GRACE = 2.0
NOT_RUN = 125
_UCRED = struct.Struct("3i")


class Started(Protocol):
    """A command started with the client's descriptors (a parent's Job, or bubblewrap)."""

    async def wait(self) -> int: ...

    def kill(self) -> None: ...


Starter = Callable[[tuple[int, int, int], dict[str, str]], Awaitable[Started]]
"""Runs the judged command with the client's stdio and environment; raises OSError when it
could not (the client then says why and exits NOT_RUN)."""


class BadClient(Exception):
    """A connection that is not the relay client this command waits for."""


class Relay:
    """One command's socket: made before `terminal/create`, served while the command runs,
    removed by `close`."""

    def __init__(self, client: str) -> None:
        self.token = secrets.token_hex(16)
        self.path = os.path.join(tmpdirs.run_dir(), f"relay-{secrets.token_hex(8)}.sock")
        if len(os.fsencode(self.path)) >= 108:  # sun_path
            raise OSError(f"the relay socket path is too long: {self.path}")
        self.client = client
        self._listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            self._listener.bind(self.path)
            self._listener.listen(4)
            self._listener.setblocking(False)
        except BaseException:
            self.close()
            raise

    def argv(self, shown: list[str]) -> list[str]:
        """What the editor runs; `shown` is what it displays after `--`."""
        return [self.client, self.path, self.token, "--", *shown]

    def close(self) -> None:
        with contextlib.suppress(OSError):
            os.unlink(self.path)
        self._listener.close()

    async def serve(self, start: Starter) -> None:
        """Wait for the client, run the command with its descriptors, send the exit code.
        Cancelled (the call was, or the editor failed the terminal), the command is killed."""
        conn, stdio, env = await self._accept()
        self.close()  # one command per socket
        with conn:
            try:
                started = await start(stdio, env)
            except Exception as exc:  # nothing ran: the client says why and exits 125
                if not isinstance(exc, OSError):
                    log.exception("relay: the command could not be started")
                _reply(conn, b"F" + str(exc).encode(errors="replace"))
                return
            finally:
                for fd in stdio:
                    os.close(fd)
            code = await _watch(conn, started)
            _reply(conn, b"X" + (code if code >= 0 else 128 - code).to_bytes(4, "little"))

    async def _accept(self) -> tuple[socket.socket, tuple[int, int, int], dict[str, str]]:
        while True:
            await anyio.wait_readable(self._listener)
            try:
                conn, _addr = self._listener.accept()
            except BlockingIOError:
                continue
            try:
                with anyio.fail_after(READ_TIMEOUT):
                    stdio, env = await self._handover(conn)
                return conn, stdio, env
            except (BadClient, OSError, TimeoutError) as exc:
                log.warning("relay: a connection was refused: %s", exc)
                _reply(conn, b"F" + f"the acpd daemon refused this client: {exc}".encode(
                    errors="replace"))
                conn.close()

    async def _handover(self, conn: socket.socket) -> tuple[tuple[int, int, int],
                                                          dict[str, str]]:
        conn.setblocking(False)
        data, fds = await _receive_first(conn)
        try:
            if len(fds) != 3:
                raise BadClient(f"{len(fds)} descriptors instead of 3")
            if len(data) < 4:
                data += await _receive_exactly(conn, 4 - len(data))
            size = int.from_bytes(data[:4], "little")
            if size > MAX_BODY:
                raise BadClient(f"a request of {size} bytes")
            body = data[4:]
            if len(body) < size:
                body += await _receive_exactly(conn, size - len(body))
            # Checked once the request is read: a refused client still reads why.
            _check_peer(conn)
            env = _parse(body[:size], self.token)
        except BaseException:
            for fd in fds:
                os.close(fd)
            raise
        return (fds[0], fds[1], fds[2]), env


def _check_peer(conn: socket.socket) -> None:
    pid, uid, _gid = _UCRED.unpack(conn.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED,
                                                   _UCRED.size))
    if uid != os.getuid():
        raise BadClient(f"a client of uid {uid}")
    if os.readlink(f"/proc/{pid}/ns/pid") != os.readlink("/proc/self/ns/pid"):
        raise BadClient(f"a client in another PID namespace (pid {pid}): a confined command")


def _parse(body: bytes, token: str) -> dict[str, str]:
    parts = body.split(b"\0")
    if len(parts) < 3 or parts[0] != MAGIC or parts[-1] != b"":
        raise BadClient("not a relay request")
    if not secrets.compare_digest(parts[1], token.encode()):
        raise BadClient("a wrong token")
    env: dict[str, str] = {}
    for entry in parts[2:-1]:
        name, sep, value = entry.partition(b"=")
        if sep and name:
            env[os.fsdecode(name)] = os.fsdecode(value)
    return env


async def _receive_first(conn: socket.socket) -> tuple[bytes, list[int]]:
    while True:
        try:
            data, fds, _flags, _addr = socket.recv_fds(conn, 1 << 16, 3)
        except BlockingIOError:
            await anyio.wait_readable(conn)
            continue
        for fd in fds:  # received descriptors are inheritable: no other child gets one
            os.set_inheritable(fd, False)
        if not data:
            for fd in fds:
                os.close(fd)
            raise BadClient("closed before its request")
        return data, fds


async def _receive_exactly(conn: socket.socket, size: int) -> bytes:
    chunks: list[bytes] = []
    while size > 0:
        try:
            chunk = conn.recv(min(size, 1 << 20))
        except BlockingIOError:
            await anyio.wait_readable(conn)
            continue
        if not chunk:
            raise BadClient("closed mid-request")
        chunks.append(chunk)
        size -= len(chunk)
    return b"".join(chunks)


async def _watch(conn: socket.socket, started: Started) -> int:
    """The command's exit code; it is killed when the client goes or this is cancelled."""
    try:
        async with anyio.create_task_group() as tg:
            tg.start_soon(_kill_when_gone, conn, started)
            code = await started.wait()
            tg.cancel_scope.cancel()
        return code
    except BaseException:
        _kill(started)
        with anyio.CancelScope(shield=True), anyio.move_on_after(KILL_GRACE):
            await started.wait()
        raise


async def _kill_when_gone(conn: socket.socket, started: Started) -> None:
    while True:
        await anyio.wait_readable(conn)
        try:
            if conn.recv(4096):
                continue  # the client sends nothing more; ignore what a stray one does
        except BlockingIOError:
            continue
        except OSError:
            pass
        _kill(started)  # end of stream: the client is gone (killed, or its terminal closed)
        return


def _kill(started: Started) -> None:
    with contextlib.suppress(ProcessLookupError):  # bubblewrap already gone (and reaped)
        started.kill()


def _reply(conn: socket.socket, message: bytes) -> None:
    with contextlib.suppress(OSError):  # a client already gone needs no answer
        conn.setblocking(True)
        conn.settimeout(1.0)
        conn.sendall(message)
