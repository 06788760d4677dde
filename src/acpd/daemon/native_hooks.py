"""Where the daemon meets the native tools (tools/native): a session lent to them, and the
moments they need.

  - a prompt starts (daemon/prompting.py) or a session is loaded (daemon/methods.py): the
    session is live for the scheduler and compress_context, and its due tasks are said;
  - a model turn starts: the session's Knowledge block (compress_context's summaries) is
    appended to the system prompt;
  - a session is deleted: its tasks and Knowledge entries are deleted too.
Each hook does nothing when the toolkit has no native tools.
"""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING, Any

from acpd.daemon import updates
from acpd.protocol.session_state import SessionState

if TYPE_CHECKING:
    from acpd.daemon.agent import Runtime
    from acpd.daemon.session import Session
    from acpd.daemon.turn import LoopLimits
    from acpd.providers.base import Message, Provider


class SessionHandle:
    """A daemon session as the native tools see it (tools/native/live.py)."""

    def __init__(self, session: Session, rt: Runtime) -> None:
        self._session = session
        self._rt = rt

    @property
    def id(self) -> str:
        return self._session.id

    @property
    def history(self) -> list[Message]:
        return self._session.history

    def provider(self) -> Provider | None:
        """`[tools.native.compress] model` when set (made afresh for each use), else the
        session's. Raises what the provider factory raises for a bad model."""
        model = self._rt.config.tools.native.compress.model
        if model:
            from acpd.providers.factory import make_provider

            return make_provider(model, self._rt.config)
        return self._session.provider if self._session.model is not None else None

    def in_turn(self) -> bool:
        return not self._session.idle.is_set()

    def closed(self) -> bool:
        return self._session.machine.state is SessionState.CLOSED

    async def say(self, text: str) -> None:
        await self._session.say(text)

    def drop_oldest(self, count: int) -> None:
        """The first `count` messages leave the history and the store. The stored rows are
        kept as they were stored (tool arguments already redacted) when they line up with
        the history; otherwise the history is stored again, redacted the same way."""
        session = self._session
        stored = session.store.messages(session.id)
        lined_up = len(stored) == len(session.history)
        del session.history[:count]
        kept = stored[count:] if lined_up else [stored_form(m) for m in session.history]
        session.store.replace_messages(session.id, kept)


def stored_form(message: Message) -> dict[str, Any]:
    """A history message as daemon/turn.py stores it: credentials in tool calls replaced."""
    stored = message.to_dict()
    for call in stored["tool_calls"]:
        call["arguments"] = updates.redact_value(call["arguments"])
        call["raw_arguments"] = updates.redact_text(call["raw_arguments"])
        if call["invalid_json"] is not None:
            call["invalid_json"] = updates.redact_text(call["invalid_json"])
    return stored


async def session_live(session: Session, rt: Runtime) -> None:
    """A prompt starts, or the session was loaded: live now, its due tasks said."""
    native = rt.toolkit.native
    if native is not None:
        await native.session_live(SessionHandle(session, rt))


async def session_deleted(session_id: str, rt: Runtime) -> None:
    """`session/delete`: its scheduler tasks and Knowledge entries go with it."""
    native = rt.toolkit.native
    if native is not None:
        await native.forget(session_id)


async def loop_limits(session: Session, rt: Runtime) -> LoopLimits:
    """The loop's limits, the system prompt carrying the session's Knowledge block."""
    native = rt.toolkit.native
    block = await native.knowledge_block(session.id) if native is not None else ""
    if not block:
        return rt.limits
    from acpd.daemon.turn import DEFAULT_SYSTEM_PROMPT

    return replace(rt.limits, system_prompt=(rt.limits.system_prompt or DEFAULT_SYSTEM_PROMPT)
                   + block)
