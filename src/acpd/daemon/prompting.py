"""One `session/prompt`: the turn's lifecycle around the loop or a slash command."""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any

import anyio

from acpd.daemon import direct, native_hooks, updates
from acpd.daemon.errors import SessionBusy
from acpd.daemon.images import prompt_images
from acpd.daemon.session_info import new_message_id, send_info, title_from_prompt
from acpd.protocol.session_state import IllegalTransition
from acpd.providers.base import ImagePart, Message

if TYPE_CHECKING:
    from acpd.daemon.agent import Runtime
    from acpd.daemon.session import Session
    from acpd.tools.pipeline import CallEnv

log = logging.getLogger("acpd.prompt")


async def run_prompt(
    session: Session, blocks: list[dict[str, Any]], rt: Runtime, env: CallEnv
) -> str:
    """Run one prompt and return its ACP stop reason; "cancelled" after `session/cancel`.
    Raises RpcError (-32602) for images the model cannot take, before anything runs."""
    agent = rt.config.agent
    images = prompt_images(blocks, session.model, agent.image_models, agent.max_image_bytes)
    try:
        session.begin_turn()
    except IllegalTransition as exc:
        raise SessionBusy(f"cannot prompt: {exc}") from None
    text = prompt_text(blocks, images_apart=images is not None)
    stop = "end_turn"
    try:
        # Stored before the first await: a window that leaves once the turn runs has seen
        # its own prompt, and a window resuming the session must not be shown it as missed.
        _record_prompt(session, text, images or [])
        with anyio.CancelScope() as scope:
            session.turn_scope = scope
            if session.cancelling:
                scope.cancel()
            # The user may have edited files since the last turn: no cached result survives.
            env.state.cache.invalidate()
            if env.state.extra is not None:  # MCP servers start at the first prompt
                await env.state.extra.prepare()
            await native_hooks.session_live(session, rt)  # its due scheduler tasks said
            stop = await _dispatch(session, text, rt, env, images or [])
        # Once a cancel was asked for, the answer is "cancelled" even if the turn reached its
        # end before it noticed (ACP: never report a cancelled turn as finished).
        if scope.cancel_called or session.cancelling:
            stop = "cancelled"
    finally:
        session.end_turn()
    await send_info(session)  # the session changed: its new time, before the answer
    return stop


def _record_prompt(session: Session, text: str, images: list[ImagePart]) -> None:
    message_id = new_message_id()
    user_chunk = updates.message_chunk("user_message_chunk", text, message_id)
    session.store.append_update(session.id, user_chunk)
    for image in images:  # replayed as sent, under the same message id
        session.store.append_update(session.id, image_chunk(image, message_id))


async def _dispatch(
    session: Session, text: str, rt: Runtime, env: CallEnv, images: list[ImagePart]
) -> str:
    if session.title is None:
        session.title = title_from_prompt(text)
        if session.title is not None:
            rt.store.update_meta(session.id, title=session.title)
            await send_info(session)
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

    session.remember(Message("user", text, images=images))
    limits = await native_hooks.loop_limits(session, rt)  # with the Knowledge block
    return await run_turn(session, session.provider, rt.pipeline, env, limits)


def _provider(model: str, rt: Runtime) -> Any:
    from acpd.providers.factory import make_provider

    return make_provider(model, rt.config)


def prompt_text(blocks: list[dict[str, Any]], *, images_apart: bool = False) -> str:
    """Flatten ACP content blocks into the text the model reads; images are left to the
    provider when `images_apart` (the model takes them), else noted as omitted."""
    parts: list[str] = []
    for block in blocks:
        kind = block.get("type")
        if kind == "image" and images_apart:
            continue  # checked and sent beside the text (daemon/images.py)
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


def image_chunk(image: ImagePart, message_id: str) -> dict[str, Any]:
    content = {"type": "image", "mimeType": image.mime_type, "data": image.data}
    return {"sessionUpdate": "user_message_chunk", "content": content, "messageId": message_id}
