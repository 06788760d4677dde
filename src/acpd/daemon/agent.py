"""The ACP face: dispatch, `initialize`, and the runtime (config, store, tools) behind it.

`initialize` is answered from the raw params without pydantic, the config, the store or any
provider: those load right after the answer is queued, while the editor reads it, together
with the session methods (daemon/methods.py).
"""

from __future__ import annotations

import asyncio
import logging
import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import anyio
import anyio.lowlevel

from acpd.daemon.errors import SessionBusy
from acpd.daemon.handshake import DRAFT_VERSION, ClientCaps, initialize_result
from acpd.daemon.rpc import Connection, Reply
from acpd.protocol.errors import internal_error, invalid_params, method_not_found

if TYPE_CHECKING:
    from acpd.daemon.config import Config
    from acpd.daemon.methods import SessionMethods
    from acpd.daemon.store import SessionStore
    from acpd.daemon.turn import LoopLimits
    from acpd.daemon.v2face import V2Face
    from acpd.remote.hub import Hub
    from acpd.tools.pipeline import ToolPipeline
    from acpd.tools.setup import Toolkit

log = logging.getLogger("acpd.agent")

SESSION_METHODS = frozenset({
    "session/new", "session/load", "session/resume", "session/list", "session/close",
    "session/delete", "session/prompt", "session/set_mode", "session/set_config_option",
})
META_FLUSH_DELAY = 0.05  # seconds a metadata change may wait for its write (see SessionStore)
OVERFLOW_SWEEP = 3600.0
OVERFLOW_SWEEP_BATCH = 500


@dataclass(frozen=True, slots=True)
class ServeOptions:
    config_path: str | None = None
    data_dir: str | None = None
    model: str | None = None
    max_line_bytes: int | None = None


@dataclass(slots=True)
class Runtime:
    config: Config
    store: SessionStore
    pipeline: ToolPipeline
    limits: LoopLimits
    toolkit: Toolkit
    notice: str | None = None
    """Said once, at the first prompt (and logged at start): the data directory is unusable."""
    overflow_swept: float = field(default_factory=time.monotonic)
    """When stored tool outputs past their retention were last deleted (at start, then at
    most every OVERFLOW_SWEEP seconds as sessions end)."""

    def session_over(self, session_id: str) -> None:
        """The session is no longer live in this process (closed, deleted, its window gone
        with its turn over): drop what was kept in memory for it. A daemon runs for days: a
        table keyed by session that is only ever filled is a leak (tests/leaks)."""
        self.store.forget(session_id)
        self.pipeline.forget_session(session_id)
        self._sweep_overflow()

    def _sweep_overflow(self) -> None:
        """`retention_days` holds for a daemon that runs for weeks too, not only from one
        start to the next: a bounded batch, so the loop is never held long."""
        now = time.monotonic()
        if now - self.overflow_swept < OVERFLOW_SWEEP:
            return
        self.overflow_swept = now
        try:
            gone = self.store.expire_overflow(self.config.tools.overflow.retention_days,
                                              limit=OVERFLOW_SWEEP_BATCH)
        except Exception:  # the disk's problem, kept by the store; never the request's
            log.exception("cannot expire stored tool outputs")
            return
        if gone:
            log.info("expired %d stored tool outputs", gone)


class AcpAgent:
    """`hub`: set in the shared daemon (acpd/remote): the runtime, the live sessions and
    the running turns are the daemon's, not this connection's."""

    def __init__(self, conn: Connection, options: ServeOptions, hub: Hub | None = None) -> None:
        self.conn = conn
        self.options = options
        self.hub = hub
        self.client_name: str | None = None
        self.follower = False
        """A control connection (`acpd ps`, `acpd attach`: read-only), not a window."""
        self.client = ClientCaps()
        self._runtime: Runtime | None = None
        self._methods: SessionMethods | None = None
        self._runtime_lock = anyio.Lock()
        self._meta_timer: asyncio.TimerHandle | None = None
        self._v2: V2Face | None = None
        """The v2 draft face, while the connection speaks v2 (see daemon/v2face.py)."""
        conn.on_request = self.on_request
        conn.on_notification = self.on_notification
        conn.on_eof = self.shutdown

    async def on_request(self, method: str, params: Any) -> Any:
        if method == "initialize":
            return await self.initialize(params)
        if self.hub is not None and self.hub.stopping:
            raise SessionBusy("acpd is stopping")
        if self.hub is not None and method.startswith("_acpd/"):
            from acpd.remote.control import control_request

            return await control_request(self, self.hub, method, params)
        if method == "authenticate" and self._v2 is None:
            raise invalid_params("acpd offers no authentication methods; none is needed")
        if method not in SESSION_METHODS and self._v2 is None:
            raise method_not_found(method)
        methods = self._methods or await self.session_methods()
        if methods.stopping:
            raise SessionBusy("acpd is stopping")
        try:
            if self._v2 is not None:  # the same methods behind v2 names and shapes
                return await self._v2.on_request(method, params)
            return await methods.table[method](params)
        finally:
            if methods.rt.store.pending_meta:
                self._flush_meta_soon(methods.rt.store)

    def _flush_meta_soon(self, store: SessionStore) -> None:
        """Session metadata (mode, model, title) is written behind, META_FLUSH_DELAY after
        the first change: a burst of mode switches costs one transaction, not one each.
        A flush that finds nothing pending (a read or the close came first) does nothing."""
        if self._meta_timer is None:
            self._meta_timer = asyncio.get_running_loop().call_later(
                META_FLUSH_DELAY, self._flush_meta, store
            )

    def _flush_meta(self, store: SessionStore) -> None:
        self._meta_timer = None
        try:
            store.flush_meta()
        except Exception:  # kept pending: the next read, write or close tries again
            log.exception("cannot write session metadata")

    async def on_notification(self, method: str, params: Any) -> None:
        if method == "session/cancel":
            methods = self._methods or await self.session_methods()
            # A prompt read just before this cancel (one write holding both) starts its task
            # at the next loop step, where its turn begins: let it, so the cancel finds it.
            await anyio.lowlevel.checkpoint()
            if self._v2 is not None:
                self._v2.cancel(params)
            methods.cancel(params)
        # Unknown notifications are ignored, as JSON-RPC asks.

    @property
    def methods(self) -> SessionMethods | None:
        return self._methods

    async def shutdown(self) -> None:
        """Stdin closed or a stop signal, in this order: refuse new work, kill every command,
        let the turns close their cards and write their results, then close the store.
        In the shared daemon: the turns go on without this window (remote/hub.py)."""
        if self.hub is not None:
            if self._methods is not None:
                await self.hub.window_left(self._methods)
            if self._meta_timer is not None and self._runtime is not None:
                self._meta_timer.cancel()
                self._meta_timer = None
                self._flush_meta(self._runtime.store)
            return
        try:
            if self._methods is not None:
                await self._methods.close_all()
        finally:
            # Also when the turns outlast the shutdown grace: metadata still written.
            if self._meta_timer is not None:
                self._meta_timer.cancel()  # the close below writes what is pending
            if self._runtime is not None:
                if self._runtime.pipeline.shell is not None:
                    self._runtime.pipeline.shell.close()  # the policy watchers end with us
                self._runtime.store.close()

    # --- initialize (no heavy imports on this path) ------------------------------------------

    async def initialize(self, params: Any) -> Reply:
        from acpd.daemon.image_models import image_capability

        image = image_capability(self.options.config_path, self.options.model)
        result, client = initialize_result(params, image=image)
        info = params.get("clientInfo") if isinstance(params, dict) else None
        name = info.get("name") if isinstance(info, dict) else None
        self.client_name = name[:100] if isinstance(name, str) else None
        self.adopt(client)
        return Reply(result, then=self.warm_up)

    def adopt(self, client: ClientCaps) -> None:
        """Take the capabilities negotiated by `initialize` (here or before the loop)."""
        self.client = client
        self.conn.initialized = True
        self._v2 = None
        self.conn.renderer = self.conn.batches = None
        if client.protocol_version == DRAFT_VERSION:
            from acpd.daemon.v2face import V2Face
            from acpd.protocol.acp_v2 import batch_messages

            self._v2 = V2Face(self.conn, self.session_methods)
            self.conn.renderer = self._v2.renderer
            self.conn.batches = batch_messages

    async def warm_up(self) -> None:
        try:
            await self.session_methods()
        except Exception as exc:  # reported again, to the editor, by the first session call
            log.error("start-up failed: %s", exc)

    async def session_methods(self) -> SessionMethods:
        """The session methods over the loaded runtime. Raises ConfigError for a bad config."""
        if self._methods is None:
            runtime = await self.runtime()
            from acpd.daemon.methods import SessionMethods

            self._methods = SessionMethods(
                self.conn, runtime, lambda: self.client, hub=self.hub
            )
        return self._methods

    async def runtime(self) -> Runtime:
        """Config, store and tools, loaded once. Raises ConfigError for a bad config, RpcError
        (saying what) when a file it needs cannot be used."""
        if self._runtime is not None:
            return self._runtime
        if self.hub is not None:  # loaded once by the daemon, its watchers started there
            self._runtime = await self.hub.runtime()
            self.conn.max_line_bytes = self._runtime.config.protocol.max_line_bytes
            self.conn.outbox.linger = self._runtime.config.protocol.linger_us / 1e6
            return self._runtime
        async with self._runtime_lock:
            if self._runtime is None:
                try:
                    self._runtime = await anyio.to_thread.run_sync(load_runtime, self.options)
                except OSError as exc:  # named, not "internal error": the user can fix it
                    raise internal_error(f"acpd cannot start: {exc}") from None
                protocol = self._runtime.config.protocol
                self.conn.max_line_bytes = protocol.max_line_bytes
                self.conn.outbox.linger = protocol.linger_us / 1e6
                if self._runtime.pipeline.shell is not None:
                    # Hot reload: watchers run as the connection's background tasks.
                    self._runtime.pipeline.shell.attach(self.conn.start_soon, self.conn.notify)
            return self._runtime


def load_runtime(options: ServeOptions) -> Runtime:
    """Config, store and tools (blocking: run it in a worker thread). Raises ConfigError
    for a bad config, OSError when a file it needs cannot be used."""
    from pathlib import Path

    from acpd.daemon.config import config_path, default_data_dir, load_config
    from acpd.daemon.store import open_store
    from acpd.daemon.turn import LoopLimits, catalog_builder
    from acpd.tools.setup import build_toolkit

    overrides = {"agent.model": options.model}
    if options.max_line_bytes is not None:
        overrides["protocol.max_line_bytes"] = options.max_line_bytes  # type: ignore[assignment]
    config = load_config(options.config_path, overrides)
    data_dir = Path(options.data_dir) if options.data_dir else default_data_dir()
    store, problem = open_store(data_dir)
    notice = None
    if problem is not None:
        notice = (
            f"[acpd] {problem}. Sessions are kept in memory only and are lost when acpd "
            "stops; start acpd with --data-dir DIR to keep them."
        )
        log.warning("%s", notice)
    agent = config.agent
    limits = LoopLimits(
        agent.max_tool_iterations, agent.context_budget_tokens, agent.max_tokens,
        agent.system_prompt, agent.max_tool_calls_per_reply, prices=agent.prices,
        catalog=catalog_builder(config),
    )
    # filters.toml is looked up beside the config file (which need not exist); both are
    # watched, and the output filters rebuilt when either changes.
    config_file = config_path(options.config_path)
    toolkit = build_toolkit(
        config.tools, data_dir, config_dir=config_file.parent, config_file=config_file,
        reload_tools=lambda: load_config(options.config_path, overrides).tools,
    )
    if limits.catalog is not None:
        limits.catalog.prewarm(toolkit.pipeline.registry)  # the first turn pays no set-up
    expired = store.expire_overflow(config.tools.overflow.retention_days)
    if expired:
        log.info("expired %d stored tool outputs", expired)
    return Runtime(config, store, toolkit.pipeline, limits, toolkit, notice)
