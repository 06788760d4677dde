"""`session/load` and `session/resume` in the shared daemon: taking a session whose turn
runs on (its window went away, or another window hands it over with `_meta` consent).

The order a re-attaching window sees: the stored updates it has not seen (all of them for
`load`, those after its last window left for `resume`), then the live updates that were
held back meanwhile, then the editor requests the turn paused on (remote/link.py).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from acpd.daemon.terminal_stream import replay_mode
from acpd.daemon.terminal_wire import replay
from acpd.remote.link import SessionLink

if TYPE_CHECKING:
    from acpd.daemon.methods import SessionMethods
    from acpd.daemon.session import Session
    from acpd.protocol import acp


def claim(
    methods: SessionMethods, req: acp.LoadSessionRequest | acp.ResumeSessionRequest
) -> Session | None:
    """The session's running turn, now this connection's (see Hub.claim); None: open it
    from the store. Raises SessionBusy when another window drives it."""
    hub = methods.hub
    if hub is None:
        return None
    acpd_meta = (req.meta or {}).get("acpd")
    take_over = isinstance(acpd_meta, dict) and acpd_meta.get("takeOver") is True
    running = hub.claim(methods, req.session_id, take_over)
    if running is not None:
        link = running.conn
        assert isinstance(link, SessionLink)
        link.hold(methods.conn, methods.client)  # live updates wait for the replay
        methods.sessions[running.id] = running
        hub.own(methods, running)
    return running


def missed(methods: SessionMethods, session_id: str) -> int | None:
    """How many stored updates the session's last window had seen (None: no window left
    it mid-turn); taken once."""
    return methods.hub.missed.pop(session_id, None) if methods.hub is not None else None


async def replay_and_release(
    methods: SessionMethods, session: Session, start: int | None
) -> None:
    """Replay the stored updates from `start` (None: none) to this window, then let the
    held live ones and the paused editor requests through."""
    link = session.conn
    assert isinstance(link, SessionLink)
    try:
        if start is not None:
            shown = replay_mode(methods.client())
            for update in replay(methods.rt.store.updates(session.id)[start:], shown):
                await methods.conn.notify(
                    "session/update", {"sessionId": session.id, "update": update}
                )
    finally:
        await link.release()
