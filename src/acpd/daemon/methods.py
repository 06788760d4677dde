"""The session methods of the ACP face: new, load, resume, list, close, delete, modes and
config options, prompts.

Loaded with the runtime (config, store, tools), right after `initialize` is answered, so this
module imports what it needs at the top: a handler pays no import on its way.
"""

from __future__ import annotations

import functools
import logging
import os
import uuid
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any

import anyio

from acpd.daemon import direct, native_hooks, updates, v1extras
from acpd.daemon.confine import policy_rules, release_tmp
from acpd.daemon.editor import TERMINAL_TIMEOUT, EditorFileSystem, EditorTerminalRunner
from acpd.daemon.elicitation import EditorForms, client_takes_forms
from acpd.daemon.errors import SessionBusy, SessionNotFound
from acpd.daemon.interrupted import close_interrupted
from acpd.daemon.local import LocalCommandRunner, ProcessGroups
from acpd.daemon.prompting import prompt_text, run_prompt
from acpd.daemon.rpc import Connection, Reply
from acpd.daemon.session import Session
from acpd.daemon.session_info import rfc3339, send_info
from acpd.daemon.store import BadCursor, SessionRow
from acpd.daemon.terminal_stream import replay_mode, session_terminals
from acpd.daemon.terminal_wire import replay
from acpd.mcpclient.hub import McpSessions
from acpd.protocol import acp
from acpd.protocol.errors import invalid_params
from acpd.providers.base import Message
from acpd.remote import reattach
from acpd.remote.link import SessionLink
from acpd.tools.overflow import SessionOverflow
from acpd.tools.pipeline import CallEnv

if TYPE_CHECKING:
    from acpd.daemon.agent import Runtime
    from acpd.daemon.handshake import ClientCaps
    from acpd.daemon.rpc import EditorPeer
    from acpd.remote.hub import Hub
    from acpd.tools.capabilities import CommandRunner

log = logging.getLogger("acpd.session")

MODE_NAMES = {
    "read-only": ("Read-only", "Only tools that read; anything that changes state is denied."),
    "ask": ("Ask", "Tools that change state or run commands ask for approval first."),
    "auto": ("Auto", "Tools run without asking (the shell policy still applies)."),
}
DIRECT = "none"
CARD_GRACE = 1.0
"""Seconds a stopping daemon waits, once its commands are killed, for the turns to close
their cards and write their tool results before it closes the store."""


class SessionMethods:
    """One per connection, built once the runtime is loaded. `client` returns the
    capabilities negotiated by the latest `initialize`. `hub`: the shared daemon's (see
    acpd/remote/hub.py), which owns the turns, the commands and who drives which session."""

    def __init__(
        self, conn: Connection, rt: Runtime, client: Callable[[], ClientCaps],
        hub: Hub | None = None,
    ) -> None:
        self.conn = conn
        self.hub = hub
        self.rt = rt
        self.client = client
        self.sessions: dict[str, Session] = {}
        self.stopping = False
        """Set when the daemon stops: no new session work starts."""
        self.groups = hub.groups if hub is not None else ProcessGroups()
        """The local commands running for this connection (all ended by its stop)."""
        self.mcp = hub.mcp if hub is not None else McpSessions(
            rt.config.mcp, conn.start_soon, self.groups
        )
        """The sessions' MCP servers (acpd/mcpclient), started at their first prompt."""
        self.table: dict[str, Callable[[Any], Awaitable[Any]]] = {
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

    def cancel(self, params: Any) -> None:
        session = self.sessions.get(acp.SessionRequest.model_validate(params).session_id)
        if session is not None:
            session.cancel()

    async def close_all(self, grace: float = CARD_GRACE) -> None:
        """The daemon stops: refuse new work, cancel every turn, end every local command
        (TERM, then KILL after STOP_KILL_GRACE), then wait up to `grace` seconds for the
        turns to close their cards and write their results (the store closes after)."""
        self.stopping = True
        for session in list(self.sessions.values()):
            session.close()
        await self.mcp.stop_all()
        await self.groups.stop()
        with anyio.move_on_after(grace):
            for session in list(self.sessions.values()):
                await session.idle.wait()

    # --- sessions ----------------------------------------------------------------------------

    async def new_session(self, params: Any) -> Reply:
        req = acp.NewSessionRequest.model_validate(params)
        rt = self.rt
        _check_cwd(req.cwd)
        extra = await v1extras.accept_roots(rt, req.cwd, req.additional_directories)
        servers = self.mcp.parse(req.mcp_servers)
        session_id = f"sess_{uuid.uuid4().hex}"
        model = rt.config.agent.model
        rt.store.create(session_id, req.cwd, rt.config.agent.default_mode, model)
        session = self._open(session_id, req.cwd, rt.config.agent.default_mode, model)
        v1extras.activate(session, rt, extra, fresh=True)
        session.tools.extra = await self.mcp.attach(session_id, req.cwd, servers, session.say)
        return Reply({"sessionId": session_id, **self._state(session)}, self._announce(session))

    async def load_session(self, params: Any) -> dict[str, Any]:
        """Replay the whole history, the commands included, and only then answer."""
        req = acp.LoadSessionRequest.model_validate(params)
        running = reattach.claim(self, req)
        reattach.missed(self, req.session_id)  # a load replays all: nothing else is owed
        if running is not None:  # its turn runs on: replay what is stored, then follow it
            await reattach.replay_and_release(self, running, 0)
            return self._state(running)
        session, _ = await self._reopen_with_roots(req)
        shown = replay_mode(self.client())  # its terminals as this client shows them
        for update in replay(self.rt.store.updates(session.id), shown):
            await session.send(update)
        await self._announce(session)()
        await native_hooks.session_live(session, self.rt)  # due scheduler tasks (tools/native)
        return self._state(session)

    async def resume_session(self, params: Any) -> Reply:
        req = acp.ResumeSessionRequest.model_validate(params)
        running = reattach.claim(self, req)
        missed = reattach.missed(self, req.session_id)
        if running is not None:
            live = running
            return Reply(self._state(live), lambda: reattach.replay_and_release(self, live, missed))
        session, closed = await self._reopen_with_roots(req)
        announce = self._announce(session)

        async def then() -> None:
            if missed is not None:  # what its turn did after the window went away
                shown = replay_mode(self.client())
                for update in replay(self.rt.store.updates(session.id)[missed:], shown):
                    await session.send(update)
            for update in closed:  # no replay: the editor still shows these cards open
                await session.send(update)
            await announce()

        return Reply(self._state(session), then)

    async def _reopen_with_roots(
        self, req: acp.LoadSessionRequest | acp.ResumeSessionRequest
    ) -> tuple[Session, list[dict[str, Any]]]:
        if self.rt.store.get(req.session_id) is None:
            raise SessionNotFound(req.session_id)
        _check_cwd(req.cwd)
        extra = await v1extras.accept_roots(self.rt, req.cwd, req.additional_directories)
        servers = self.mcp.parse(req.mcp_servers)
        session, closed = self._reopen(req.session_id, req.cwd)
        v1extras.activate(session, self.rt, extra, fresh=False)
        session.tools.extra = await self.mcp.attach(session.id, req.cwd, servers, session.say)
        return session, closed

    def _reopen(self, session_id: str, cwd: str) -> tuple[Session, list[dict[str, Any]]]:
        """The stored session, live again, with what a dead daemon left open closed (see
        daemon/interrupted.py); also the card updates that closing added."""
        store = self.rt.store
        row = store.get(session_id)
        if row is None:
            raise SessionNotFound(session_id)
        _check_cwd(cwd)
        live = self.sessions.get(session_id)
        if live is not None:
            if not live.idle.is_set():
                raise SessionBusy("that session is running a prompt; cancel it first")
            live.close()
        if cwd != row.cwd:
            store.update_meta(session_id, cwd=cwd)
        closed = close_interrupted(store, session_id)
        session = self._open(session_id, cwd, row.mode, row.model)
        session.title = row.title
        session.history = [Message.from_dict(m) for m in store.messages(session_id)]
        return session, closed

    async def list_sessions(self, params: Any) -> dict[str, Any]:
        req = acp.ListSessionsRequest.model_validate(params or {})
        try:
            rows, cursor = self.rt.store.list(req.cwd, req.cursor)
        except BadCursor:
            raise invalid_params("cursor is not one this agent issued") from None
        result: dict[str, Any] = {"sessions": [
            _info(row, v1extras.listed_roots(self.rt, row.id)) for row in rows
        ]}
        if cursor is not None:
            result["nextCursor"] = cursor
        return result

    async def close_session(self, params: Any) -> dict[str, Any]:
        session = self._live(acp.SessionRequest.model_validate(params).session_id)
        session.close()
        await session.idle.wait()
        self.sessions.pop(session.id, None)
        if self.hub is not None:
            self.hub.disown(session.id)
        await self.mcp.detach(session.id)
        self.rt.session_over(session.id)
        await self.release_workspaces()
        return {}

    async def delete_session(self, params: Any) -> dict[str, Any]:
        session_id = acp.SessionRequest.model_validate(params).session_id
        if self.hub is not None:
            owner = self.hub.owners.get(session_id)
            if session_id in self.hub.detached or owner not in (None, self):
                raise SessionBusy(f"session {session_id} is in use by another editor window")
            self.hub.disown(session_id)
        live = self.sessions.pop(session_id, None)
        if live is not None:
            live.close()
            await live.idle.wait()
        await self.mcp.detach(session_id)
        # ACP: deleting a session that does not exist SHOULD succeed silently.
        self.rt.store.delete(session_id)
        self.rt.session_over(session_id)
        await native_hooks.session_deleted(session_id, self.rt)  # its tasks and Knowledge
        await self.release_workspaces()
        return {}

    async def release_workspaces(self) -> None:
        """Close what is kept open per workspace (its checkpoint store) for the workspaces
        no live session works in any more."""
        if self.hub is not None:
            await self.hub.release_workspaces()
            return
        await release_workspaces(self.rt, [s.cwd for s in self.sessions.values()])

    def _live(self, session_id: str) -> Session:
        session = self.sessions.get(session_id)
        if session is None:
            raise SessionNotFound(session_id)
        return session

    def _open(self, session_id: str, cwd: str, mode: str, model: str | None) -> Session:
        rt = self.rt
        peer: EditorPeer = SessionLink(self.conn, self.client) if self.hub else self.conn
        session = Session(session_id, cwd, mode, model, peer, rt.store)
        session.approvals = rt.toolkit.approvals.for_workspace(cwd)
        session.tools = rt.toolkit.settings.new_state()
        self.sessions[session_id] = session
        if self.hub is not None:
            self.hub.own(self, session)
        return session

    def _announce(self, session: Session) -> Callable[[], Awaitable[None]]:
        """The updates that must follow (never precede) a session's response."""

        async def announce() -> None:
            if session.title is not None:  # a stored one: the editor may not have it
                await send_info(session)
            await session.send(updates.available_commands(direct.commands(self.rt.pipeline)))

        return announce

    # --- modes and config options -------------------------------------------------------------

    async def set_mode(self, params: Any) -> dict[str, Any]:
        req = acp.SetSessionModeRequest.model_validate(params)
        session = self._live(req.session_id)
        self._switch_mode(session, req.mode_id)
        await session.send(updates.current_mode(session.mode))
        return {}

    async def set_config_option(self, params: Any) -> dict[str, Any]:
        req = acp.SetSessionConfigOptionRequest.model_validate(params)
        session = self._live(req.session_id)
        if v1extras.is_switch(req.config_id):
            v1extras.set_switch(session, self.rt, req.config_id, req.value)
        elif not isinstance(req.value, str):
            raise invalid_params(f"{req.config_id} takes one of its listed values")
        elif req.config_id == "mode":
            self._switch_mode(session, req.value)
            await session.send(updates.current_mode(session.mode))
        elif req.config_id == "model":
            choices = self._model_choices(session)
            if req.value not in choices:
                raise invalid_params(f"unknown model {req.value!r}; choose one of {choices}")
            session.model = None if req.value == DIRECT else req.value
            session.provider = None
            self.rt.store.update_meta(session.id, model=session.model)
        else:
            raise invalid_params(f"unknown config option {req.config_id!r}")
        return {"configOptions": self._options_wire(session)}

    def _switch_mode(self, session: Session, mode: str) -> None:
        if mode not in MODE_NAMES:
            raise invalid_params(f"unknown mode {mode!r}; modes are {', '.join(MODE_NAMES)}")
        session.mode = mode
        self.rt.store.update_meta(session.id, mode=mode)

    def _state(self, session: Session) -> dict[str, Any]:
        modes = [
            {"id": mode, "name": name, "description": description}
            for mode, (name, description) in MODE_NAMES.items()
        ]
        return {
            "modes": {"currentModeId": session.mode, "availableModes": modes},
            "configOptions": self._options_wire(session),
        }

    def _options_wire(self, session: Session) -> list[dict[str, Any]]:
        options = [o.to_wire() for o in self._config_options(session)]
        return options + v1extras.switch_options(session, self.client().raw)

    def _model_choices(self, session: Session) -> list[str]:
        agent = self.rt.config.agent
        choices = [DIRECT]
        for model in (agent.model, *agent.models, session.model):
            if model and model not in choices:
                choices.append(model)
        return choices

    def _config_options(self, session: Session) -> list[acp.SessionConfigOption]:
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
                for m in self._model_choices(session)
            ],
        )
        return [mode, model]

    # --- prompts ------------------------------------------------------------------------------

    async def prompt(self, params: Any) -> dict[str, Any]:
        req = acp.PromptRequest.model_validate(params)
        session = self._live(req.session_id)
        rt = self.rt
        shell = rt.pipeline.shell
        notice = shell.take_notice(session.id) if shell and session.idle.is_set() else None
        if notice is not None:
            # Outside a turn an agent message would break the turn's order: it waits for
            # the next prompt of a session whose policy kept its last good version.
            await session.say(notice + "\n\n")
        if rt.notice is not None and session.idle.is_set():
            notice, rt.notice = rt.notice, None  # once per daemon
            await session.say(notice + "\n\n")
        problems = rt.pipeline.output.take_warnings() if session.idle.is_set() else None
        if problems:
            # Once per daemon, where the user looks: a broken filters.toml must not go unseen.
            await session.say(problems + "\n\n")
        await self._tell_store_problem(session)
        env = self._env(session)
        if isinstance(session.conn, SessionLink) and session.conn.followers:
            said = updates.message_chunk("user_message_chunk", prompt_text(req.prompt), None)
            await session.conn.to_followers(
                "session/update", {"sessionId": session.id, "update": said}
            )
        if self.hub is not None:  # the daemon's task: it may outlive this window
            turn = functools.partial(run_prompt, session, req.prompt, rt, env)
            stop = await self.hub.run_turn(session, turn)
        else:
            stop = await run_prompt(session, req.prompt, rt, env)
        await self._tell_store_problem(session)
        return {"stopReason": stop}

    async def _tell_store_problem(self, session: Session) -> None:
        """A store write failed (disk full, read-only): the user hears it once, in the
        session at hand, before or right after its turn (never in the middle of one)."""
        problem = self.rt.store.take_problem() if session.idle.is_set() else None
        if problem is not None:
            await session.say(
                f"\n[acpd] {problem}. The session goes on, but it is not being saved until "
                "the data directory can be written again.\n\n"
            )

    def _env(self, session: Session) -> CallEnv:
        rt, client = self.rt, self.client()
        shell = rt.config.tools.shell
        rules = policy_rules(rt.pipeline.shell) if rt.pipeline.shell is not None else None
        live = session_terminals(session, client, lambda: rt.pipeline.output)
        local = LocalCommandRunner(env_blocklist=shell.env_blocklist, groups=self.groups,
                                   rules=rules, live=live)
        runner: CommandRunner = local
        if client.terminal and session.editor_terminal:
            runner = EditorTerminalRunner(
                session.conn, session.id, fallback=local, on_silent=session.editor_terminal_silent,
                create_timeout=min(TERMINAL_TIMEOUT, rt.config.protocol.request_timeout),
                rules=rules, env_blocklist=shell.env_blocklist,
            )
        if shell.transactional:
            from acpd.tools.transaction import TransactionalRunner, TransactionSettings

            runner = TransactionalRunner(runner, TransactionSettings(
                frozenset(shell.auto_rollback_exit_codes), shell.snapshot_required,
                shell.max_snapshot_bytes,
            ))
        fs = EditorFileSystem(
            session.conn, session.id,
            can_read=client.read_text_file, can_write=client.write_text_file,
        )
        return CallEnv(
            session.cwd, session.roots, session.mode, fs, runner, session, session.approvals,
            session.tools, session.id, shell.timeout, shell.output_byte_limit,
            overflow=SessionOverflow(rt.store, session.id),
            confirm_commands=lambda: session.settings.on("confirm_commands"),
            elicit=(
                EditorForms(session.conn, session.id) if client_takes_forms(client.raw) else None
            ),
        )


async def release_workspaces(rt: Runtime, in_use: list[str]) -> None:
    """What is kept per workspace (checkpoint store, approvals, the private /tmp of its
    sandboxed commands) goes for the workspaces that are not `in_use` (the cwds of the live
    sessions): a daemon serves many projects over its life. The stores close and the
    directories go in a worker thread; a failure is logged."""
    rt.toolkit.approvals.close_unused(in_use)  # here: sessions open theirs on this thread
    try:
        await anyio.to_thread.run_sync(release_tmp, in_use)
    except Exception:  # a directory that cannot be removed is not the request's problem
        log.exception("cannot remove the private /tmp of the workspaces no session uses")
    book = rt.pipeline.checkpoints
    if book is not None:
        try:
            await anyio.to_thread.run_sync(book.close_unused, in_use)
        except Exception:  # a store that fails to close is not the request's problem
            log.exception("cannot close the checkpoint stores no session uses")


def _check_cwd(cwd: str) -> None:
    if not os.path.isdir(cwd):
        raise invalid_params(f"cwd is not a directory: {cwd[:300]}")


def _info(row: SessionRow, extra_roots: list[str]) -> dict[str, Any]:
    info: dict[str, Any] = {
        "sessionId": row.id,
        "cwd": row.cwd,
        "updatedAt": rfc3339(row.updated_at),
    }
    if row.title:
        info["title"] = row.title
    if extra_roots:
        info["additionalDirectories"] = extra_roots
    return info
