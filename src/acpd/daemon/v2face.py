"""The ACP v2 draft face: the same session methods as v1, behind v2 method names and shapes.

`initialize` negotiates the version (daemon/handshake.py); once it is 2, the agent routes
every request here and installs `V2Renderer` (protocol/acp_v2.py) on the connection, so
the core (methods, sessions, the turn loop, the tool pipeline) runs exactly as for v1 and
only the wire differs. What v2 changes here:

- `session/prompt` answers as soon as the prompt is accepted, with the `messageId` of the
  user message (echoed first as `user_message`), and the turn runs after the answer. The
  session reports `running`, then `idle` with the stop reason when the turn ends (`error`,
  with the error, if it failed). A prompt for a session whose turn has not ended is refused
  before it is accepted, as in v1.
- `session/resume` with `replayFrom: {type: "start"}` is v1's `session/load`; every resume
  sends the session's state (`idle`) after any replay and before its answer.
- `session/load`, `session/set_mode`, `authenticate` and `logout` do not exist (-32601);
  neither do `auth/*` (acpd offers no auth methods), `tool_call/cancel` and
  `terminal/cancel` (no tool call or terminal advertises them).
- The client's file system and terminal are never used: the handshake gives a v2 client no
  `fs`/`terminal` capability and the renderer refuses those methods on the wire.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any

from acpd.daemon.errors import SessionBusy, SessionNotFound, to_rpc_error
from acpd.daemon.rpc import Connection, Reply
from acpd.protocol import acp_v2, acp_v2_diff
from acpd.protocol.errors import ErrorCode, RpcError, invalid_params, method_not_found

if TYPE_CHECKING:
    from acpd.daemon.methods import SessionMethods

PASSED = frozenset({"session/list", "session/cancel"})


class V2Face:
    """One per v2 connection. `methods()` loads (once) and returns the session methods."""

    def __init__(
        self, conn: Connection, methods: Callable[[], Awaitable[SessionMethods]]
    ) -> None:
        self.conn = conn
        self._methods = methods
        self._loaded: SessionMethods | None = None
        self._turns: set[str] = set()
        """Sessions with an accepted prompt whose turn has not ended."""
        self._cancelled: set[str] = set()
        """Sessions whose accepted turn got a `session/cancel`: it ends `cancelled`, also
        when the cancel came before the turn began (the core ignores a cancel for an idle
        session) or when stopping raised."""
        self.rendering = acp_v2.V2Renderer(self._cwd_of, self._config_options_of)
        self.renderer = OffLoopDiffs(self.rendering)
        """What the connection calls: `rendering`, with large diffs made in a thread."""

    async def on_request(self, method: str, params: Any) -> Any:
        try:
            return await self._dispatch(method, params)
        except SessionNotFound as exc:  # v2 names the session in the error's data
            session_id = params.get("sessionId") if isinstance(params, dict) else None
            data = {"sessionId": session_id} if isinstance(session_id, str) else None
            raise RpcError(ErrorCode.RESOURCE_NOT_FOUND, str(exc), data) from None

    async def _dispatch(self, method: str, params: Any) -> Any:
        handler = {
            "session/new": self.new_session,
            "session/resume": self.resume_session,
            "session/prompt": self.prompt,
            "session/set_config_option": self.set_config_option,
            "session/close": self.close_session,
            "session/delete": self.close_session,
        }.get(method)
        if handler is not None:
            return await handler(method, params)
        if method in PASSED:
            methods = await self.methods()
            return await methods.table[method](params)
        raise method_not_found(method)

    async def methods(self) -> SessionMethods:
        self._loaded = await self._methods()
        return self._loaded

    # --- sessions ----------------------------------------------------------------------------

    async def new_session(self, method: str, params: Any) -> Any:
        methods = await self.methods()
        reply = await methods.table[method](acp_v2.session_params_to_v1(params))
        return _map_result(reply, acp_v2.session_result)

    async def resume_session(self, method: str, params: Any) -> Any:
        try:
            replay = acp_v2.resume_replays(params)
        except ValueError as exc:
            raise invalid_params(str(exc)) from None
        methods = await self.methods()
        v1_method = "session/load" if replay else "session/resume"
        v1_params = acp_v2.session_params_to_v1(params)
        if isinstance(v1_params, dict):
            v1_params = {k: v for k, v in v1_params.items() if k != "replayFrom"}
        reply = await methods.table[v1_method](v1_params)
        session_id = str(params.get("sessionId"))  # the handler validated it
        self.rendering.forget(session_id)  # a reopened session starts new messages
        # After any replay, before the answer: the session's state (a busy one was refused).
        await self.conn.notify("session/update", acp_v2.state_params(session_id, "idle"))
        return _map_result(reply, acp_v2.session_result)

    async def set_config_option(self, method: str, params: Any) -> Any:
        methods = await self.methods()
        result = await methods.table[method](acp_v2.config_value_to_v1(params))
        return {**result, "configOptions": acp_v2.config_options(result["configOptions"])}

    async def close_session(self, method: str, params: Any) -> Any:
        methods = await self.methods()
        result = await methods.table[method](params)
        if isinstance(params, dict):
            self.rendering.forget(str(params.get("sessionId")))
        return result

    # --- prompts -----------------------------------------------------------------------------

    async def prompt(self, method: str, params: Any) -> Reply:
        """Accept the prompt (answer with its message id), then run the turn."""
        from acpd.protocol import acp

        methods = await self.methods()
        req = acp.PromptRequest.model_validate(params)
        session = methods.sessions.get(req.session_id)
        if session is None:
            raise SessionNotFound(req.session_id)
        if req.session_id in self._turns or not session.idle.is_set():
            raise SessionBusy("that session is running a prompt; wait for idle or cancel it")
        self._turns.add(req.session_id)
        message_id = acp_v2.new_message_id()
        try:
            await self.conn.notify("session/update", {"sessionId": req.session_id, "update": {
                "sessionUpdate": "user_message", "messageId": message_id, "content": req.prompt,
            }})
            await self.conn.notify("session/update", acp_v2.state_params(req.session_id, "running"))
        except BaseException:
            self._turns.discard(req.session_id)
            raise

        async def turn() -> None:
            await self._run_turn(methods, method, params, req.session_id)

        return Reply({"messageId": message_id}, turn)

    def cancel(self, params: Any) -> None:
        """`session/cancel` (the core cancels a running turn; this covers the moment between
        a prompt's acceptance and the start of its turn)."""
        session_id = params.get("sessionId") if isinstance(params, dict) else None
        methods = self._loaded
        session = methods.sessions.get(str(session_id)) if methods else None
        if session is not None and session.id in self._turns:
            self._cancelled.add(session.id)

    async def _run_turn(
        self, methods: SessionMethods, method: str, params: Any, session_id: str
    ) -> None:
        extra: dict[str, Any] = {}
        try:
            try:
                if session_id in self._cancelled:  # before the turn began: it does not
                    result = {"stopReason": "cancelled"}
                else:
                    result = await methods.table[method](params)
                # As in v1: once a cancel was asked for, the turn ends "cancelled".
                cancelled = session_id in self._cancelled
                extra["stopReason"] = "cancelled" if cancelled else result["stopReason"]
            except Exception as exc:  # the prompt was accepted: the failure goes in the state
                if session_id in self._cancelled:
                    extra["stopReason"] = "cancelled"  # v2: never `error` for a cancel
                else:
                    error = to_rpc_error(exc)
                    extra["stopReason"] = "error"
                    extra["error"] = {"code": int(error.code), "message": error.message}
            # Idle is queued before the session takes a new prompt: a prompt accepted in
            # between would see its `running` before this turn's `idle`.
            await self.conn.notify(
                "session/update", acp_v2.state_params(session_id, "idle", **extra)
            )
        finally:
            self._turns.discard(session_id)
            self._cancelled.discard(session_id)

    # --- what the renderer asks ------------------------------------------------------------

    def _cwd_of(self, session_id: str) -> str | None:
        session = self._loaded.sessions.get(session_id) if self._loaded else None
        return session.cwd if session is not None else None

    def _config_options_of(self, session_id: str) -> list[Any] | None:
        methods = self._loaded
        session = methods.sessions.get(session_id) if methods else None
        if methods is None or session is None:
            return None
        options: list[Any] = methods._state(session)["configOptions"]
        return options


class OffLoopDiffs:
    """The connection's renderer: `V2Renderer`, but a large diff's patch (a card's content,
    or a permission's tool call) is made in a worker thread first, not on the event loop."""

    def __init__(self, inner: acp_v2.V2Renderer) -> None:
        self.inner = inner

    async def notification(self, method: str, params: Any) -> acp_v2.Outgoing:
        if method == "session/update":
            params = await _patched(params, "update")
        return self.inner.notification(method, params)

    async def request(self, method: str, params: Any) -> tuple[acp_v2.Outgoing, Any]:
        if method == "session/request_permission":
            params = await _patched(params, "toolCall")
        return self.inner.request(method, params)


async def _patched(params: Any, key: str) -> Any:
    """`params` with the large v1 diffs under `params[key].content` already in v2 form."""
    holder = params.get(key) if isinstance(params, dict) else None
    if not isinstance(holder, dict):
        return params
    content = holder.get("content")
    if not isinstance(content, list) or not any(acp_v2_diff.heavy_diff(c) for c in content):
        return params
    import anyio.to_thread

    rendered = [
        await anyio.to_thread.run_sync(acp_v2_diff.diff_content, item)
        if acp_v2_diff.heavy_diff(item) else item
        for item in content
    ]
    return {**params, key: {**holder, "content": rendered}}


def _map_result(reply: Any, convert: Callable[[Any], Any]) -> Any:
    if isinstance(reply, Reply):
        return Reply(convert(reply.result), reply.then)
    return convert(reply)
