"""The protocol's descriptors, taken from stdin/stdout before anything else can print.

Standard library only: the shared daemon's forwarder (remote/forward.py) takes them before
it knows whether it must answer `initialize` itself, and must not pay for the handshake's
imports when the daemon is already running.
"""

from __future__ import annotations

import os
import sys


class ProtocolFds:
    """A plain class: `typing` (NamedTuple) or `dataclasses` would cost a new window more
    than this whole module."""

    __slots__ = ("read_fd", "write_fd")

    def __init__(self, read_fd: int, write_fd: int) -> None:
        self.read_fd = read_fd
        self.write_fd = write_fd


def reserve_stdio() -> ProtocolFds:
    """The protocol moves to private descriptors; stdout becomes stderr and stdin /dev/null,
    so a stray print (ours or a library's) cannot corrupt the stream."""
    read_fd = os.dup(0)  # dup'd descriptors are non-inheritable (PEP 446)
    write_fd = os.dup(1)
    sys.stdout.flush()
    os.dup2(2, 1)
    devnull = os.open(os.devnull, os.O_RDONLY)
    os.dup2(devnull, 0)
    os.close(devnull)
    return ProtocolFds(read_fd, write_fd)
