"""Byte transport over the process's stdin and stdout.

At start-up `reserve_stdio()` moves the protocol to private descriptors and points fd 1 at
stderr and fd 0 at /dev/null, so a stray `print()`, a library that writes to stdout, or a
child process that inherits the standard streams can neither corrupt the stream nor swallow
the editor's next request.
"""

from __future__ import annotations

import os
import stat
import sys
from dataclasses import dataclass

import anyio
import anyio.to_thread

READ_CHUNK = 1 << 16


@dataclass(frozen=True, slots=True)
class ProtocolFds:
    read_fd: int
    write_fd: int


def reserve_stdio() -> ProtocolFds:
    read_fd = os.dup(0)  # dup'd descriptors are non-inheritable (PEP 446)
    write_fd = os.dup(1)
    sys.stdout.flush()
    os.dup2(2, 1)
    devnull = os.open(os.devnull, os.O_RDONLY)
    os.dup2(devnull, 0)
    os.close(devnull)
    return ProtocolFds(read_fd, write_fd)


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
        if self._pollable:
            try:
                await anyio.wait_readable(self.fd)
            except OSError:
                self._pollable = False
            else:
                return os.read(self.fd, READ_CHUNK)
        return await anyio.to_thread.run_sync(os.read, self.fd, READ_CHUNK, abandon_on_cancel=True)


class FdWriter:
    """Writes whole buffers; a slow reader blocks a worker thread, never the event loop."""

    def __init__(self, fd: int) -> None:
        self.fd = fd

    async def send(self, data: bytes) -> None:
        await anyio.to_thread.run_sync(_write_all, self.fd, data)


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        written = os.write(fd, view)
        view = view[written:]
