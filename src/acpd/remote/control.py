"""The daemon's `_acpd/*` control methods, for `acpd ps`, `acpd attach` and `acpd daemon stop`.

They are asked over the same socket, by the same user (SO_PEERCRED), after `initialize`:

- `_acpd/ps`: the daemon, its windows, its live sessions (state: idle, running, paused;
  the tool calls running).
- `_acpd/attach {sessionId}`: replay the session's stored updates to this connection, then
  send it every live update of the session too. Read-only: it never gets a request, and
  cannot prompt or cancel (it owns no session).
- `_acpd/stop`: answered, then the daemon stops as on SIGTERM.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from acpd.daemon.errors import SessionNotFound
from acpd.daemon.rpc import Reply
from acpd.protocol.errors import invalid_params, method_not_found
from acpd.remote.link import SessionLink

if TYPE_CHECKING:
    from acpd.daemon.agent import AcpAgent
    from acpd.remote.hub import Hub


async def control_request(agent: AcpAgent, hub: Hub, method: str, params: Any) -> Any:
    agent.follower = True  # a control connection, not an editor window (`acpd ps` says so)
    if method == "_acpd/ps":
        return hub.status()
    if method == "_acpd/stop":
        hub.start_soon(hub.stop)
        return {}
    if method == "_acpd/attach":
        session_id = params.get("sessionId") if isinstance(params, dict) else None
        if not isinstance(session_id, str):
            raise invalid_params("_acpd/attach needs a sessionId")
        return await _attach(agent, hub, session_id)
    raise method_not_found(method)


async def _attach(agent: AcpAgent, hub: Hub, session_id: str) -> Reply:
    from acpd.daemon.terminal_wire import replay

    rt = await hub.runtime()
    if rt.store.get(session_id) is None:
        raise SessionNotFound(session_id)
    stored = rt.store.updates(session_id)
    live = hub.detached.get(session_id)
    owner = hub.owners.get(session_id)
    if live is None and owner is not None:
        live = owner.sessions.get(session_id)
    if live is not None and isinstance(live.conn, SessionLink):
        live.conn.followers.append(agent.conn)
    conn = agent.conn

    async def then() -> None:
        for update in replay(stored, "plain"):
            await conn.notify("session/update", {"sessionId": session_id, "update": update})

    return Reply({"live": live is not None and not live.idle.is_set()}, then)
