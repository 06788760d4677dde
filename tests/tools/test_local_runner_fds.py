"""The local runner leaves no pipe open behind a command, however it ended.

A command killed at its timeout while its output pipe was full used to keep the pipe's
transport (two fds and the unread output) until the garbage collector found it; in a daemon
that runs for days every such command leaked until then, and the collector warned."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import anyio
import pytest

from acpd.daemon.local import LocalCommandRunner
from acpd.tools.capabilities import CommandRequest

pytestmark = pytest.mark.anyio


def open_fds() -> set[str]:
    return set(os.listdir("/proc/self/fd"))


async def ignore(*_args: Any) -> None:
    return None


@pytest.mark.parametrize(
    ("command", "limit"),
    [
        ("yes", 0.3),  # killed at the timeout with its pipe full
        ("yes >&2", 0.3),  # the same on stderr
        ("seq 1 100000000", 0.3),
        ("echo started; sleep 30", 0.3),  # killed while quiet
        ("head -c 5000000 /dev/zero | tr '\\0' x", 20),  # more than the limit, ends itself
        ("(sleep 30 &); echo gone", 20),  # a background child holds the pipes after bash
        ("exit 3", 20),
    ],
)
async def test_no_fd_outlives_the_command(tmp_path: Path, command: str, limit: float) -> None:
    runner = LocalCommandRunner()
    request = CommandRequest(command, str(tmp_path), limit, 1 << 16, roots=(str(tmp_path),),
                             call_id="call_fd")
    await runner.run(request, ignore, ignore)  # a warm-up: lazy imports open what they keep
    before = open_fds()
    for _ in range(3):
        await runner.run(request, ignore, ignore)
    await anyio.sleep(0.05)  # closing a transport takes a loop step
    assert open_fds() - before == set()
