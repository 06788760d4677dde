"""The agent loop: model call, tool calls through the pipeline, repeat until the model stops.

Limits from the seeds: `max_tool_iterations` model rounds with tool calls, a doom-loop stop
after three rounds with identical tool output, and a stop when the estimated context passes
80 % of the budget. Cancellation propagates out of `run_turn`; the caller answers
`cancelled`.

One session must not stall the others: a reply runs at most `max_tool_calls_per_reply` tool
calls (the rest are dropped: kept out of the history, the model told in the last result, the
user in one line), the loop yields to the event loop between calls, and reading a reply
yields at least every YIELD_EVERY seconds even when the provider streams from memory.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
import uuid
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import anyio
import anyio.lowlevel

from acpd.daemon import updates
from acpd.daemon.session import Session
from acpd.daemon.session_info import new_message_id
from acpd.daemon.usage import report_usage
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
from acpd.providers.legacy import results_message, take_calls, text_request
from acpd.tools.pipeline import CallEnv, ToolPipeline

if TYPE_CHECKING:
    from acpd.daemon.config import Config, PriceConfig
    from acpd.tools.catalog import CatalogBuilder
    from acpd.tools.spec import ToolSpec

log = logging.getLogger("acpd.turn")

DOOM_LOOP_REPEATS = 3
CONTEXT_STOP_RATIO = 0.8
CHARS_PER_TOKEN = 4
IMAGE_CHARS = 1600 * CHARS_PER_TOKEN
"""An image counts as ~1600 tokens (Anthropic's figure for a 1.15-megapixel image)."""
PERSIST_EVERY = 0.5
"""Streamed text is stored for replay at most this many seconds after the editor was sent it:
a crash mid-reply loses no more than that much of what the editor showed."""
YIELD_EVERY = 0.002
"""Longest stretch (seconds) a reply's stream is read without letting other tasks run."""
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
    max_tool_calls_per_reply: int = 64
    prices: Mapping[str, PriceConfig] = field(default_factory=dict)
    """`[agent.prices]`: the cost of a call whose provider reports none (daemon/usage.py)."""
    catalog: CatalogBuilder | None = None
    """`[agent.catalog]` (tools/catalog): None sends every visible tool, unchanged."""


@dataclass(slots=True)
class ModelReply:
    text: str = ""
    calls: list[ToolCallRequest] = field(default_factory=list)
    dropped: int = 0
    """Tool calls past max_tool_calls_per_reply: counted, not kept."""
    stop: str = "end_turn"
    input_tokens: int = 0
    output_tokens: int = 0
    usage: list[UsageEvent] = field(default_factory=list)
    """As the provider reported it (daemon/usage.py prices it)."""


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
    # Gates and legacy text invocation (tools/gates, providers/legacy.py): the policy judge
    # asks the session's model; a model without tool use calls tools from its text.
    env.judge = provider
    legacy = pipeline.gates.legacy_for(provider.name)
    pipeline.gates.begin_turn(session.id, session.history)
    while True:
        # Built per request: the mode, the rules, the policy (a reload may have turned the
        # network off) and the anomaly blocks may have changed.
        network = await pipeline.network_allowed(env.cwd, env.session_id)
        tools = await build_catalog(
            limits, pipeline.catalog(env.mode, env.state, network=network), session, provider,
            env, legacy=legacy,
        )
        request = ModelRequest(system, list(session.history), tools, limits.max_tokens)
        if legacy:
            request = text_request(request)
        if estimate_tokens(request) > CONTEXT_STOP_RATIO * budget:
            await session.say(
                f"\n[acpd] Stopped: the conversation is past {CONTEXT_STOP_RATIO:.0%} of the "
                f"context budget ({budget} tokens). Use /clear to start afresh."
            )
            return "max_tokens"
        try:
            reply = await call_model(
                session, provider, request, limits.max_tool_calls_per_reply
            )
        except ProviderError as exc:
            await session.say(f"\n[acpd] The model call failed: {exc}")
            return "end_turn"
        if reply.usage:
            await report_usage(session, reply.usage, budget, limits.prices)
        # A reply with native calls is answered natively even from a legacy model.
        textual = legacy and not reply.calls
        unrun = take_calls(reply, limits.max_tool_calls_per_reply) if textual else []
        if not reply.calls and not unrun:
            return {"max_tokens": "max_tokens", "refusal": "refusal"}.get(reply.stop, "end_turn")
        if rounds >= limits.max_tool_iterations:
            await session.say(
                f"\n[acpd] Stopped after {limits.max_tool_iterations} tool rounds "
                "(max_tool_iterations). Ask me to continue if you want more."
            )
            return "max_turn_requests"
        rounds += 1
        outputs: list[str] = []
        note = await _announce_dropped(session, reply, limits.max_tool_calls_per_reply)
        try:
            for n, call in enumerate(reply.calls):
                last = n == len(reply.calls) - 1
                outputs.append(await run_call(
                    session, pipeline, env, call, note if last else "", remember=not textual
                ))
                # Refused calls never wait on anything: without this, a reply full of them
                # would hold every other session (and the policy watcher) until it is done.
                await anyio.lowlevel.checkpoint()
        finally:
            # Providers reject a history with unanswered tool calls; a cancelled round must
            # still leave one result per call.
            if textual:  # the results go back as text, in one message
                done = [*outputs, *[CANCELLED] * (len(reply.calls) - len(outputs))]
                text = results_message(list(zip(reply.calls, done, strict=True)), unrun)
                session.remember(Message("user", text))
            for call in reply.calls[len(outputs) :] if not textual else []:
                session.remember(Message("tool", CANCELLED, tool_call_id=call.id, is_error=True))
        recent = [*recent[-(DOOM_LOOP_REPEATS - 1) :], "\x1e".join(outputs)]
        if len(recent) == DOOM_LOOP_REPEATS and len(set(recent)) == 1:
            await session.say(
                f"\n[acpd] Stopped: the last {DOOM_LOOP_REPEATS} tool rounds gave identical "
                "output, which looks like a loop."
            )
            return "end_turn"


def catalog_builder(config: Config) -> CatalogBuilder:
    """The daemon's catalog builder for `[agent.catalog]` (embeddings default to the
    `[providers.openai]` endpoint and key variable)."""
    from acpd.tools.catalog import make_builder

    openai = config.providers.openai
    return make_builder(
        config.agent.catalog, openai_base_url=openai.base_url, openai_key_env=openai.api_key_env
    )


async def build_catalog(
    limits: LoopLimits, entries: list[tuple[str, ToolSpec]], session: Session,
    provider: Provider, env: CallEnv, *, legacy: bool = False,
) -> list[ToolDefinition]:
    """The tools this model request carries (tools/catalog/builder.py says which and why).
    A legacy model (no native tool use) is described every tool, without TAFC fields."""
    if limits.catalog is None:
        return [ToolDefinition(name, s.description, s.input_schema()) for name, s in entries]
    from acpd.tools.catalog import native_tool_use

    return await limits.catalog.build(
        entries, session.history, env.state.catalog, native=native_tool_use(provider) and not legacy
    )


async def _announce_dropped(session: Session, reply: ModelReply, cap: int) -> str:
    """Tell the user, once, that calls were dropped; the note for the model's last result."""
    if not reply.dropped:
        return ""
    total = len(reply.calls) + reply.dropped
    await session.say(
        f"\n[acpd] The model asked for {total} tool calls in one reply; the first {cap} run "
        f"and the other {reply.dropped} were dropped (max_tool_calls_per_reply = {cap})."
    )
    return (
        f"\n[acpd] Your reply asked for {total} tool calls; only the first {cap} were run "
        f"(max_tool_calls_per_reply). The other {reply.dropped} were dropped, not run: "
        "if you still need them, ask again in later replies, a few at a time."
    )


async def call_model(
    session: Session, provider: Provider, request: ModelRequest, max_calls: int = 1 << 30
) -> ModelReply:
    """Stream one model call to the editor and record the assistant message, even when the
    call is cancelled halfway (what was shown stays in the history). The text shown is also
    stored for replay as it streams (see PERSIST_EVERY), not only when the reply ends. Tool
    calls past `max_calls` are counted in `dropped` and kept nowhere."""
    reply = ModelReply()
    message_id = new_message_id()  # the reply's text and thoughts are one message
    text = StreamedText(session, message_id)
    clock = time.perf_counter
    yielded = clock()
    try:
        # aclosing: a cancelled turn must close the HTTP stream now, not at garbage collection.
        async with contextlib.aclosing(provider.stream(request)) as events:
            async for event in events:
                # Sends to the editor need not yield, and a provider that streams from memory
                # never does: let the other tasks run now and then (a cancel lands there too).
                if clock() - yielded > YIELD_EVERY:
                    await anyio.lowlevel.checkpoint()
                    yielded = clock()
                else:
                    await anyio.lowlevel.checkpoint_if_cancelled()
                if isinstance(event, TextDelta):
                    await session.send(
                        updates.message_chunk("agent_message_chunk", event.text, message_id)
                    )
                    text.add(event.text)
                elif isinstance(event, ThoughtDelta):
                    await session.send(
                        updates.message_chunk("agent_thought_chunk", event.text, message_id)
                    )
                elif isinstance(event, ToolCallEvent):
                    if len(reply.calls) < max_calls:
                        reply.calls.append(event.call)
                    else:
                        reply.dropped += 1
                elif isinstance(event, UsageEvent):
                    reply.input_tokens += event.input_tokens
                    reply.output_tokens += event.output_tokens
                    reply.usage.append(event)
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
    from acpd.tools.catalog.tafc import strip_stored

    session.history.append(message)
    stored = message.to_dict()
    for call in stored["tool_calls"]:
        strip_stored(call)  # the model's reasoning field is never stored (TAFC)
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

    def __init__(self, session: Session, message_id: str | None = None) -> None:
        self.session = session
        self.message_id = message_id
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
                self.session.id,
                updates.message_chunk("agent_message_chunk", new, self.message_id),
            )

    def finish(self) -> str:
        """Store what is left; the whole text."""
        self.store()
        return "".join(self.parts)


async def run_call(
    session: Session, pipeline: ToolPipeline, env: CallEnv, call: ToolCallRequest,
    note: str = "", *, remember: bool = True,
) -> str:
    tool_call_id = f"tc_{uuid.uuid4().hex[:20]}"
    result = await pipeline.run(
        tool_call_id, call.name, call.arguments, env, invalid_json=call.invalid_json
    )
    if result.error is None and not result.skipped:  # for the dependency gates
        spec = pipeline.registry.resolve(result.name) or (
            env.state.extra.resolve(result.name) if env.state.extra is not None else None
        )
        env.state.catalog.record_completed(result.name, spec.id if spec else result.name)
    if result.name == "update_plan" and result.error is None and not result.skipped \
            and call.arguments:  # a skipped call (only reasoning fields) is no plan
        await session.send(updates.plan(call.arguments.get("entries", [])), persist=True)
    text = result.text if not result.skipped else "(skipped: only reasoning fields were sent)"
    text += note
    if remember:  # a legacy round remembers its results as one text message
        session.remember(
            Message("tool", text, tool_call_id=call.id, is_error=result.error is not None)
        )
    return text


def estimate_tokens(request: ModelRequest) -> int:
    chars = len(request.system)
    for message in request.messages:
        chars += len(message.text) + IMAGE_CHARS * len(message.images)
        chars += sum(len(c.raw_arguments) or len(str(c.arguments)) for c in message.tool_calls)
    chars += sum(len(t.description) + len(str(t.parameters)) for t in request.tools)
    return chars // CHARS_PER_TOKEN
