"""What the editor connections of one shared daemon have in common.

Rules:

- One runtime (config, store, tools, the shell policy with its one set of watchers and
  rules) for every connection, loaded once; a policy reload is announced on every
  initialized connection.
- A live session belongs to one connection at a time (`owners`). Another connection that
  loads or resumes it gets SessionBusy, unless its request carries
  `_meta: {"acpd": {"takeOver": true}}`: then it takes the session (and its running turn)
  over, and the first window can no longer drive it.
- Turns run as tasks of the daemon, not of the request that started them: when the window
  goes away the turn goes on (see remote/link.py for where it pauses); with
  `[daemon] detach_grace` set, it is cancelled that many seconds after its window left.
  The updates it stores are replayed to the window that re-attaches it.
- Local commands and MCP servers of every connection are the daemon's: a closed window
  does not end the commands of its running turns; `stop()` ends them all (TERM, then KILL),
  lets the turns write their results, then closes the store.
"""

from __future__ import annotations

import asyncio
import functools
import logging
import os
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import anyio
from anyio.abc import TaskGroup

from acpd.daemon.errors import SessionBusy
from acpd.daemon.local import ProcessGroups
from acpd.remote.link import SessionLink

if TYPE_CHECKING:
    from acpd.daemon.agent import AcpAgent, Runtime, ServeOptions
    from acpd.daemon.methods import SessionMethods
    from acpd.daemon.rpc import Connection
    from acpd.daemon.session import Session
    from acpd.mcpclient.hub import McpSessions

log = logging.getLogger("acpd.remote")

STOP_CARD_GRACE = 1.0
MAX_MISSED = 1024
"""Sessions whose "updates seen when the window left" are kept for their resume (the oldest
go first: such a session resumed later gets its whole history by `session/load`)."""


@dataclass(eq=False)
class Window:
    """One editor connection."""

    number: int
    conn: Connection
    agent: AcpAgent
    peer_pid: int
    opened: float = field(default_factory=time.time)


class Hub:
    def __init__(self, options: ServeOptions, socket_path: str) -> None:
        self.options = options
        self.socket_path = socket_path
        self.started = time.time()
        self.windows: list[Window] = []
        self.owners: dict[str, SessionMethods] = {}
        """Live sessions and the connection that drives them."""
        self.detached: dict[str, Session] = {}
        """Sessions whose turn runs on with no window."""
        self.missed: dict[str, int] = {}
        """Per session, how many stored updates its last window had seen when it left."""
        self.groups = ProcessGroups()
        self.stopping = False
        self.stopped = anyio.Event()
        self._runtime: Runtime | None = None
        self._mcp: McpSessions | None = None
        self._tg: TaskGroup | None = None
        self._numbers = 0
        self._activity = anyio.Event()
        self._runtime_lock = anyio.Lock()
        self._grace: dict[str, anyio.CancelScope] = {}
        """The `detach_grace` timer of each detached session: ended with the detach (the
        turn ended, a window took it back, the session was deleted), not left to sleep out
        the grace holding the session and the window that left."""
        self.on_stopping: Callable[[], None] | None = None
        """Called as the stop begins: stop listening, so that a window opened meanwhile
        starts a new daemon instead of reaching this one."""

    # --- the runtime --------------------------------------------------------------------------

    async def runtime(self) -> Runtime:
        """Loaded once for every connection (tried again after a failure: the user may
        have fixed the config). Raises ConfigError, RpcError (a file it needs)."""
        if self._runtime is not None:
            return self._runtime
        async with self._runtime_lock:
            if self._runtime is None:
                from acpd.daemon.agent import load_runtime
                from acpd.mcpclient.hub import McpSessions
                from acpd.protocol.errors import internal_error

                try:
                    runtime = await anyio.to_thread.run_sync(load_runtime, self.options)
                except OSError as exc:
                    raise internal_error(f"acpd cannot start: {exc}") from None
                self._mcp = McpSessions(runtime.config.mcp, self.start_soon, self.groups)
                if runtime.pipeline.shell is not None:  # one set of watchers for all
                    runtime.pipeline.shell.attach(self.start_soon, self.broadcast)
                self._runtime = runtime
        return self._runtime

    async def load(self, tg: TaskGroup) -> None:
        """Take the daemon's task group and load the runtime (raises as `runtime`)."""
        self._tg = tg
        await self.runtime()

    @property
    def mcp(self) -> McpSessions:
        assert self._mcp is not None
        return self._mcp

    def start_soon(self, job: Callable[[], Awaitable[None]]) -> None:
        assert self._tg is not None
        self._tg.start_soon(_logged, job)

    async def broadcast(self, method: str, params: Any) -> None:
        for window in list(self.windows):
            conn = window.conn
            if conn.initialized and not conn.input_closed and not conn.closed.is_set():
                await conn.notify(method, params)

    # --- windows ------------------------------------------------------------------------------

    def open_window(self, conn: Connection, agent: AcpAgent, peer_pid: int) -> Window:
        self._numbers += 1
        window = Window(self._numbers, conn, agent, peer_pid)
        self.windows.append(window)
        self.touch()
        return window

    def close_window(self, window: Window) -> None:
        if window in self.windows:
            self.windows.remove(window)
        self.touch()

    def touch(self) -> None:
        self._activity.set()
        self._activity = anyio.Event()

    # --- ownership ----------------------------------------------------------------------------

    def claim(self, methods: SessionMethods, session_id: str, take_over: bool) -> Session | None:
        """Make `methods`' connection the owner of `session_id`. Returns the session when a
        turn of it runs (detached, or taken over with its turn): the caller re-attaches it;
        None when the caller opens it from the store. Raises SessionBusy when another live
        window drives it and `take_over` is not given."""
        running = self.detached.pop(session_id, None)
        if running is not None:
            self._end_grace(session_id)
            return running
        owner = self.owners.get(session_id)
        if owner is None or owner is methods:
            return None
        if not take_over:
            raise SessionBusy(
                f"session {session_id} is open in another editor window; close it there, or "
                'load it with _meta {"acpd": {"takeOver": true}} to take it over'
            )
        session = owner.sessions.pop(session_id)
        del self.owners[session_id]
        if not session.idle.is_set():
            return session
        session.close()
        return None

    def own(self, methods: SessionMethods, session: Session) -> None:
        self.owners[session.id] = methods

    def disown(self, session_id: str) -> None:
        self.owners.pop(session_id, None)
        self.detached.pop(session_id, None)
        self._end_grace(session_id)
        self.missed.pop(session_id, None)  # closed or deleted: no resume is owed

    async def window_left(self, methods: SessionMethods) -> None:
        """A connection ended: its idle sessions close, its running turns go on detached."""
        closed = False
        for session in list(methods.sessions.values()):
            if self.owners.get(session.id) is methods:
                del self.owners[session.id]
            methods.sessions.pop(session.id, None)
            if session.idle.is_set() or self.stopping:
                session.close()
                await self.mcp.detach(session.id)
                methods.rt.session_over(session.id)
                closed = True
                continue
            link = session.conn
            if isinstance(link, SessionLink):
                link.detach()
            self.detached[session.id] = session
            self._note_missed(session.id, methods.rt.store.update_count(session.id))
            log.info("window left; the turn of %s goes on", session.id)
            grace = methods.rt.config.daemon.detach_grace
            if grace is not None:
                self._end_grace(session.id)
                timer = self._grace[session.id] = anyio.CancelScope()
                self.start_soon(functools.partial(self._cancel_later, session, grace, timer))
        if closed:
            await self.release_workspaces()
        self.touch()

    def _note_missed(self, session_id: str, seen: int) -> None:
        """Kept until a window resumes the session (or it is deleted), for the most recent
        MAX_MISSED sessions: one never resumed must not be kept for the daemon's life."""
        self.missed.pop(session_id, None)
        self.missed[session_id] = seen
        while len(self.missed) > MAX_MISSED:
            del self.missed[next(iter(self.missed))]

    async def _cancel_later(self, session: Session, grace: float,
                            timer: anyio.CancelScope) -> None:
        with timer:
            await anyio.sleep(grace)
        if timer.cancel_called:  # the detach ended first
            return
        if self._grace.get(session.id) is timer:
            del self._grace[session.id]
        if self.detached.get(session.id) is session and not session.idle.is_set():
            log.info("no window came back within %g s: cancelling the turn of %s",
                     grace, session.id)
            session.cancel()

    def _end_grace(self, session_id: str) -> None:
        timer = self._grace.pop(session_id, None)
        if timer is not None:
            timer.cancel()

    # --- turns --------------------------------------------------------------------------------

    async def run_turn(self, session: Session, body: Callable[[], Awaitable[str]]) -> str:
        """Run the turn as the daemon's task and wait for its stop reason. When the waiting
        request is cancelled the turn is cancelled too, unless its window went away."""
        done = anyio.Event()
        outcome: list[str | Exception] = []
        link = session.conn
        starter = link.conn if isinstance(link, SessionLink) else None

        async def turn() -> None:
            try:
                outcome.append(await body())
            except Exception as exc:
                outcome.append(exc)
            finally:
                done.set()
                self._turn_ended(session)

        self.start_soon(turn)
        try:
            await done.wait()
        except anyio.get_cancelled_exc_class():
            # `$/cancel_request` of the prompt stops the turn; a window that went away (or
            # whose session another window took over) does not.
            if not isinstance(link, SessionLink) or (
                link.conn is not None and link.conn is starter
            ):
                session.cancel()
            raise
        result = outcome[0]
        if isinstance(result, Exception):
            raise result
        return result

    def _turn_ended(self, session: Session) -> None:
        if self.detached.get(session.id) is session:
            # Nobody is left to show it: the store has it for the next load.
            del self.detached[session.id]
            self._end_grace(session.id)
            session.close()
            if self._runtime is not None:
                self._runtime.session_over(session.id)
            if self._mcp is not None:
                self.start_soon(functools.partial(self.mcp.detach, session.id))
            if self._tg is not None and not self.stopping:
                self.start_soon(self.release_workspaces)
        self.touch()

    def live_cwds(self) -> list[str]:
        """The cwd of every live session, of every window and detached."""
        cwds = [s.cwd for s in self.detached.values()]
        for window in self.windows:
            methods = window.agent.methods
            if methods is not None:
                cwds.extend(s.cwd for s in methods.sessions.values())
        return cwds

    async def release_workspaces(self) -> None:
        """What is kept open per workspace closes for those no live session works in."""
        if self._runtime is not None:
            from acpd.daemon.methods import release_workspaces

            await release_workspaces(self._runtime, self.live_cwds())

    # --- state --------------------------------------------------------------------------------

    def busy(self) -> bool:
        """A window is open, or a turn runs that is not paused waiting for one."""
        if self.windows:
            return True
        for session in self.detached.values():
            link = session.conn
            if not session.idle.is_set() and not (
                isinstance(link, SessionLink) and link.waiting
            ):
                return True
        return False

    async def idle_exit(self) -> None:
        """Stop once nothing has been busy for `[daemon] idle_exit` seconds (0: never)."""
        seconds = 300.0
        if self._runtime is not None:
            seconds = self._runtime.config.daemon.idle_exit
        if seconds <= 0:
            return
        while not self.stopping:
            if self.busy():
                await self._activity.wait()
                continue
            with anyio.move_on_after(seconds):
                await self._activity.wait()
                continue
            if not self.busy():
                log.info("idle for %g s: stopping", seconds)
                await self.stop()
                return

    def status(self) -> dict[str, Any]:
        """What `acpd ps` shows."""
        sessions: list[dict[str, Any]] = []
        for session_id, methods in self.owners.items():
            window = next((w for w in self.windows if w.agent.methods is methods), None)
            session = methods.sessions.get(session_id)
            if session is not None:
                sessions.append(_session_row(session, window.number if window else None))
        for session in self.detached.values():
            sessions.append(_session_row(session, None))
        return {
            "pid": os.getpid(), "socket": self.socket_path, "started": self.started,
            "windows": [
                {"number": w.number, "peerPid": w.peer_pid, "opened": w.opened,
                 "client": w.agent.client_name}
                for w in self.windows if not w.agent.follower
            ],
            "sessions": sessions,
            "tasks": len(asyncio.all_tasks()),  # for soak runs: what the daemon keeps running
        }

    # --- stopping -----------------------------------------------------------------------------

    async def stop(self) -> None:
        """As SIGTERM: refuse new work, end every command, let the turns write their
        results, end the connections, close the store."""
        if self.stopping:
            return
        self.stopping = True
        if self.on_stopping is not None:
            self.on_stopping()
        live = [*self.detached.values()]
        for methods in {id(m): m for m in self.owners.values()}.values():
            methods.stopping = True
            live.extend(methods.sessions.values())
        for session in live:
            session.close()
        with anyio.CancelScope(shield=True):
            if self._mcp is not None:
                await self.mcp.stop_all()
            await self.groups.stop()
            with anyio.move_on_after(STOP_CARD_GRACE):
                for session in live:
                    await session.idle.wait()
            for window in list(self.windows):
                window.conn.stop()
            with anyio.move_on_after(3):
                while self.windows:
                    await self._activity.wait()
            if self._runtime is not None:
                if self._runtime.pipeline.shell is not None:
                    self._runtime.pipeline.shell.close()
                self._runtime.store.close()
        self.stopped.set()


def _session_row(session: Session, window: int | None) -> dict[str, Any]:
    link = session.conn
    paused = isinstance(link, SessionLink) and link.waiting > 0
    state = "idle" if session.idle.is_set() else ("paused" if paused else "running")
    return {
        "sessionId": session.id, "cwd": session.cwd, "title": session.title,
        "state": state, "window": window, "running": list(session.running.values()),
    }


async def _logged(job: Callable[[], Awaitable[None]]) -> None:
    try:
        await job()
    except Exception:
        log.exception("a daemon task failed")
