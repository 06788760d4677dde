"""The `terminal/*` side of the demo client: real local processes, as an editor runs them.

Each `terminal/create` starts the command in its own process group (so kill reaches its
children), keeps only the last `outputByteLimit` bytes of its combined output, and stays
readable until `terminal/release`.
"""

from __future__ import annotations

import contextlib
import itertools
import os
import signal
import subprocess
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import anyio
import anyio.abc

from acpd.daemon.local import TailBuffer, kill_group
from acpd.protocol.errors import invalid_params, resource_not_found


@dataclass(frozen=True, slots=True)
class ClientEvent:
    """Something the client did for the agent: `permission`, `read`, `write`, `terminal`,
    `terminal_exit`. `text` is a one-line description; `data` holds the details."""

    kind: str
    text: str
    data: dict[str, Any] = field(default_factory=dict)


Emit = Callable[..., None]
"""`emit(kind, text, **data)`: report a ClientEvent."""


@dataclass(eq=False)
class LocalTerminal:
    """One `terminal/create`: a process group and the tail of its output."""

    id: str
    command: list[str]
    process: anyio.abc.Process
    output: TailBuffer
    exit_status: dict[str, Any] | None = None
    exited: anyio.Event = field(default_factory=anyio.Event)

    def add(self, chunk: bytes) -> None:
        self.output.add(chunk)

    @property
    def truncated(self) -> bool:
        return self.output.truncated

    def text(self) -> str:
        return self.output.text()


class TerminalHost:
    """Serves the five `terminal/*` methods; each takes the request params as a dict."""

    def __init__(self, task_group: anyio.abc.TaskGroup, root: Path, emit: Emit) -> None:
        self._tg = task_group
        self._root = root
        self._emit = emit
        self._ids = itertools.count(1)
        self.live: dict[str, LocalTerminal] = {}

    def get(self, terminal_id: str) -> LocalTerminal | None:
        return self.live.get(terminal_id)

    def __contains__(self, terminal_id: object) -> bool:
        return terminal_id in self.live

    async def create(self, params: dict[str, Any]) -> dict[str, Any]:
        command = params.get("command")
        args = params.get("args") or []
        if not isinstance(command, str) or not all(isinstance(a, str) for a in args):
            raise invalid_params("command must be a string and args a list of strings")
        env = {e["name"]: e["value"] for e in params.get("env") or []
               if isinstance(e, dict) and isinstance(e.get("name"), str)
               and isinstance(e.get("value"), str)}
        cwd = params.get("cwd") if isinstance(params.get("cwd"), str) else str(self._root)
        limit = params.get("outputByteLimit")
        process = await anyio.open_process(
            [command, *args], cwd=cwd, env={**os.environ, **env},
            stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        terminal_id = f"term-{next(self._ids)}"
        byte_limit = limit if isinstance(limit, int) and limit >= 0 else None
        terminal = LocalTerminal(terminal_id, [command, *args], process, TailBuffer(byte_limit))
        self.live[terminal_id] = terminal
        self._tg.start_soon(self._pump, terminal)
        bash_c = len(args) >= 2 and os.path.basename(args[-3] if len(args) > 2 else command) \
            == "bash" and args[-2] == "-c"
        shown = args[-1] if bash_c else " ".join(terminal.command)  # not the launcher
        self._emit("terminal", f"terminal/create {terminal_id}: {shown}",
                   terminal_id=terminal_id, command=terminal.command)
        return {"terminalId": terminal_id}

    async def output(self, params: dict[str, Any]) -> dict[str, Any]:
        terminal = self._find(params)
        result: dict[str, Any] = {"output": terminal.text(), "truncated": terminal.truncated}
        if terminal.exit_status is not None:
            result["exitStatus"] = terminal.exit_status
        return result

    async def wait_for_exit(self, params: dict[str, Any]) -> dict[str, Any]:
        terminal = self._find(params)
        await terminal.exited.wait()
        assert terminal.exit_status is not None
        return terminal.exit_status

    async def kill(self, params: dict[str, Any]) -> dict[str, Any]:
        terminal = self._find(params)
        # TERM, then KILL after a grace, in the background: kill answers at once and the
        # terminal stays valid (its output readable) until it is released.
        self._tg.start_soon(kill_group, terminal.process)
        return {}

    async def release(self, params: dict[str, Any]) -> dict[str, Any]:
        terminal = self._find(params)
        del self.live[terminal.id]
        if terminal.exit_status is None:
            self._tg.start_soon(kill_group, terminal.process)
        return {}

    async def kill_all(self) -> None:
        for terminal in list(self.live.values()):
            await kill_group(terminal.process)

    def _find(self, params: dict[str, Any]) -> LocalTerminal:
        terminal = self.live.get(str(params.get("terminalId")))
        if terminal is None:
            raise resource_not_found(f"no terminal {str(params.get('terminalId'))[:80]}")
        return terminal

    async def _pump(self, terminal: LocalTerminal) -> None:
        stream = terminal.process.stdout
        assert stream is not None
        with contextlib.suppress(anyio.EndOfStream, anyio.ClosedResourceError,
                                 anyio.BrokenResourceError):
            async for chunk in stream:
                terminal.add(chunk)
        code = await terminal.process.wait()
        terminal.exit_status = (
            {"exitCode": code, "signal": None} if code >= 0
            else {"exitCode": None, "signal": signal.Signals(-code).name}
        )
        terminal.exited.set()
        self._emit("terminal_exit", f"{terminal.id} exited: {terminal.exit_status}",
                   terminal_id=terminal.id, exit_status=terminal.exit_status)
