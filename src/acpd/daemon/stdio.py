"""Byte transport over the protocol descriptors (see `handshake.reserve_stdio`).

Pipes and sockets are switched to non-blocking mode and driven by the asyncio loop directly:
the reader keeps its descriptor registered with the loop between reads (anyio's
`wait_readable` registers and unregisters it around every wait: two `epoll_ctl` calls per
message), and the writer offers `send_nowait` so that the connection can write a batch in the
same loop step that produced it. acpd runs on anyio's asyncio backend only.
"""

from __future__ import annotations

import asyncio
import os
import stat
from typing import Protocol

import anyio
import anyio.to_thread

READ_CHUNK = 1 << 16


class ByteReceiver(Protocol):
    async def receive(self) -> bytes:
        """The next bytes, or b"" at end of stream."""
        ...


class ByteSender(Protocol):
    def send_nowait(self, data: bytes) -> int:
        """Write what can be written without waiting; returns how many bytes went (maybe 0).
        Raises OSError when the peer is gone."""
        ...

    async def send(self, data: bytes) -> None:
        """Write all of `data`, waiting as needed; raises OSError when the peer is gone."""
        ...


def _pollable(fd: int, *, char_devices: bool) -> bool:
    mode = os.fstat(fd).st_mode
    return stat.S_ISFIFO(mode) or stat.S_ISSOCK(mode) or (char_devices and stat.S_ISCHR(mode))


class FdReader:
    """Reads from a descriptor without blocking the event loop.

    Pipes and sockets are read by the loop's readiness callback itself, as asyncio's own
    transports do, and stay registered between reads. At most one chunk waits unread: if the
    descriptor becomes readable while one does, it is unregistered until receive() takes the
    chunk, so a busy connection stops reading (the backpressure the outbox relies on) and
    unread input cannot make the loop spin. Anything the loop cannot poll (a regular file
    given as stdin, a terminal) is read in a worker thread.
    """

    def __init__(self, fd: int) -> None:
        self.fd = fd
        self._pollable = _pollable(fd, char_devices=False)
        if self._pollable:
            os.set_blocking(fd, False)
        self._loop: asyncio.AbstractEventLoop | None = None
        self._waiter: asyncio.Future[None] | None = None
        self._chunk: bytes | None = None
        self._error: OSError | None = None
        self._registered = False

    async def receive(self) -> bytes:
        """Return the next bytes, or b"" at end of stream. Raises OSError on a read error."""
        if not self._pollable:
            return await anyio.to_thread.run_sync(
                os.read, self.fd, READ_CHUNK, abandon_on_cancel=True
            )
        while self._chunk is None and self._error is None:
            if self._loop is None:
                self._loop = asyncio.get_running_loop()
            if not self._registered:
                self._loop.add_reader(self.fd, self._on_readable)
                self._registered = True
            # A bare future: asyncio.Event looks up the running loop on every wait.
            self._waiter = self._loop.create_future()
            try:
                await self._waiter
            finally:
                self._waiter = None
        if self._error is not None:
            raise self._error
        data, self._chunk = self._chunk, None
        assert data is not None
        return data

    def _on_readable(self) -> None:
        if self._chunk is not None:
            self._unregister()  # pause: the last chunk is not taken yet
            return
        try:
            data = os.read(self.fd, READ_CHUNK)
        except BlockingIOError:  # a spurious wake-up
            return
        except OSError as exc:
            self._error = exc
            data = b""
        self._chunk = data
        if not data:
            self._unregister()  # end of input (or an error): nothing more will come
        if self._waiter is not None and not self._waiter.done():
            self._waiter.set_result(None)

    def _unregister(self) -> None:
        if self._registered and self._loop is not None:
            self._loop.remove_reader(self.fd)
        self._registered = False

    def close(self) -> None:
        """Stop watching the descriptor (it stays open: the daemon owns it)."""
        self._unregister()


class FdWriter:
    """Writes whole buffers without blocking the event loop, and can always be cancelled.

    Pipes and sockets are switched to non-blocking mode and written as the loop reports them
    writable, so a peer that stops reading stalls only the writer task, which shutdown can
    cancel. (A blocking write in a worker thread could not be cancelled, and the interpreter
    waits for its threads at exit: one stalled editor would keep the daemon alive for ever.)
    Anything else (a terminal, a regular file) is written in a worker thread.
    """

    def __init__(self, fd: int) -> None:
        self.fd = fd
        self._pollable = _pollable(fd, char_devices=False)
        if self._pollable:
            os.set_blocking(fd, False)

    def send_nowait(self, data: bytes) -> int:
        if not self._pollable:
            return 0
        try:
            return os.write(self.fd, data)
        except BlockingIOError:
            return 0

    async def send(self, data: bytes) -> None:
        if not self._pollable:
            await anyio.to_thread.run_sync(_write_all, self.fd, data)
            return
        view = memoryview(data)
        while view:
            try:
                written = os.write(self.fd, view)
            except BlockingIOError:
                await anyio.wait_writable(self.fd)
                continue
            view = view[written:]


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        written = os.write(fd, view)
        view = view[written:]
