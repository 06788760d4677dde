"""A session's way to its editor in the shared daemon: the window that owns it, for now.

A session talks to "its editor" through a `SessionLink`, never through a connection
directly, so that it can outlive the window that opened it:

- Attached: notifications and requests go to the owning connection (and notifications
  also to the read-only followers of `acpd attach`).
- Detached (the window closed mid-turn): notifications are dropped (what must survive was
  stored by the session before it sent it); a request that needs an editor (a permission
  prompt, `fs/*`, `terminal/create`, a form) waits until a window re-attaches: the turn
  pauses there. A request that was in flight when the window went away is asked again of
  the next window.
- Requests about an editor terminal (`terminal/output`, `kill`, `wait_for_exit`,
  `release`) go to the window that created it, wherever the session is now, and fail at
  once when that window is gone: the terminal went away with it.
- Re-attaching holds live notifications back while the stored updates are replayed
  (`hold` ... `release`), so that the new window sees them in order and none twice; the
  paused requests go out after the replay. A take-over withdraws the questions and reads
  still open in the window that loses the session (`$/cancel_request` there) and asks
  them again in the one that takes it (`WITHDRAWN`).
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import anyio

from acpd.daemon.errors import PeerError
from acpd.daemon.rpc import Connection
from acpd.protocol.errors import ErrorCode, RpcError

if TYPE_CHECKING:
    from acpd.daemon.handshake import ClientCaps

log = logging.getLogger("acpd.remote")

ASKED_AGAIN = frozenset({
    "session/request_permission", "fs/read_text_file", "fs/write_text_file", "terminal/create",
    "elicitation/create",
})
"""Requests that wait for the next window when their own went away: they name nothing
that belonged to the old window."""
WITHDRAWN = frozenset({"session/request_permission", "elicitation/create", "fs/read_text_file"})
"""Requests a take-over withdraws from the window that loses the session and asks again:
a question for the user, or a read. A write or a `terminal/create` may have been carried
out already: it finishes where it started (its terminal's follow-ups go there too)."""
FOLLOW_UPS = frozenset({
    "terminal/output", "terminal/wait_for_exit", "terminal/kill", "terminal/release",
})
"""Requests about one editor terminal: they go to the window that created it."""


class SessionLink:
    """`client`: the capabilities of the owning window (as its `initialize` negotiated)."""

    def __init__(self, conn: Connection, client: Callable[[], ClientCaps]) -> None:
        self._conn: Connection | None = conn
        self._client = client
        self._ready = anyio.Event()
        self._ready.set()
        self._held: list[tuple[str, Any]] | None = None
        self.followers: list[Connection] = []
        """`acpd attach` connections: they get every notification, and ask nothing."""
        self.waiting = 0
        """Requests paused for want of an editor (the turn is paused)."""
        self._terminals: dict[str, Connection] = {}
        """The window that runs each editor terminal (its follow-ups go there)."""
        self._asking: dict[anyio.CancelScope, str] = {}
        """The requests waiting for a window's answer, by the scope that can withdraw them."""

    @property
    def conn(self) -> Connection | None:
        return self._conn if self._alive(self._conn) else None

    @staticmethod
    def _alive(conn: Connection | None) -> bool:
        return conn is not None and not conn.input_closed and not conn.closed.is_set()

    @property
    def input_closed(self) -> bool:
        # A detached session pauses instead: from the turn's side the editor is not gone.
        return False

    # --- ownership ----------------------------------------------------------------------------

    def detach(self) -> None:
        self._conn = None
        if self._ready.is_set():
            self._ready = anyio.Event()

    def hold(self, conn: Connection, client: Callable[[], ClientCaps]) -> None:
        """Attach to `conn` and queue live notifications until `release()` (replay first).
        Requests wait for the release too; those still open in a window that is alive but
        loses the session (a take-over) are withdrawn there and asked again here."""
        previous = self._conn
        self._conn, self._client = conn, client
        self._held = []
        if self._ready.is_set():
            self._ready = anyio.Event()
        if previous is not None and previous is not conn:
            for scope, method in list(self._asking.items()):
                if method in WITHDRAWN:
                    scope.cancel()

    async def release(self) -> None:
        held, self._held = self._held or [], None
        for method, params in held:
            await self._send(method, params)
        self._ready.set()

    async def to_followers(self, method: str, params: Any) -> None:
        """What the owning window knows already (its own prompt), for the followers."""
        for follower in list(self.followers):
            if not follower.closed.is_set() and not follower.input_closed:
                await follower.notify(method, params)

    # --- EditorPeer ---------------------------------------------------------------------------

    async def notify(self, method: str, params: Any) -> None:
        if self._held is not None:
            self._held.append((method, params))
            return
        await self._send(method, params)

    async def _send(self, method: str, params: Any) -> None:
        conn = self.conn
        if conn is not None:
            await conn.notify(method, params)
        for follower in list(self.followers):
            if follower.closed.is_set() or follower.input_closed:
                self.followers.remove(follower)
                continue
            await follower.notify(method, params)

    async def request(
        self, method: str, params: Any, *, timeout: float | None = 30.0  # noqa: ASYNC109
    ) -> Any:
        """Ask the owning window; raises PeerError as Connection.request does, and at once
        for a follow-up about a terminal of a window that went away."""
        if method in FOLLOW_UPS:
            return await self._terminal_request(method, params, timeout)
        while True:
            conn = await self._editor(method)
            self._check_offered(method)
            with anyio.CancelScope() as scope:
                self._asking[scope] = method
                try:
                    answer = await conn.request(method, params, timeout=timeout)
                    if method == "terminal/create" and isinstance(answer, dict):
                        self._terminals[str(answer.get("terminalId"))] = conn
                    return answer
                except PeerError:
                    if self._alive(conn) or method not in ASKED_AGAIN:
                        raise
                    log.info("the window went away during %s: asking the next one", method)
                finally:
                    del self._asking[scope]
            # Withdrawn (the session was taken over): ask the window that has it now.

    def _check_offered(self, method: str) -> None:
        """A turn re-attached by a window that does not offer what the turn's first window
        did: ACP forbids asking for it. No terminal: PeerError without an answer, so the
        command runs locally under the same policy (daemon/editor.py's fallback); no file
        system: the editor's refusal, which the tool reports."""
        caps = self._client()
        if method == "terminal/create" and not caps.terminal:
            raise PeerError(method, None, "this editor window offers no terminal")
        offered = {"fs/read_text_file": caps.read_text_file,
                   "fs/write_text_file": caps.write_text_file}
        if not offered.get(method, True):
            raise PeerError(method, RpcError(
                ErrorCode.METHOD_NOT_FOUND, f"this editor window does not offer {method}"))

    async def _terminal_request(
        self, method: str, params: Any, timeout: float | None  # noqa: ASYNC109
    ) -> Any:
        """A terminal's follow-up goes to the window that runs that terminal, wherever the
        session is now; it fails at once when that window is gone."""
        terminal_id = params.get("terminalId") if isinstance(params, dict) else None
        conn = self._terminals.get(str(terminal_id))
        if method == "terminal/release":
            self._terminals.pop(str(terminal_id), None)
        if conn is None or not self._alive(conn):
            raise PeerError(method, None, "the editor window that ran this went away")
        return await conn.request(method, params, timeout=timeout)

    async def _editor(self, method: str) -> Connection:
        conn = self.conn
        if conn is not None and self._ready.is_set():
            return conn
        if method not in ASKED_AGAIN:
            raise PeerError(method, None, "no editor window has this session")
        if conn is None and self._ready.is_set():
            self._ready = anyio.Event()  # it went away without a detach (yet)
        self.waiting += 1
        try:
            while True:
                await self._ready.wait()
                conn = self.conn
                if conn is not None:
                    return conn
                self._ready = anyio.Event()
        finally:
            self.waiting -= 1
