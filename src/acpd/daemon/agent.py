"""The ACP face: one handler per method, sessions in memory, storage and the loop behind them.

`initialize` is answered from the raw params without pydantic, the config, the store or any
provider: those load right after the answer is queued, while the editor reads it.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import anyio

from acpd.daemon.errors import SessionBusy, SessionNotFound
from acpd.daemon.handshake import ClientCaps, initialize_result
from acpd.daemon.rpc import Connection, Reply
from acpd.protocol.errors import invalid_params, method_not_found

if TYPE_CHECKING:
    from acpd.daemon.config import Config
    from acpd.daemon.session import Session
    from acpd.daemon.store import SessionRow, SessionStore
    from acpd.daemon.turn import LoopLimits
    from acpd.protocol import acp
    from acpd.tools.capabilities import CommandRunner
    from acpd.tools.pipeline import CallEnv, ToolPipeline
    from acpd.tools.setup import Toolkit

log = logging.getLogger("acpd.agent")

MODE_NAMES = {
    "read-only": ("Read-only", "Only tools that read; anything that changes state is denied."),
    "ask": ("Ask", "Tools that change state or run commands ask for approval first."),
    "auto": ("Auto", "Tools run without asking (the shell policy still applies)."),
}
DIRECT = "none"
META_FLUSH_DELAY = 0.05  # seconds a metadata change may wait for its write (see SessionStore)


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


class AcpAgent:
    def __init__(self, conn: Connection, options: ServeOptions) -> None:
        self.conn = conn
        self.options = options
        self.client = ClientCaps()
        self.sessions: dict[str, Session] = {}
        self._runtime: Runtime | None = None
        self._runtime_lock = anyio.Lock()
        self._meta_flush_due = False
        self._methods: dict[str, Callable[[Any], Awaitable[Any]]] = {
            "initialize": self.initialize,
            "authenticate": self.authenticate,
            "session/new": self.new_session,
            "session/load": self.load_session,
            "session/resume": self.resume_session,
            "session/list": self.list_sessions,
            "session/close": self.close_session,
            "session/delete": self.delete_session,
            "session/prompt": self.prompt,
            "session/set_mode": self.set_mode,
            "session/set_config_option": self.set_config_option,
        }
        conn.on_request = self.on_request
        conn.on_notification = self.on_notification
        conn.on_eof = self.shutdown

    async def on_request(self, method: str, params: Any) -> Any:
        handler = self._methods.get(method)
        if handler is None:
            raise method_not_found(method)
        try:
            return await handler(params)
        finally:
            if self._runtime is not None and self._runtime.store.pending_meta:
                self._flush_meta_soon(self._runtime.store)

    def _flush_meta_soon(self, store: SessionStore) -> None:
        """Session metadata (mode, model, title) is written behind, META_FLUSH_DELAY after
        the first change: a burst of mode switches costs one transaction, not one each."""
        if self._meta_flush_due:
            return
        self._meta_flush_due = True

        async def flush_later() -> None:
            try:
                await anyio.sleep(META_FLUSH_DELAY)
            finally:
                self._meta_flush_due = False
            store.flush_meta()

        self.conn.start_soon(flush_later)

    async def on_notification(self, method: str, params: Any) -> None:
        if method == "session/cancel":
            from acpd.protocol import acp

            session = self.sessions.get(acp.SessionRequest.model_validate(params).session_id)
            if session is not None:
                session.cancel()
        # Unknown notifications are ignored, as JSON-RPC asks.

    async def shutdown(self) -> None:
        """Stdin closed: stop every turn (which kills children and releases terminals)."""
        for session in list(self.sessions.values()):
            session.close()
        for session in list(self.sessions.values()):
            await session.idle.wait()
        if self._runtime is not None:
            if self._runtime.pipeline.shell is not None:
                self._runtime.pipeline.shell.close()  # the policy watchers end with us
            self._runtime.store.close()

    # --- initialize (no heavy imports on this path) ------------------------------------------

    async def initialize(self, params: Any) -> Reply:
        result, client = initialize_result(params)
        self.adopt(client)
        return Reply(result, then=self.warm_up)

    def adopt(self, client: ClientCaps) -> None:
        """Take the capabilities negotiated by `initialize` (here or before the loop)."""
        self.client = client
        self.conn.initialized = True

    async def warm_up(self) -> None:
        try:
            await self.runtime()
        except Exception as exc:  # reported again, to the editor, by the first session call
            log.error("start-up failed: %s", exc)

    async def runtime(self) -> Runtime:
        """Config, store and tools, loaded once. Raises ConfigError for a bad config."""
        if self._runtime is not None:
            return self._runtime
        async with self._runtime_lock:
            if self._runtime is None:
                self._runtime = await anyio.to_thread.run_sync(self._load_runtime)
                self.conn.max_line_bytes = self._runtime.config.protocol.max_line_bytes
                if self._runtime.pipeline.shell is not None:
                    # Hot reload: watchers run as the connection's background tasks.
                    self._runtime.pipeline.shell.attach(self.conn.start_soon, self.conn.notify)
            return self._runtime

    def _load_runtime(self) -> Runtime:
        from pathlib import Path

        from acpd.daemon.config import config_path, default_data_dir, load_config
        from acpd.daemon.store import SessionStore
        from acpd.daemon.turn import LoopLimits
        from acpd.tools.setup import build_toolkit

        overrides = {"agent.model": self.options.model}
        if self.options.max_line_bytes is not None:
            overrides["protocol.max_line_bytes"] = self.options.max_line_bytes  # type: ignore[assignment]
        config = load_config(self.options.config_path, overrides)
        data_dir = Path(self.options.data_dir) if self.options.data_dir else default_data_dir()
        store = SessionStore(data_dir / "sessions.sqlite3")
        agent = config.agent
        limits = LoopLimits(
            agent.max_tool_iterations, agent.context_budget_tokens, agent.max_tokens,
            agent.system_prompt,
        )
        # filters.toml is looked up beside the config file (which need not exist); both are
        # watched, and the output filters rebuilt when either changes.
        config_file = config_path(self.options.config_path)
        toolkit = build_toolkit(
            config.tools, data_dir, config_dir=config_file.parent, config_file=config_file,
            reload_tools=lambda: load_config(self.options.config_path, overrides).tools,
        )
        expired = store.expire_overflow(config.tools.overflow.retention_days)
        if expired:
            log.info("expired %d stored tool outputs", expired)
        return Runtime(config, store, toolkit.pipeline, limits, toolkit)

    async def authenticate(self, params: Any) -> Any:
        raise invalid_params("acpd offers no authentication methods; none is needed")

    # --- sessions ----------------------------------------------------------------------------

    async def new_session(self, params: Any) -> Reply:
        from acpd.protocol import acp

        req = acp.NewSessionRequest.model_validate(params)
        rt = await self.runtime()
        _check_cwd(req.cwd)
        import uuid

        session_id = f"sess_{uuid.uuid4().hex}"
        model = rt.config.agent.model
        rt.store.create(session_id, req.cwd, rt.config.agent.default_mode, model)
        session = self._open(rt, session_id, req.cwd, rt.config.agent.default_mode, model)
        return Reply({"sessionId": session_id, **self._state(rt, session)}, self._announce(session))

    async def load_session(self, params: Any) -> Reply:
        from acpd.protocol import acp

        req = acp.LoadSessionRequest.model_validate(params)
        rt, session = await self._reopen(req.session_id, req.cwd)
        for update in rt.store.updates(session.id):
            await session.send(update)
        return Reply(self._state(rt, session), self._announce(session))

    async def resume_session(self, params: Any) -> Reply:
        from acpd.protocol import acp

        req = acp.ResumeSessionRequest.model_validate(params)
        rt, session = await self._reopen(req.session_id, req.cwd)
        return Reply(self._state(rt, session), self._announce(session))

    async def _reopen(self, session_id: str, cwd: str) -> tuple[Runtime, Session]:
        from acpd.providers.base import Message

        rt = await self.runtime()
        row = rt.store.get(session_id)
        if row is None:
            raise SessionNotFound(session_id)
        _check_cwd(cwd)
        live = self.sessions.get(session_id)
        if live is not None:
            if not live.idle.is_set():
                raise SessionBusy("that session is running a prompt; cancel it first")
            live.close()
        if cwd != row.cwd:
            rt.store.update_meta(session_id, cwd=cwd)
        session = self._open(rt, session_id, cwd, row.mode, row.model)
        session.title = row.title
        session.history = [Message.from_dict(m) for m in rt.store.messages(session_id)]
        return rt, session

    async def list_sessions(self, params: Any) -> dict[str, Any]:
        from acpd.daemon.store import BadCursor
        from acpd.protocol import acp

        req = acp.ListSessionsRequest.model_validate(params or {})
        rt = await self.runtime()
        try:
            rows, cursor = rt.store.list(req.cwd, req.cursor)
        except BadCursor:
            raise invalid_params("cursor is not one this agent issued") from None
        result: dict[str, Any] = {"sessions": [_info(row) for row in rows]}
        if cursor is not None:
            result["nextCursor"] = cursor
        return result

    async def close_session(self, params: Any) -> dict[str, Any]:
        session = self._live(await self._session_id(params))
        session.close()
        await session.idle.wait()
        self.sessions.pop(session.id, None)
        return {}

    async def delete_session(self, params: Any) -> dict[str, Any]:
        session_id = await self._session_id(params)
        rt = await self.runtime()
        live = self.sessions.pop(session_id, None)
        if live is not None:
            live.close()
            await live.idle.wait()
        if not rt.store.delete(session_id) and live is None:
            raise SessionNotFound(session_id)
        return {}

    async def _session_id(self, params: Any) -> str:
        from acpd.protocol import acp

        return acp.SessionRequest.model_validate(params).session_id

    def _live(self, session_id: str) -> Session:
        session = self.sessions.get(session_id)
        if session is None:
            raise SessionNotFound(session_id)
        return session

    def _open(
        self, rt: Runtime, session_id: str, cwd: str, mode: str, model: str | None
    ) -> Session:
        from acpd.daemon.session import Session

        session = Session(session_id, cwd, mode, model, self.conn, rt.store)
        session.approvals = rt.toolkit.approvals.for_workspace(cwd)
        session.tools = rt.toolkit.settings.new_state()
        self.sessions[session_id] = session
        return session

    def _announce(self, session: Session) -> Callable[[], Awaitable[None]]:
        """The updates that must follow (never precede) a session's response."""

        async def announce() -> None:
            from acpd.daemon import direct, updates

            rt = await self.runtime()
            await session.send(updates.available_commands(direct.commands(rt.pipeline)))

        return announce

    # --- modes and config options -------------------------------------------------------------

    async def set_mode(self, params: Any) -> dict[str, Any]:
        from acpd.daemon import updates
        from acpd.protocol import acp

        req = acp.SetSessionModeRequest.model_validate(params)
        session = self._live(req.session_id)
        rt = await self.runtime()
        self._switch_mode(rt, session, req.mode_id)
        await session.send(updates.current_mode(session.mode))
        return {}

    async def set_config_option(self, params: Any) -> dict[str, Any]:
        from acpd.daemon import updates
        from acpd.protocol import acp

        req = acp.SetSessionConfigOptionRequest.model_validate(params)
        session = self._live(req.session_id)
        rt = await self.runtime()
        if not isinstance(req.value, str):
            raise invalid_params(f"{req.config_id} takes one of its listed values")
        if req.config_id == "mode":
            self._switch_mode(rt, session, req.value)
            await session.send(updates.current_mode(session.mode))
        elif req.config_id == "model":
            choices = self._model_choices(rt, session)
            if req.value not in choices:
                raise invalid_params(f"unknown model {req.value!r}; choose one of {choices}")
            session.model = None if req.value == DIRECT else req.value
            session.provider = None
            rt.store.update_meta(session.id, model=session.model)
        else:
            raise invalid_params(f"unknown config option {req.config_id!r}")
        return {"configOptions": [o.to_wire() for o in self._config_options(rt, session)]}

    def _switch_mode(self, rt: Runtime, session: Session, mode: str) -> None:
        if mode not in MODE_NAMES:
            raise invalid_params(f"unknown mode {mode!r}; modes are {', '.join(MODE_NAMES)}")
        session.mode = mode
        rt.store.update_meta(session.id, mode=mode)

    def _state(self, rt: Runtime, session: Session) -> dict[str, Any]:
        modes = [
            {"id": mode, "name": name, "description": description}
            for mode, (name, description) in MODE_NAMES.items()
        ]
        return {
            "modes": {"currentModeId": session.mode, "availableModes": modes},
            "configOptions": [o.to_wire() for o in self._config_options(rt, session)],
        }

    def _model_choices(self, rt: Runtime, session: Session) -> list[str]:
        choices = [DIRECT]
        for model in (rt.config.agent.model, *rt.config.agent.models, session.model):
            if model and model not in choices:
                choices.append(model)
        return choices

    def _config_options(self, rt: Runtime, session: Session) -> list[acp.SessionConfigOption]:
        from acpd.protocol import acp

        mode = acp.SessionConfigOption(
            id="mode", name="Mode", category="mode", current_value=session.mode,
            options=[
                acp.SessionConfigSelectOption(value=m, name=name, description=d)
                for m, (name, d) in MODE_NAMES.items()
            ],
        )
        model = acp.SessionConfigOption(
            id="model", name="Model", category="model",
            current_value=session.model or DIRECT,
            options=[
                acp.SessionConfigSelectOption(
                    value=m, name="Direct mode (no model)" if m == DIRECT else m
                )
                for m in self._model_choices(rt, session)
            ],
        )
        return [mode, model]

    # --- prompts ------------------------------------------------------------------------------

    async def prompt(self, params: Any) -> dict[str, Any]:
        from acpd.daemon.prompting import run_prompt
        from acpd.protocol import acp

        req = acp.PromptRequest.model_validate(params)
        session = self._live(req.session_id)
        rt = await self.runtime()
        shell = rt.pipeline.shell
        notice = shell.take_notice(session.id) if shell and session.idle.is_set() else None
        if notice is not None:
            # Outside a turn an agent message would break the turn's order: it waits for
            # the next prompt of a session whose policy kept its last good version.
            await session.say(notice + "\n\n")
        problems = rt.pipeline.output.take_warnings() if session.idle.is_set() else None
        if problems:
            # Once per daemon, where the user looks: a broken filters.toml must not go unseen.
            await session.say(problems + "\n\n")
        stop = await run_prompt(session, req.prompt, rt, self._env(rt, session))
        return {"stopReason": stop}

    def _env(self, rt: Runtime, session: Session) -> CallEnv:
        from acpd.daemon.editor import EditorFileSystem, EditorTerminalRunner
        from acpd.daemon.local import LocalCommandRunner
        from acpd.tools.overflow import SessionOverflow
        from acpd.tools.pipeline import CallEnv

        shell = rt.config.tools.shell
        runner: CommandRunner = (
            EditorTerminalRunner(self.conn, session.id)
            if self.client.terminal
            else LocalCommandRunner(env_blocklist=shell.env_blocklist)
        )
        if shell.transactional:
            from acpd.tools.transaction import TransactionalRunner, TransactionSettings

            runner = TransactionalRunner(runner, TransactionSettings(
                frozenset(shell.auto_rollback_exit_codes), shell.snapshot_required,
                shell.max_snapshot_bytes,
            ))
        fs = EditorFileSystem(
            self.conn, session.id,
            can_read=self.client.read_text_file, can_write=self.client.write_text_file,
        )
        return CallEnv(
            session.cwd, session.roots, session.mode, fs, runner, session, session.approvals,
            session.tools, session.id, shell.timeout, shell.output_byte_limit,
            overflow=SessionOverflow(rt.store, session.id),
        )


def _check_cwd(cwd: str) -> None:
    if not os.path.isdir(cwd):
        raise invalid_params(f"cwd is not a directory: {cwd[:300]}")


def _info(row: SessionRow) -> dict[str, Any]:
    from datetime import UTC, datetime

    info: dict[str, Any] = {
        "sessionId": row.id,
        "cwd": row.cwd,
        "updatedAt": datetime.fromtimestamp(row.updated_at, UTC).isoformat(),
    }
    if row.title:
        info["title"] = row.title
    return info
