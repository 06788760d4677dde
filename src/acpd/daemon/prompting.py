"""One `session/prompt`: the turn's lifecycle around the loop or a slash command."""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any

import anyio

from acpd.daemon import direct, updates
from acpd.daemon.errors import SessionBusy
from acpd.protocol.session_state import IllegalTransition
from acpd.providers.base import Message

if TYPE_CHECKING:
    from acpd.daemon.agent import Runtime
    from acpd.daemon.session import Session
    from acpd.tools.pipeline import CallEnv

log = logging.getLogger("acpd.prompt")

TITLE_CHARS = 80


async def run_prompt(
    session: Session, blocks: list[dict[str, Any]], rt: Runtime, env: CallEnv
) -> str:
    """Run one prompt and return its ACP stop reason; "cancelled" after `session/cancel`."""
    try:
        session.begin_turn()
    except IllegalTransition as exc:
        raise SessionBusy(f"cannot prompt: {exc}") from None
    stop = "end_turn"
    try:
        with anyio.CancelScope() as scope:
            session.turn_scope = scope
            if session.cancelling:
                scope.cancel()
            # The user may have edited files since the last turn: no cached result survives.
            env.state.cache.invalidate()
            if env.state.extra is not None:  # MCP servers start at the first prompt
                await env.state.extra.prepare()
            stop = await _dispatch(session, prompt_text(blocks), rt, env)
        # Once a cancel was asked for, the answer is "cancelled" even if the turn reached its
        # end before it noticed (ACP: never report a cancelled turn as finished).
        if scope.cancel_called or session.cancelling:
            stop = "cancelled"
    finally:
        session.end_turn()
    return stop


async def _dispatch(session: Session, text: str, rt: Runtime, env: CallEnv) -> str:
    session.store.append_update(session.id, updates.message_chunk("user_message_chunk", text))
    if session.title is None and text.strip():
        session.title = text.strip().splitlines()[0][:TITLE_CHARS]
        rt.store.update_meta(session.id, title=session.title)
    stripped = text.lstrip()
    if stripped.startswith("/"):
        await direct.run_slash(stripped, session, rt.pipeline, env, session.model)
        return "end_turn"
    if session.model is None:
        await session.say(direct.NO_MODEL)
        return "end_turn"
    if session.provider is None:
        try:
            session.provider = _provider(session.model, rt)
        except Exception as exc:
            await session.say(f"[acpd] Cannot use model {session.model}: {exc}")
            return "end_turn"
    from acpd.daemon.turn import run_turn

    session.remember(Message("user", text))
    return await run_turn(session, session.provider, rt.pipeline, env, rt.limits)


def _provider(model: str, rt: Runtime) -> Any:
    from acpd.providers.factory import make_provider

    return make_provider(model, rt.config)


def prompt_text(blocks: list[dict[str, Any]]) -> str:
    """Flatten ACP content blocks into the text the model reads."""
    parts: list[str] = []
    for block in blocks:
        kind = block.get("type")
        if kind == "text" and isinstance(block.get("text"), str):
            parts.append(block["text"])
        elif kind == "resource_link":
            parts.append(f"[resource: {block.get('name') or ''} {block.get('uri') or ''}]".strip())
        elif kind == "resource" and isinstance(block.get("resource"), dict):
            resource = block["resource"]
            uri = resource.get("uri", "")
            if isinstance(resource.get("text"), str):
                parts.append(f"<resource uri={uri!r}>\n{resource['text']}\n</resource>")
            else:
                parts.append(f"[binary resource {uri} omitted]")
        else:
            parts.append(f"[{kind} content omitted: not supported]")
    return "\n".join(parts)
