"""Byte transport over the protocol descriptors (see `handshake.reserve_stdio`)."""

from __future__ import annotations

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
    async def send(self, data: bytes) -> None:
        """Write all of `data`; raises OSError when the peer is gone."""
        ...




class FdReader:
    """Reads from a descriptor without blocking the event loop.

    Pipes and sockets are polled with the loop's reader; anything the loop cannot poll (a
    regular file given as stdin) is read in a worker thread.
    """

    def __init__(self, fd: int) -> None:
        self.fd = fd
        mode = os.fstat(fd).st_mode
        self._pollable = stat.S_ISFIFO(mode) or stat.S_ISSOCK(mode) or stat.S_ISCHR(mode)

    async def receive(self) -> bytes:
        """Return the next bytes, or b"" at end of stream."""
        while self._pollable:
            try:
                await anyio.wait_readable(self.fd)
            except OSError:
                self._pollable = False
                break
            try:
                return os.read(self.fd, READ_CHUNK)
            except BlockingIOError:  # someone else set O_NONBLOCK and the wake-up was spurious
                continue
        return await anyio.to_thread.run_sync(os.read, self.fd, READ_CHUNK, abandon_on_cancel=True)


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
        mode = os.fstat(fd).st_mode
        self._pollable = stat.S_ISFIFO(mode) or stat.S_ISSOCK(mode)
        if self._pollable:
            os.set_blocking(fd, False)

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
