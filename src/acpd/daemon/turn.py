"""The agent loop: model call, tool calls through the pipeline, repeat until the model stops.

Limits from the seeds: `max_tool_iterations` model rounds with tool calls, a doom-loop stop
after three rounds with identical tool output, and a stop when the estimated context passes
80 % of the budget. Cancellation propagates out of `run_turn`; the caller answers
`cancelled`.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import uuid
from dataclasses import dataclass, field

import anyio
import anyio.lowlevel

from acpd.daemon import updates
from acpd.daemon.session import Session
from acpd.providers.base import (
    Message,
    ModelRequest,
    Provider,
    ProviderError,
    StopEvent,
    TextDelta,
    ThoughtDelta,
    ToolCallEvent,
    ToolCallRequest,
    ToolDefinition,
    UsageEvent,
)
from acpd.tools.pipeline import CallEnv, ToolPipeline

log = logging.getLogger("acpd.turn")

DOOM_LOOP_REPEATS = 3
CONTEXT_STOP_RATIO = 0.8
CHARS_PER_TOKEN = 4
PERSIST_EVERY = 0.5
"""Streamed text is stored for replay at most this many seconds after the editor was sent it:
a crash mid-reply loses no more than that much of what the editor showed."""
CANCELLED = (
    "[tool_error]\ncategory: Cancelled\nmessage: the user cancelled the turn\nretryable: false"
)

DEFAULT_SYSTEM_PROMPT = (
    "You are acpd, a coding agent working inside the user's editor. The workspace is {cwd}. "
    "Use the tools to read, search and run commands; every call is shown to the user and may "
    "need their approval. Prefer small, verifiable steps, and say plainly what you ran and "
    "what it showed."
)


@dataclass(slots=True)
class LoopLimits:
    max_tool_iterations: int = 10
    context_budget_tokens: int = 0
    max_tokens: int = 4096
    system_prompt: str | None = None


@dataclass(slots=True)
class ModelReply:
    text: str = ""
    calls: list[ToolCallRequest] = field(default_factory=list)
    stop: str = "end_turn"
    input_tokens: int = 0
    output_tokens: int = 0


async def run_turn(
    session: Session, provider: Provider, pipeline: ToolPipeline, env: CallEnv,
    limits: LoopLimits,
) -> str:
    """Run one prompt to its end; returns the ACP stop reason."""
    budget = limits.context_budget_tokens or provider.context_window
    # replace, not format: a user's prompt may hold braces of its own (JSON, code).
    system = (limits.system_prompt or DEFAULT_SYSTEM_PROMPT).replace("{cwd}", session.cwd)
    recent: list[str] = []
    rounds = 0
    while True:
        # Built per request: the mode, the rules and the anomaly blocks may have changed.
        tools = [
            ToolDefinition(name, s.description, s.input_schema())
            for name, s in pipeline.catalog(env.mode, env.state)
        ]
        request = ModelRequest(system, list(session.history), tools, limits.max_tokens)
        if estimate_tokens(request) > CONTEXT_STOP_RATIO * budget:
            await session.say(
                f"\n[acpd] Stopped: the conversation is past {CONTEXT_STOP_RATIO:.0%} of the "
                f"context budget ({budget} tokens). Use /clear to start afresh."
            )
            return "max_tokens"
        try:
            reply = await call_model(session, provider, request)
        except ProviderError as exc:
            await session.say(f"\n[acpd] The model call failed: {exc}")
            return "end_turn"
        if reply.input_tokens or reply.output_tokens:
            used = reply.input_tokens + reply.output_tokens
            await session.send(updates.usage(used, budget))
        if not reply.calls:
            return {"max_tokens": "max_tokens", "refusal": "refusal"}.get(reply.stop, "end_turn")
        if rounds >= limits.max_tool_iterations:
            await session.say(
                f"\n[acpd] Stopped after {limits.max_tool_iterations} tool rounds "
                "(max_tool_iterations). Ask me to continue if you want more."
            )
            return "max_turn_requests"
        rounds += 1
        outputs: list[str] = []
        try:
            for call in reply.calls:
                outputs.append(await run_call(session, pipeline, env, call))
        finally:
            # Providers reject a history with unanswered tool calls; a cancelled round must
            # still leave one result per call.
            for call in reply.calls[len(outputs) :]:
                session.remember(Message("tool", CANCELLED, tool_call_id=call.id, is_error=True))
        recent = [*recent[-(DOOM_LOOP_REPEATS - 1) :], "\x1e".join(outputs)]
        if len(recent) == DOOM_LOOP_REPEATS and len(set(recent)) == 1:
            await session.say(
                f"\n[acpd] Stopped: the last {DOOM_LOOP_REPEATS} tool rounds gave identical "
                "output, which looks like a loop."
            )
            return "end_turn"


async def call_model(session: Session, provider: Provider, request: ModelRequest) -> ModelReply:
    """Stream one model call to the editor and record the assistant message, even when the
    call is cancelled halfway (what was shown stays in the history). The text shown is also
    stored for replay as it streams (see PERSIST_EVERY), not only when the reply ends."""
    reply = ModelReply()
    text = StreamedText(session)
    try:
        # aclosing: a cancelled turn must close the HTTP stream now, not at garbage collection.
        async with contextlib.aclosing(provider.stream(request)) as events:
            async for event in events:
                # Sends to the editor need not yield, so check here: a cancelled turn stops
                # at the next event even when the provider streams from memory.
                await anyio.lowlevel.checkpoint_if_cancelled()
                if isinstance(event, TextDelta):
                    await session.send(updates.message_chunk("agent_message_chunk", event.text))
                    text.add(event.text)
                elif isinstance(event, ThoughtDelta):
                    await session.send(updates.message_chunk("agent_thought_chunk", event.text))
                elif isinstance(event, ToolCallEvent):
                    reply.calls.append(event.call)
                elif isinstance(event, UsageEvent):
                    reply.input_tokens += event.input_tokens
                    reply.output_tokens += event.output_tokens
                elif isinstance(event, StopEvent):
                    reply.stop = event.reason
    finally:
        reply.text = text.finish()
        if reply.text or reply.calls:
            remember_reply(session, Message("assistant", reply.text, list(reply.calls)))
    return reply


def remember_reply(session: Session, message: Message) -> None:
    """Keep the reply as the model sent it for this process (the next request needs the real
    arguments), but store its tool calls with credentials replaced: a token the model put in
    a command must not rest in the session database (the card and the audit hide it too)."""
    session.history.append(message)
    stored = message.to_dict()
    for call in stored["tool_calls"]:
        call["arguments"] = updates.redact_value(call["arguments"])
        call["raw_arguments"] = updates.redact_text(call["raw_arguments"])
        if call["invalid_json"] is not None:
            call["invalid_json"] = updates.redact_text(call["invalid_json"])
    session.store.append_message(session.id, stored)


class StreamedText:
    """A reply's text as it streams: stored for replay by a timer, PERSIST_EVERY after the
    first chunk not yet stored (one update for all the chunks since the last), and whole
    at the end. A timer rather than the next chunk: a model that stalls mid-reply must not
    hold back what the editor already shows."""

    def __init__(self, session: Session) -> None:
        self.session = session
        self.parts: list[str] = []
        self.stored = 0
        self._timer: asyncio.TimerHandle | None = None

    def add(self, text: str) -> None:
        self.parts.append(text)
        if self._timer is None:
            self._timer = asyncio.get_running_loop().call_later(PERSIST_EVERY, self.store)

    def store(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        new = "".join(self.parts[self.stored :])
        self.stored = len(self.parts)
        if new:
            self.session.store.append_update(
                self.session.id, updates.message_chunk("agent_message_chunk", new)
            )

    def finish(self) -> str:
        """Store what is left; the whole text."""
        self.store()
        return "".join(self.parts)


async def run_call(
    session: Session, pipeline: ToolPipeline, env: CallEnv, call: ToolCallRequest
) -> str:
    tool_call_id = f"tc_{uuid.uuid4().hex[:20]}"
    result = await pipeline.run(
        tool_call_id, call.name, call.arguments, env, invalid_json=call.invalid_json
    )
    if result.name == "update_plan" and result.error is None and call.arguments:
        await session.send(updates.plan(call.arguments.get("entries", [])), persist=True)
    text = result.text if not result.skipped else "(skipped: only reasoning fields were sent)"
    session.remember(
        Message("tool", text, tool_call_id=call.id, is_error=result.error is not None)
    )
    return text


def estimate_tokens(request: ModelRequest) -> int:
    chars = len(request.system)
    for message in request.messages:
        chars += len(message.text)
        chars += sum(len(c.raw_arguments) or len(str(c.arguments)) for c in message.tool_calls)
    chars += sum(len(t.description) + len(str(t.parameters)) for t in request.tools)
    return chars // CHARS_PER_TOKEN
