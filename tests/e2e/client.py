"""An ACP client for the tests, on the official Python SDK: real files, real local processes.

It serves `fs/*` from disk (or from "unsaved buffers" the test sets), runs `terminal/*` as
real bash processes in their own process groups (outputByteLimit keeps the tail, like an
editor), answers permission requests with a configurable answerer, and records every update
and every call in the order they arrived.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from acp import RequestError
from acp.schema import (
    AllowedOutcome,
    CreateElicitationResponse,
    CreateTerminalResponse,
    DeniedOutcome,
    ElicitationMode,
    EnvVariable,
    KillTerminalResponse,
    PermissionOption,
    ReadTextFileResponse,
    ReleaseTerminalResponse,
    RequestPermissionResponse,
    TerminalExitStatus,
    TerminalOutputResponse,
    ToolCallUpdate,
    WaitForTerminalExitResponse,
    WriteTextFileResponse,
)

Answerer = Callable[[dict[str, Any], list[dict[str, Any]]], str | None]
"""(toolCall, options) -> the optionId to select, or None to answer "cancelled"."""


def always(option_id: str | None) -> Answerer:
    return lambda _call, _options: option_id


def dump(model: Any) -> dict[str, Any]:
    """An SDK model back to its wire form."""
    result: dict[str, Any] = model.model_dump(mode="json", by_alias=True, exclude_none=True)
    return result


class Terminal:
    """One `terminal/create`: bash in a new process group, output kept up to the byte limit."""

    def __init__(self, process: asyncio.subprocess.Process, limit: int | None) -> None:
        self.process = process
        self.limit = limit
        self.data = bytearray()
        self.truncated = False
        self.killed = False
        self.released = False
        self._reader = asyncio.ensure_future(self._read())

    async def _read(self) -> None:
        assert self.process.stdout is not None
        while chunk := await self.process.stdout.read(65536):
            self.data += chunk
            if self.limit is not None and len(self.data) > self.limit:
                del self.data[: len(self.data) - self.limit]
                # Never start in the middle of a UTF-8 character.
                while self.data and (self.data[0] & 0xC0) == 0x80:
                    del self.data[0]
                self.truncated = True

    def output(self) -> str:
        return self.data.decode("utf-8", errors="replace")

    def exit_status(self) -> TerminalExitStatus | None:
        code = self.process.returncode
        if code is None:
            return None
        if code < 0:
            return TerminalExitStatus(exit_code=None, signal=signal.Signals(-code).name)
        return TerminalExitStatus(exit_code=code, signal=None)

    async def wait(self) -> TerminalExitStatus:
        await self.process.wait()
        with contextlib.suppress(Exception):
            await asyncio.wait_for(asyncio.shield(self._reader), 1.0)
        status = self.exit_status()
        assert status is not None
        return status

    def kill(self) -> None:
        self.killed = True
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(self.process.pid, signal.SIGKILL)

    async def close(self) -> None:
        """Kill it if it runs, reap it, and close its pipe now. A process that left the
        group (setsid) can hold the pipe open after the command ended: the transport would
        then be closed by the garbage collector, after this test's event loop is gone, and
        fail whichever test runs at that moment."""
        if self.process.returncode is None:
            self.kill()
        with contextlib.suppress(Exception):
            await asyncio.wait_for(self.process.wait(), 5)
        self._reader.cancel()
        with contextlib.suppress(asyncio.CancelledError, Exception):
            await self._reader
        transport = getattr(self.process, "_transport", None)  # asyncio has no public close
        if transport is not None:
            transport.close()


@dataclass
class RecordingClient:
    """The SDK `Client` the daemon talks to."""

    answer: Answerer = field(default_factory=lambda: always("allow_once"))
    buffers: dict[str, str] = field(default_factory=dict)
    """Unsaved editor buffers: `fs/read_text_file` of these paths returns this text."""
    terminal_enabled: bool = True
    permission_gate: asyncio.Event | None = None
    """When set, permission requests wait for it before they are answered."""
    events: list[tuple[str, Any]] = field(default_factory=list)
    """Every call and update in arrival order: ("update", update), ("terminal/create", id), ..."""
    terminals: dict[str, Terminal] = field(default_factory=dict)
    written: dict[str, str] = field(default_factory=dict)
    _changed: asyncio.Event = field(default_factory=asyncio.Event)
    _next_terminal: int = 0

    # --- what the tests read ---------------------------------------------------------------

    @property
    def updates(self) -> list[dict[str, Any]]:
        return [value for kind, value in self.events if kind == "update"]

    def calls(self, method: str) -> list[Any]:
        return [value for kind, value in self.events if kind == method]

    def tool_updates(self, tool_call_id: str) -> list[dict[str, Any]]:
        return [
            u for u in self.updates
            if u.get("sessionUpdate") in ("tool_call", "tool_call_update")
            and u.get("toolCallId") == tool_call_id
        ]

    def tool_calls(self) -> list[dict[str, Any]]:
        return [u for u in self.updates if u.get("sessionUpdate") == "tool_call"]

    def final(self, tool_call_id: str) -> dict[str, Any]:
        finals = [
            u for u in self.tool_updates(tool_call_id) if u.get("status") in ("completed", "failed")
        ]
        assert len(finals) == 1, f"expected one final update for {tool_call_id}, got {finals}"
        return finals[0]

    def texts(self, kind: str = "agent_message_chunk") -> str:
        return "".join(
            u["content"].get("text", "") for u in self.updates if u.get("sessionUpdate") == kind
        )

    async def wait_for(self, predicate: Callable[[], bool], within: float = 10.0) -> None:
        async with asyncio.timeout(within):
            while not predicate():
                self._changed.clear()
                await self._changed.wait()

    def _record(self, kind: str, value: Any) -> None:
        self.events.append((kind, value))
        self._changed.set()

    # --- the Client interface --------------------------------------------------------------

    async def request_permission(
        self, session_id: str, tool_call: ToolCallUpdate, options: list[PermissionOption],
        **kwargs: Any,
    ) -> RequestPermissionResponse:
        call, offered = dump(tool_call), [dump(o) for o in options]
        self._record("session/request_permission", {"toolCall": call, "options": offered})
        if self.permission_gate is not None:
            await self.permission_gate.wait()
        choice = self.answer(call, offered)
        if choice is None:
            return RequestPermissionResponse(outcome=DeniedOutcome(outcome="cancelled"))
        return RequestPermissionResponse(
            outcome=AllowedOutcome(outcome="selected", option_id=choice)
        )

    async def session_update(self, session_id: str, update: Any, **kwargs: Any) -> None:
        self._record("update", {"sessionId": session_id, **dump(update)})

    async def write_text_file(
        self, session_id: str, path: str, content: str, **kwargs: Any
    ) -> WriteTextFileResponse | None:
        self._record("fs/write_text_file", path)
        await asyncio.to_thread(Path(path).write_text, content)
        self.written[path] = content
        return WriteTextFileResponse()

    async def read_text_file(
        self, session_id: str, path: str, line: int | None = None, limit: int | None = None,
        **kwargs: Any,
    ) -> ReadTextFileResponse:
        self._record("fs/read_text_file", {"path": path, "line": line, "limit": limit})
        if path in self.buffers:
            text = self.buffers[path]
        else:
            try:
                text = await asyncio.to_thread(Path(path).read_text)
            except FileNotFoundError:
                raise RequestError.resource_not_found(path) from None
        if line is not None or limit is not None:
            lines = text.splitlines(keepends=True)[(line or 1) - 1 :]
            text = "".join(lines[:limit] if limit is not None else lines)
        return ReadTextFileResponse(content=text)

    async def create_terminal(
        self, session_id: str, command: str, args: list[str] | None = None,
        env: list[EnvVariable] | None = None, cwd: str | None = None,
        output_byte_limit: int | None = None, **kwargs: Any,
    ) -> CreateTerminalResponse:
        self._require_terminal("terminal/create")
        self._next_terminal += 1
        terminal_id = f"term-{self._next_terminal}"
        variables = {**os.environ, **{v.name: v.value for v in env or []}}
        process = await asyncio.create_subprocess_exec(
            command, *(args or []), cwd=cwd, env=variables,
            stdin=asyncio.subprocess.DEVNULL, stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.STDOUT, start_new_session=True,
        )
        self.terminals[terminal_id] = Terminal(process, output_byte_limit)
        self._record(
            "terminal/create",
            {"terminalId": terminal_id, "command": command, "args": args, "cwd": cwd,
             "outputByteLimit": output_byte_limit, "env": {v.name: v.value for v in env or []}},
        )
        return CreateTerminalResponse(terminal_id=terminal_id)

    async def terminal_output(
        self, session_id: str, terminal_id: str, **kwargs: Any
    ) -> TerminalOutputResponse:
        terminal = self._terminal("terminal/output", terminal_id)
        return TerminalOutputResponse(
            output=terminal.output(), truncated=terminal.truncated,
            exit_status=terminal.exit_status(),
        )

    async def wait_for_terminal_exit(
        self, session_id: str, terminal_id: str, **kwargs: Any
    ) -> WaitForTerminalExitResponse:
        terminal = self._terminal("terminal/wait_for_exit", terminal_id)
        status = await terminal.wait()
        return WaitForTerminalExitResponse(exit_code=status.exit_code, signal=status.signal)

    async def kill_terminal(
        self, session_id: str, terminal_id: str, **kwargs: Any
    ) -> KillTerminalResponse | None:
        self._terminal("terminal/kill", terminal_id).kill()
        return KillTerminalResponse()

    async def release_terminal(
        self, session_id: str, terminal_id: str, **kwargs: Any
    ) -> ReleaseTerminalResponse | None:
        terminal = self._terminal("terminal/release", terminal_id)
        if terminal.process.returncode is None:
            terminal.kill()
        terminal.released = True
        return ReleaseTerminalResponse()

    def _require_terminal(self, method: str) -> None:
        if not self.terminal_enabled:
            self._record(method, None)
            raise RequestError.method_not_found(method)

    def _terminal(self, method: str, terminal_id: str) -> Terminal:
        self._require_terminal(method)
        self._record(method, terminal_id)
        terminal = self.terminals.get(terminal_id)
        if terminal is None or terminal.released:
            raise RequestError.invalid_params({"terminalId": f"unknown or released: {terminal_id}"})
        return terminal

    async def create_elicitation(
        self, message: str, mode: ElicitationMode, **kwargs: Any
    ) -> CreateElicitationResponse:
        self._record("elicitation/create", message)
        raise RequestError.method_not_found("elicitation/create")

    async def complete_elicitation(self, elicitation_id: str, **kwargs: Any) -> None:
        self._record("elicitation/complete", elicitation_id)

    async def ext_method(self, method: str, params: dict[str, Any]) -> dict[str, Any]:
        self._record(method, params)
        raise RequestError.method_not_found(method)

    async def ext_notification(self, method: str, params: dict[str, Any]) -> None:
        self._record(method, params)

    def on_connect(self, conn: Any) -> None:
        pass

    async def close(self) -> None:
        """Kill whatever still runs in our terminals and close them (the test is over)."""
        for terminal in self.terminals.values():
            await terminal.close()
