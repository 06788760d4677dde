"""A small ACP client (the editor's side), built on acpd's sans-io protocol package and anyio.

`acpd demo` and `acpd doctor` drive a real `acpd serve` with it; tests and benchmarks can use
it as an editor that needs no editor:

    async with AcpClient.start(argv, workspace, on_event=print) as client:
        await client.initialize()
        session_id = await client.new_session()
        stop = await client.prompt(session_id, "hello", on_update=handle)

It serves what an editor serves: `fs/read_text_file` and `fs/write_text_file` (confined to the
workspace), the five `terminal/*` methods with real local bash processes, and
`session/request_permission`, answered with the option kind it was given ("allow once" by
default). What it does on the agent's behalf is reported through `on_event`.
"""

from __future__ import annotations

import contextlib
import itertools
import os
import subprocess
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import anyio
import anyio.abc

from acpd.daemon.demo_terminals import ClientEvent, TerminalHost
from acpd.protocol import jsonrpc
from acpd.protocol.errors import (
    RpcError,
    internal_error,
    invalid_params,
    method_not_found,
    resource_not_found,
)

__all__ = ["AcpClient", "AgentError", "AgentExited", "ClientEvent"]
from acpd.protocol.framing import Line, LineDecoder, encode

STDERR_TAIL_BYTES = 16 * 1024
EXIT_WAIT = 5.0

UpdateCallback = Callable[[str, dict[str, Any]], None]
"""Called with (session id, update) for each `session/update`, in wire order."""


EventCallback = Callable[[ClientEvent], None]


class AgentError(Exception):
    """The agent answered a request with a JSON-RPC error."""

    def __init__(self, method: str, error: RpcError) -> None:
        super().__init__(f"{method} failed: {error.message} ({error.code})")
        self.method = method
        self.error = error


class AgentExited(Exception):
    """The agent process closed its stdout; `stderr` holds the end of what it logged."""

    def __init__(self, returncode: int | None, stderr: str) -> None:
        code = "still running" if returncode is None else f"exit code {returncode}"
        super().__init__(f"the agent closed the connection ({code})")
        self.returncode = returncode
        self.stderr = stderr


@dataclass(slots=True)
class _Pending:
    done: anyio.Event = field(default_factory=anyio.Event)
    result: Any = None
    error: RpcError | None = None
    agent_exited: bool = False


class AcpClient:
    def __init__(
        self,
        process: anyio.abc.Process,
        root: Path,
        task_group: anyio.abc.TaskGroup,
        *,
        terminal: bool,
        on_event: EventCallback | None,
        on_update: UpdateCallback | None,
        permission_kind: str,
    ) -> None:
        self.process = process
        self.root = root.resolve()
        self.offers_terminal = terminal
        self.stderr_tail = bytearray()
        self._tg = task_group
        self._on_event = on_event
        self._on_update = on_update
        self._listeners: dict[str, UpdateCallback] = {}
        self._permission_kind = permission_kind
        self._ids = itertools.count(1)
        self._pending: dict[int, _Pending] = {}
        self._send_lock = anyio.Lock()
        self._closed = anyio.Event()
        self._stderr_done = anyio.Event()
        self.terminals = TerminalHost(task_group, self.root, self._emit)
        self.notifications: list[tuple[str, Any]] = []
        """Every notification other than `session/update` ((method, params), in order):
        acpd's extensions, such as `_acpd/policy_reloaded`."""
        self._notified = anyio.Event()
        self._handlers: dict[str, Callable[[dict[str, Any]], Awaitable[Any]]] = {
            "fs/read_text_file": self._read_text_file,
            "fs/write_text_file": self._write_text_file,
            "session/request_permission": self._request_permission,
            "terminal/create": self.terminals.create,
            "terminal/output": self.terminals.output,
            "terminal/wait_for_exit": self.terminals.wait_for_exit,
            "terminal/kill": self.terminals.kill,
            "terminal/release": self.terminals.release,
        }

    @classmethod
    @contextlib.asynccontextmanager
    async def start(
        cls,
        argv: Sequence[str],
        root: str | Path,
        *,
        terminal: bool = True,
        on_event: EventCallback | None = None,
        on_update: UpdateCallback | None = None,
        permission_kind: str = "allow_once",
        env: Mapping[str, str] | None = None,
    ) -> AsyncIterator[AcpClient]:
        """Spawn the agent and serve it until the block ends; then close its stdin, give it
        a few seconds to exit, kill it if it does not, and kill any terminal left running."""
        process = await anyio.open_process(
            list(argv),
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env={**os.environ, **(env or {})},
        )
        async with anyio.create_task_group() as tg:
            client = cls(
                process, Path(root), tg, terminal=terminal, on_event=on_event,
                on_update=on_update, permission_kind=permission_kind,
            )
            tg.start_soon(client._read_loop)
            tg.start_soon(client._drain_stderr)
            try:
                yield client
            finally:
                with anyio.CancelScope(shield=True):
                    await client._shutdown()
                tg.cancel_scope.cancel()

    # --- the API -------------------------------------------------------------------------------

    async def initialize(self, fs: bool = True) -> dict[str, Any]:
        caps: dict[str, Any] = {"terminal": self.offers_terminal}
        if fs:
            caps["fs"] = {"readTextFile": True, "writeTextFile": True}
        params = {"protocolVersion": 1, "clientCapabilities": caps,
                  "clientInfo": {"name": "acpd-demo-client", "version": "1"}}
        result: dict[str, Any] = await self.request("initialize", params)
        return result

    async def new_session(self, cwd: str | Path | None = None) -> str:
        params = {"cwd": str(cwd or self.root), "mcpServers": []}
        result = await self.request("session/new", params)
        return str(result["sessionId"])

    async def prompt(
        self, session_id: str, text: str, on_update: UpdateCallback | None = None,
        answer_within: float | None = 300.0,
    ) -> str:
        """Send one prompt and return its stop reason; every update of the turn reaches
        `on_update` (or the client's default) before this returns. Raises AgentError or
        AgentExited."""
        if on_update is not None:
            self._listeners[session_id] = on_update
        try:
            params = {"sessionId": session_id, "prompt": [{"type": "text", "text": text}]}
            result = await self.request("session/prompt", params, answer_within)
        finally:
            self._listeners.pop(session_id, None)
        return str(result.get("stopReason")) if isinstance(result, dict) else "unknown"

    async def request(
        self, method: str, params: Any, answer_within: float | None = 30.0
    ) -> Any:
        """Raises AgentError for an error answer, AgentExited if the agent goes away, and
        TimeoutError when no answer comes within `answer_within` seconds (None: no limit)."""
        if self._closed.is_set():
            raise self._exited()
        msg_id = next(self._ids)
        pending = self._pending[msg_id] = _Pending()
        try:
            await self._send(jsonrpc.request(msg_id, method, params))
            with anyio.fail_after(answer_within):
                await pending.done.wait()
        finally:
            self._pending.pop(msg_id, None)
        if pending.agent_exited:
            # Give the process a moment to be reaped and its last stderr to be read: the
            # exit code and log are the useful part of this error.
            with anyio.move_on_after(1.0):
                await self.process.wait()
                await self._stderr_done.wait()
            raise self._exited()
        if pending.error is not None:
            raise AgentError(method, pending.error)
        return pending.result

    async def next_notification(
        self, method: str, accept: Callable[[Any], bool] = lambda _p: True,
        within: float = 10.0, *, after: int = 0,
    ) -> Any:
        """The params of the first `method` notification from index `after` on that `accept`
        takes, waiting for it up to `within` seconds. Raises TimeoutError or AgentExited."""
        with anyio.fail_after(within):
            while True:
                for name, params in self.notifications[after:]:
                    if name == method and accept(params):
                        return params
                if self._closed.is_set():
                    raise self._exited()
                self._notified = anyio.Event()
                await self._notified.wait()

    async def notify(self, method: str, params: Any) -> None:
        await self._send(jsonrpc.notification(method, params))

    def stderr_text(self) -> str:
        return self.stderr_tail.decode("utf-8", errors="replace")

    # --- the wire ------------------------------------------------------------------------------

    async def _send(self, message: dict[str, Any]) -> None:
        assert self.process.stdin is not None
        async with self._send_lock:
            try:
                await self.process.stdin.send(encode(message))
            except (anyio.BrokenResourceError, anyio.ClosedResourceError, OSError):
                raise self._exited() from None

    async def _read_loop(self) -> None:
        assert self.process.stdout is not None
        decoder = LineDecoder()
        try:
            while True:
                try:
                    data = await self.process.stdout.receive()
                except (anyio.EndOfStream, anyio.ClosedResourceError, anyio.BrokenResourceError):
                    break
                for frame in decoder.feed(data):
                    if isinstance(frame, Line):  # an oversize line from the agent is dropped
                        await self._dispatch(jsonrpc.parse_line(frame.data))
        finally:
            self._closed.set()
            self._notified.set()
            for pending in self._pending.values():
                pending.agent_exited = True
                pending.done.set()

    async def _dispatch(self, message: jsonrpc.Message) -> None:
        if isinstance(message, jsonrpc.Response):
            pending = self._pending.get(message.id) if isinstance(message.id, int) else None
            if pending is not None:
                pending.result, pending.error = message.result, message.error
                pending.done.set()
        elif isinstance(message, jsonrpc.Notification):
            if message.method == "session/update" and isinstance(message.params, dict):
                # Called inline, so updates are seen in wire order and all of a turn's
                # updates before its prompt response resolves.
                session_id = str(message.params.get("sessionId"))
                update = message.params.get("update")
                callback = self._listeners.get(session_id, self._on_update)
                if callback is not None and isinstance(update, dict):
                    callback(session_id, update)
            else:
                self.notifications.append((message.method, message.params))
                self._notified.set()
        elif isinstance(message, jsonrpc.Request):
            self._tg.start_soon(self._answer, message)

    async def serve_request(self, method: str, params: Any) -> Any:
        """Answer one agent-to-client request (what the read loop does for each one).

        Raises RpcError for an unknown method or bad params, OSError for a failed file or
        process operation."""
        handler = self._handlers.get(method)
        if handler is None:
            raise method_not_found(method)
        if not isinstance(params, dict):
            raise invalid_params(f"{method} needs object params")
        return await handler(params)

    async def _answer(self, req: jsonrpc.Request) -> None:
        try:
            reply = jsonrpc.result(req.id, await self.serve_request(req.method, req.params))
        except RpcError as err:
            reply = jsonrpc.error(req.id, err)
        except FileNotFoundError as exc:
            reply = jsonrpc.error(req.id, resource_not_found(f"no such file: {exc.filename}"))
        except (OSError, ValueError) as exc:
            reply = jsonrpc.error(req.id, internal_error(f"{type(exc).__name__}: {exc}"))
        with contextlib.suppress(AgentExited):
            await self._send(reply)

    async def _drain_stderr(self) -> None:
        assert self.process.stderr is not None
        try:
            with contextlib.suppress(anyio.EndOfStream, anyio.ClosedResourceError,
                                     anyio.BrokenResourceError):
                while True:
                    self.stderr_tail += await self.process.stderr.receive()
                    del self.stderr_tail[:-STDERR_TAIL_BYTES]
        finally:
            self._stderr_done.set()

    def _exited(self) -> AgentExited:
        return AgentExited(self.process.returncode, self.stderr_text())

    async def _shutdown(self) -> None:
        if self.process.stdin is not None:
            with contextlib.suppress(Exception):
                await self.process.stdin.aclose()
        with anyio.move_on_after(EXIT_WAIT):
            await self.process.wait()
        if self.process.returncode is None:
            self.process.kill()
            await self.process.wait()
        await self.terminals.kill_all()
        # Let the readers take what the agent wrote last, for error messages.
        with anyio.move_on_after(0.5):
            await self._closed.wait()
            await self._stderr_done.wait()

    def _emit(self, kind: str, text: str, **data: Any) -> None:
        if self._on_event is not None:
            self._on_event(ClientEvent(kind, text, data))

    # --- fs/* ----------------------------------------------------------------------------------

    def _inside(self, params: dict[str, Any]) -> Path:
        raw = params.get("path")
        if not isinstance(raw, str) or not os.path.isabs(raw):
            raise invalid_params("path must be an absolute path")
        path = Path(os.path.realpath(raw))
        if path != self.root and self.root not in path.parents:
            raise invalid_params(f"{raw} is outside the workspace this client serves")
        return path

    async def _read_text_file(self, params: dict[str, Any]) -> dict[str, Any]:
        path = self._inside(params)
        text = await anyio.Path(path).read_text(encoding="utf-8")
        line, limit = params.get("line"), params.get("limit")
        if isinstance(line, int) or isinstance(limit, int):
            lines = text.splitlines(keepends=True)
            start = max((line if isinstance(line, int) else 1) - 1, 0)
            end = start + limit if isinstance(limit, int) else None
            text = "".join(lines[start:end])
        self._emit("read", f"fs/read_text_file {self._rel(path)} ({len(text)} chars)",
                   path=str(path))
        return {"content": text}

    async def _write_text_file(self, params: dict[str, Any]) -> dict[str, Any]:
        path = self._inside(params)
        content = params.get("content")
        if not isinstance(content, str):
            raise invalid_params("content must be a string")
        await anyio.Path(path.parent).mkdir(parents=True, exist_ok=True)
        await anyio.Path(path).write_text(content, encoding="utf-8")
        self._emit("write", f"fs/write_text_file {self._rel(path)} ({len(content)} chars)",
                   path=str(path))
        return {}

    def _rel(self, path: Path) -> str:
        return str(path.relative_to(self.root)) if path != self.root else "."

    # --- session/request_permission ------------------------------------------------------------

    async def _request_permission(self, params: dict[str, Any]) -> dict[str, Any]:
        options = [o for o in params.get("options") or [] if isinstance(o, dict)]
        chosen = next((o for o in options if o.get("kind") == self._permission_kind), None)
        raw_call = params.get("toolCall")
        tool_call: dict[str, Any] = raw_call if isinstance(raw_call, dict) else {}
        title = str(tool_call.get("title") or "tool call")
        if chosen is None:
            self._emit("permission", f"{title}: no {self._permission_kind} option, cancelled",
                       title=title, option=None)
            return {"outcome": {"outcome": "cancelled"}}
        self._emit("permission", f"{title}: {chosen.get('name')}", title=title,
                   option=chosen.get("kind"), raw_input=tool_call.get("rawInput"))
        return {"outcome": {"outcome": "selected", "optionId": chosen.get("optionId")}}
