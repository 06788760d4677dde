"""One MCP server's connection: a background task owns the SDK session for its whole life.

The SDK's ClientSession lives inside `async with` blocks (its task group, the transport's),
which no request handler outlives, so `run()` runs as a background task of the editor
connection: it starts the transport, initializes, lists the tools, sets `ready`, then waits
for `stop()`. Nothing raises out of it: a failure before `ready` is kept in `failure` (what
the user is told), one after marks the connection dead (the next call says so, and the hub
may restart it).

`notifications/tools/list_changed` only marks the listing stale: a request cannot be sent
from inside the SDK's receive loop. The hub lists again after the call in which it arrived,
or before the next prompt.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import AsyncIterator, Callable
from typing import Any

import anyio
import mcp_types as types
from mcp.client.session import ClientSession

import acpd
from acpd.mcpclient.results import clean, error_of, output_of
from acpd.mcpclient.servers import ServerParams
from acpd.mcpclient.stdio import Child, Streams, end_tree, stdio_transport
from acpd.tools.errors import ErrorCategory, ToolError
from acpd.tools.spec import ToolOutput

log = logging.getLogger("acpd.mcp")
MAX_PAGES = 50
STOP_BOUND = 5.0
"""Seconds a polite close may take before the connection's task is cancelled."""
MAX_TOOLS = 512
CLIENT = types.Implementation(name="acpd", version=acpd.__version__)

# Request lines carry URLs (which may hold tokens); the SDK logs message bodies at debug.
for _name in ("httpx2", "httpx", "httpcore", "mcp"):
    logging.getLogger(_name).setLevel(logging.WARNING)


class ServerConnection:
    def __init__(
        self, params: ServerParams, cwd: str, *, on_child: Callable[[Child], None],
        on_exit: Callable[[Child], None],
    ) -> None:
        self.params = params
        self.cwd = cwd
        self.session: ClientSession | None = None
        self.tools: list[types.Tool] = []
        self.ready = anyio.Event()
        self.failure: str | None = None
        """Why it could not start (said to the user once)."""
        self.dead: str | None = None
        """Why it is gone after it started."""
        self.stale = False
        self._stop = anyio.Event()
        self._scope = anyio.CancelScope()
        """Cancelled by stop() while starting: a server that never answers `initialize`."""
        self._done = anyio.Event()
        self._children: list[Child] = []
        self._on_child = on_child
        self._on_exit = on_exit

    # --- lifecycle ------------------------------------------------------------------------

    async def run(self) -> None:
        """The connection's task: never raises (see the module docstring)."""
        try:
            with self._scope:
                async with self._transport() as (read, write), ClientSession(
                    read, write, message_handler=self._on_message, client_info=CLIENT,
                ) as session:
                    await session.initialize()
                    self.tools = await list_tools(session)
                    self.session = session
                    self.ready.set()
                    await self._stop.wait()
        except anyio.get_cancelled_exc_class():
            raise
        except BaseException as exc:  # groups included: nothing may escape this task
            reason = self._reason(exc)
            if self.ready.is_set():
                self.dead = self.dead or reason
            else:
                self.failure = reason
            log.info("MCP server %r: %s", self.params.name, reason)
        finally:
            self.session = None
            self.dead = self.dead or "stopped"
            for child in self._children:
                self._on_exit(child)
            self.ready.set()
            self._done.set()

    @contextlib.asynccontextmanager
    async def _transport(self) -> AsyncIterator[Streams]:
        p = self.params
        if p.transport == "stdio":
            async with stdio_transport(p, self.cwd, _Reporter(self)) as streams:
                yield streams
            return
        from mcp.shared._httpx_utils import create_mcp_http_client

        headers = dict(p.headers)
        if p.transport == "http":
            from mcp.client.streamable_http import streamable_http_client

            async with create_mcp_http_client(headers=headers) as client, \
                    streamable_http_client(p.url, http_client=client) as (read, write):
                yield read, write
        else:
            from mcp.client.sse import sse_client

            async with sse_client(p.url, headers=headers) as (read, write):
                yield read, write

    async def stop(self, *, fast: bool = False) -> None:
        """End the connection and wait for it (the transport stops the process tree: stdin
        closed, a grace, then TERM and KILL). `fast` (the daemon stops): TERM at once."""
        if fast:
            for child in self._children:
                await end_tree(child.pid)
        self._stop.set()
        if not self.ready.is_set():
            self._scope.cancel()
        with anyio.move_on_after(STOP_BOUND):
            await self._done.wait()
        # Still closing (an HTTP server that does not answer the session's DELETE): cut it.
        # A stdio server's stop is shielded and bounded in the transport.
        self._scope.cancel()
        await self._done.wait()

    def _reason(self, exc: BaseException) -> str:
        while isinstance(exc, BaseExceptionGroup) and len(exc.exceptions) == 1:
            exc = exc.exceptions[0]
        text = f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__
        if isinstance(exc, FileNotFoundError):
            text = f"command not found: {self.params.describe()}"
        note = self.exit_note()
        return self.params.scrub(clean(f"{text}{note}"))[:1000]

    def exit_note(self) -> str:
        """`; it exited with status N; stderr: ...` once the process is gone, else ""."""
        if not self._children:
            return ""
        child = self._children[-1]
        code = child.process.returncode
        if code is None:
            return ""
        tail = child.stderr_tail()
        tail = tail.splitlines()[-1][:300] if tail else ""
        shown = self.params.scrub(clean(tail))
        return f"; it exited with status {code}" + (f" (stderr: {shown})" if tail else "")

    # --- use --------------------------------------------------------------------------------

    @property
    def alive(self) -> bool:
        if self.session is None or self.dead is not None:
            return False
        return not self._children or self._children[-1].process.returncode is None

    async def call(self, tool: str, arguments: dict[str, Any], budget: float) -> ToolOutput:
        """Raises ToolError (every failure, see results.py)."""
        session = self.session
        if session is None or not self.alive:
            raise ToolError(
                ErrorCategory.SERVER_ERROR,
                f"{self.params.name}: the MCP server is not running ({self.dead or self.failure})",
            )
        try:
            with anyio.fail_after(budget):
                result = await session.call_tool(tool, arguments)
        except anyio.get_cancelled_exc_class():
            raise
        except Exception as exc:
            if _closed(exc):
                await self._exited(0.5)  # a crash: let its exit status arrive
            err = error_of(self.params.name, tool, exc, self.exit_note())
            err.message = self.params.scrub(err.message)
            if _closed(exc):
                self.dead = err.message
            raise err from None
        try:
            output = output_of(self.params.name, tool, result)
        except ToolError as err:
            err.message = self.params.scrub(err.message)
            raise
        output.text = self.params.scrub(output.text)
        output.raw = _scrub_value(output.raw, self.params.scrub)
        return output

    async def _exited(self, within: float) -> None:
        with anyio.move_on_after(within):
            while self._children and self._children[-1].process.returncode is None:  # noqa: ASYNC110
                await anyio.sleep(0.02)

    async def refresh(self) -> None:
        """List the tools again after list_changed (a failure keeps the old listing)."""
        session = self.session
        self.stale = False
        if session is None:
            return
        try:
            with anyio.fail_after(30):
                self.tools = await list_tools(session)
        except Exception as exc:
            log.info("MCP server %r: listing its tools again failed: %s",
                     self.params.name, clean(str(exc)))

    async def _on_message(self, message: Any) -> None:
        if isinstance(message, types.ToolListChangedNotification):
            self.stale = True
        elif isinstance(message, Exception):
            log.info("MCP server %r sent something unreadable: %s", self.params.name,
                     clean(str(message))[:300])


class _Reporter(list[Child]):
    """Hands the spawned child to the connection (and its process groups) at once."""

    def __init__(self, conn: ServerConnection) -> None:
        super().__init__()
        self.conn = conn

    def append(self, child: Child) -> None:
        super().append(child)
        self.conn._children.append(child)
        self.conn._on_child(child)


def _closed(exc: BaseException) -> bool:
    from mcp.shared.exceptions import MCPError

    return isinstance(exc, MCPError) and exc.code == types.CONNECTION_CLOSED


async def list_tools(session: ClientSession) -> list[types.Tool]:
    """Every page of `tools/list` (bounded: MAX_PAGES pages, MAX_TOOLS tools)."""
    tools: list[types.Tool] = []
    cursor: str | None = None
    for _ in range(MAX_PAGES):
        params = types.PaginatedRequestParams(cursor=cursor) if cursor else None
        page = await session.list_tools(params=params)
        tools.extend(page.tools)
        cursor = page.next_cursor
        if not cursor or len(tools) >= MAX_TOOLS:
            break
    return tools[:MAX_TOOLS]


def _scrub_value(value: Any, scrub: Callable[[str], str]) -> Any:
    if isinstance(value, str):
        return scrub(value)
    if isinstance(value, dict):
        return {k: _scrub_value(v, scrub) for k, v in value.items()}
    if isinstance(value, list):
        return [_scrub_value(v, scrub) for v in value]
    return value
