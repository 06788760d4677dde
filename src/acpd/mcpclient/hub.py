"""One session's MCP servers: started lazily, listed as tools, stopped with the session.

Lazily: `session/new` only checks the `mcpServers` entries; the servers start at the
session's first prompt (`prepare()`, inside the turn, so a cancel stops the wait), all at
once, each within `[mcp] start_timeout`, because the model must see their tools in its first
request. A server that fails to start is told to the user once, as an agent message, and
the session goes on without it. A server that dies after it started is started again at the
next call of one of its tools, at most MAX_RESTARTS times per session.

Tools: `mcp__<server>__<tool>` (names.py), stable for the session (a name the model saw
keeps meaning the same tool after a re-listing). A tool the server adds later is listed at
the next refresh and asks before each call like any other (trust.py); it is allowed without
asking only if the user's allowlist names it.

Stopped with the session: close, delete, load/resume over a live session, daemon stop and
editor EOF all end in `stop()`, which ends every server and its process tree.
"""

from __future__ import annotations

import importlib
import logging
from collections.abc import Awaitable, Callable, Sequence
from types import ModuleType
from typing import TYPE_CHECKING, Any, Protocol

import anyio
import anyio.to_thread

from acpd.mcpclient import names
from acpd.mcpclient.config import McpConfig
from acpd.mcpclient.servers import ServerParams
from acpd.mcpclient.spec import McpArguments, McpToolSpec, arguments_of, check_arguments
from acpd.tools.errors import ErrorCategory, ToolError
from acpd.tools.spec import Effect, ToolContext, ToolKind, ToolOutput, ToolSpec, redaction

if TYPE_CHECKING:
    from acpd.mcpclient.connection import ServerConnection

log = logging.getLogger("acpd.mcp")

MAX_RESTARTS = 2
Spawn = Callable[[Callable[[], Awaitable[None]]], None]
Say = Callable[[str], Awaitable[None]]


async def load_sdk() -> ModuleType:
    """acpd.mcpclient.connection, with the SDK, imported in a worker thread: the SDK takes
    about a second to import (seconds on a busy machine), which must not stall the loop."""
    # abandon_on_cancel: a daemon that stops mid-import must not wait for the import.
    return await anyio.to_thread.run_sync(
        importlib.import_module, "acpd.mcpclient.connection", abandon_on_cancel=True
    )


async def warm_sdk() -> None:
    """Import the SDK in the background once a session has servers, so that the first
    prompt waits for the servers, not for the import."""
    try:
        await load_sdk()
    except Exception as exc:  # the first prompt meets the same error and tells the user
        log.warning("the mcp SDK cannot be imported: %s", exc)


class GroupSink(Protocol):
    """Where a server's process group is registered (daemon/local.py ProcessGroups)."""

    def add(self, pgid: int) -> None: ...

    def discard(self, pgid: int) -> None: ...


class SessionServers:
    """`SessionTools.extra` of a session with MCP servers."""

    def __init__(
        self, servers: Sequence[ServerParams], cwd: str, config: McpConfig, *,
        spawn: Spawn, groups: GroupSink, say: Say,
    ) -> None:
        self.params = {p.name: p for p in servers}
        self.cwd = cwd
        self.config = config
        self._spawn = spawn
        self._groups = groups
        self._say = say
        self.conns: dict[str, ServerConnection] = {}
        self.specs: dict[str, McpToolSpec] = {}
        self._parts: dict[str, str] = {}
        self._names: dict[tuple[str, str], str] = {}
        self._taken: set[str] = set()
        self._told: set[str] = set()
        self._restarts: dict[str, int] = {}
        self._lock = anyio.Lock()
        self._started = False
        self._pending: dict[str, ServerConnection] = {}
        """Started, not yet ready or failed: a prepare() cancelled while it waited leaves
        them here, and the next one waits again (and tells, and lists)."""
        self.closed = False
        taken: set[str] = set()
        for p in servers:
            self._parts[p.name] = names.unique(names.part(p.name), taken, 24)

    # --- ExtraTools (tools/state.py) ----------------------------------------------------------

    def resolve(self, name: str) -> ToolSpec | None:
        return self.specs.get(name)

    def tools(self) -> list[ToolSpec]:
        return list(self.specs.values())

    async def prepare(self) -> None:
        """Start what has not started (first prompt), list again what changed, and tell the
        user once about each server that failed to start. Never raises but for cancel."""
        async with self._lock:
            if self.closed:
                return
            if not self._started:
                await self._start(list(self.params))
            await self._settle()
            await self._refresh_stale()

    async def stop(self, *, fast: bool = False) -> None:
        """End every server and its process tree (idempotent). `fast`: no grace first."""
        self.closed = True
        conns = [*self.conns.values(), *self._pending.values()]
        self.conns.clear()
        self._pending.clear()
        self.specs.clear()
        with anyio.CancelScope(shield=True):
            async with anyio.create_task_group() as tg:
                for conn in dict.fromkeys(conns):
                    tg.start_soon(_stop_conn, conn, fast)

    # --- start ------------------------------------------------------------------------------

    async def _start(self, server_names: list[str]) -> None:
        if not self.config.enabled:
            self._started = True
            await self._tell_once("*", "[acpd] The editor passed MCP servers, but MCP is "
                                       "disabled in the config ([mcp] enabled = false).")
            return
        try:
            connection = await load_sdk()
        except Exception as exc:  # a broken install must not end the turn
            self._started = True
            await self._tell_once("*", f"[acpd] The MCP servers cannot be started: the mcp "
                                       f"SDK does not load ({type(exc).__name__}: {exc}).")
            return
        # Only now: a prepare cancelled during the import leaves the start to the next one.
        self._started = True
        for name in server_names:
            if self.closed:
                return
            conn = connection.ServerConnection(
                self.params[name], self.cwd, on_child=lambda c: self._groups.add(c.pid),
                on_exit=lambda c: self._groups.discard(c.pid),
            )
            self._pending[name] = conn
            self._spawn(conn.run)
        await self._settle()

    async def _settle(self) -> None:
        """Wait for the pending servers (each within start_timeout of this wait), then list
        the tools of those that came up."""
        for name, conn in list(self._pending.items()):
            await self._await_ready(name, conn)
            if self._pending.get(name) is conn:
                del self._pending[name]
                if conn.failure is None and not self.closed:
                    self.conns[name] = conn
        self._rebuild()

    async def _await_ready(self, name: str, conn: ServerConnection) -> None:
        with anyio.move_on_after(self.config.start_timeout):
            await conn.ready.wait()
        if not conn.ready.is_set():
            conn.failure = f"it did not start within {self.config.start_timeout:g} s"
            await conn.stop()
        if conn.failure is not None and not self.closed:
            where = self.params[name].describe()
            await self._tell_once(name, f"[acpd] The MCP server {name!r} ({where}) could not "
                                        f"start: {conn.failure}. The session goes on without "
                                        "its tools.")

    async def _tell_once(self, key: str, text: str) -> None:
        if key in self._told:
            return
        self._told.add(key)
        await self._say(f"\n{text}\n\n")

    async def _refresh_stale(self) -> None:
        stale = [c for c in self.conns.values() if c.stale]
        for conn in stale:
            await conn.refresh()
        if stale:
            self._rebuild()

    async def _restart(self, name: str) -> ServerConnection | None:
        """A fresh connection for a server that died, within MAX_RESTARTS; None otherwise."""
        used = self._restarts.get(name, 0)
        old = self.conns.get(name)
        if used >= MAX_RESTARTS or self.closed:
            return None
        self._restarts[name] = used + 1
        if old is not None:
            self.conns.pop(name, None)
            await old.stop()
        self._told.discard(name)  # a restart that fails is worth telling
        await self._start([name])
        return self.conns.get(name)

    # --- tools ------------------------------------------------------------------------------

    def _rebuild(self) -> None:
        """The specs of every live server's listing; names stay what they were."""
        specs: dict[str, McpToolSpec] = {}
        for server, conn in self.conns.items():
            for tool in conn.tools:
                spec = self._spec(server, tool)
                if spec is not None:
                    specs[spec.name] = spec
        self.specs = specs

    def _spec(self, server: str, tool: Any) -> McpToolSpec | None:
        from acpd.tools.schema import SchemaError, restrict

        key = (server, str(tool.name))
        name = self._names.get(key)
        if name is None:
            name = self._names[key] = names.tool_name(self._parts[server], key[1], self._taken)
        raw_schema = tool.input_schema if isinstance(tool.input_schema, dict) else {}
        try:
            shown = restrict(raw_schema)
        except SchemaError as exc:
            log.info("MCP tool %s skipped: %s", name, exc)
            return None
        hints = tool.annotations
        kind: ToolKind = "fetch" if hints is not None and hints.open_world_hint else "other"
        allowed_names = self.config.servers.get(server)
        params = self.params[server]
        title = f"{server}: {key[1]}"

        def precheck(parsed: Any) -> None:
            check_arguments(raw_schema, arguments_of(parsed))

        return McpToolSpec(
            id=name, name=name, description=(tool.description or tool.title or "")[:4000],
            params=McpArguments, effect=Effect.EXTERNAL_SIDE_EFFECT, kind=kind,
            execute=self._executor(server, key[1]), title=lambda _args: title,
            redaction=redaction(), retry_safe=False, precheck=precheck,
            server=server, tool=key[1], schema=shown,
            allowed=_allowlisted(allowed_names, params, key[1]), identity=params.identity,
        )

    def _executor(
        self, server: str, tool: str
    ) -> Callable[[Any, ToolContext], Awaitable[ToolOutput]]:
        async def execute(parsed: Any, _ctx: ToolContext) -> ToolOutput:
            return await self.call(server, tool, arguments_of(parsed))

        return execute

    async def call(self, server: str, tool: str, arguments: dict[str, Any]) -> ToolOutput:
        """Raises ToolError."""
        conn = self.conns.get(server)
        if conn is not None and not conn.alive:
            conn = await self._restart(server)
        if conn is None:
            raise ToolError(ErrorCategory.PERMANENT_FAILURE,
                            f"the MCP server {server!r} is not running and will not be "
                            "started again in this session")
        try:
            return await conn.call(tool, arguments, self.config.call_timeout)
        finally:
            if conn.stale and conn.alive:
                with anyio.CancelScope(shield=True), anyio.move_on_after(5):
                    await conn.refresh()
                    self._rebuild()


def _allowlisted(entry: Any, params: ServerParams, tool: str) -> bool:
    if entry is None or tool not in entry.allow:
        return False
    if entry.command is not None and entry.command != params.command:
        return False
    return entry.url is None or entry.url == params.url


class McpSessions:
    """The MCP servers of every live session of one editor connection."""

    def __init__(self, config: McpConfig, spawn: Spawn, groups: GroupSink) -> None:
        self.config = config
        self._spawn = spawn
        self._groups = groups
        self.live: dict[str, SessionServers] = {}

    @staticmethod
    def parse(raw: Any) -> list[ServerParams]:
        """The request's `mcpServers`; raises RpcError (invalid params) saying what is wrong."""
        from acpd.mcpclient.servers import BadServer, parse_servers
        from acpd.protocol.errors import invalid_params

        try:
            return parse_servers(raw)
        except BadServer as exc:
            raise invalid_params(str(exc)) from None

    async def attach(
        self, session_id: str, cwd: str, servers: list[ServerParams], say: Say,
    ) -> SessionServers | None:
        """The session's servers (replacing, and stopping, what it had); None for none."""
        await self.detach(session_id)
        if not servers:
            return None
        found = SessionServers(servers, cwd, self.config, spawn=self._spawn,
                               groups=self._groups, say=say)
        self.live[session_id] = found
        if self.config.enabled:
            self._spawn(warm_sdk)
        return found

    async def detach(self, session_id: str) -> None:
        servers = self.live.pop(session_id, None)
        if servers is not None:
            await servers.stop()

    async def stop_all(self) -> None:
        live = list(self.live.values())
        self.live.clear()
        with anyio.CancelScope(shield=True):
            async with anyio.create_task_group() as tg:
                for servers in live:
                    tg.start_soon(_stop_servers, servers)


async def _stop_conn(conn: ServerConnection, fast: bool) -> None:
    await conn.stop(fast=fast)


async def _stop_servers(servers: SessionServers) -> None:
    await servers.stop(fast=True)
