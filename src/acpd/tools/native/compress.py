"""compress_context: the older part of the conversation, summarised by the session's own
model and appended to the session's Knowledge block.

What happens on a call:
  1. the history before the last `keep_recent_turns` user turns is the part to compress (the
     cut is always at a user message, so a tool call never loses its result); fewer than
     `min_messages` such messages: nothing to do, and the call says so;
  2. that part is rendered as a transcript (the newest `max_transcript_chars`) and sent to the
     session's model (or `[tools.native.compress] model`) with no tools, within `budget_secs`;
  3. only when a non-empty summary came back: it is stored as a Knowledge entry (with its
     strategy, `autonomous`: the agent asked, and the number of messages it replaces), then
     the compressed messages leave the history (in memory and in the session store).
On any failure (provider error, timeout, empty summary, a reply that asks for tools, the
history changed meanwhile, the store refusing the entry) nothing is removed.

Never recursive: a session that is compressing refuses a second compress_context until the
first is done, and the summariser is given no tools (a reply asking for one fails the call).

The Knowledge block is added to the system prompt at each prompt (daemon/native_hooks.py),
oldest entry first, capped at `max_knowledge_chars` (the oldest entries give way). Within the
turn that compressed, the summary is also in the call's result, so the model keeps it.
"""

from __future__ import annotations

import contextlib
import sqlite3
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

import anyio
import orjson
from pydantic import BaseModel, ConfigDict, Field

from acpd.tools.errors import ErrorCategory, ToolError
from acpd.tools.native.config import CompressConfig
from acpd.tools.native.db import DbTimeout, run_db
from acpd.tools.native.live import LiveSessions
from acpd.tools.spec import Effect, ToolContext, ToolOutput, ToolSpec, redaction

if TYPE_CHECKING:
    from acpd.providers.base import Message, Provider

KNOWLEDGE_SCHEMA = """
CREATE TABLE IF NOT EXISTS knowledge (
    seq INTEGER PRIMARY KEY AUTOINCREMENT,
    session_id TEXT NOT NULL,
    summary TEXT NOT NULL,
    strategy TEXT NOT NULL CHECK (strategy IN ('autonomous', 'manual', 'triggered')),
    messages INTEGER NOT NULL,
    created_at REAL NOT NULL
);
CREATE INDEX IF NOT EXISTS knowledge_by_session ON knowledge (session_id, seq);
"""
BUDGET = 5.0
STRATEGY = "autonomous"
SUMMARY_PROMPT = (
    "You compress the earlier part of a coding session between a user and an AI agent. "
    "Write a dense summary the agent can work from: the user's goals and constraints, "
    "decisions made, files and commands that matter, what was found, and what is still open. "
    "Keep exact names, paths and numbers. Do not invent anything. Answer with the summary only."
)
TOOL_RESULT_CHARS = 2_000
ARGUMENT_CHARS = 500


class KnowledgeStore:
    def __init__(self, path: Path) -> None:
        self.path = path

    async def append(self, session_id: str, summary: str, strategy: str, messages: int) -> None:
        def work(db: sqlite3.Connection) -> None:
            db.execute(
                "INSERT INTO knowledge (session_id, summary, strategy, messages, created_at) "
                "VALUES (?, ?, ?, ?, ?)", (session_id, summary, strategy, messages, time.time()),
            )

        await run_db(self.path, KNOWLEDGE_SCHEMA, BUDGET, work)

    async def forget(self, session_id: str) -> None:
        def work(db: sqlite3.Connection) -> None:
            db.execute("DELETE FROM knowledge WHERE session_id = ?", (session_id,))

        await run_db(self.path, KNOWLEDGE_SCHEMA, BUDGET, work)

    async def entries(self, session_id: str) -> list[tuple[str, str, int]]:
        """(summary, strategy, messages) of the session's entries, oldest first."""
        def work(db: sqlite3.Connection) -> list[tuple[str, str, int]]:
            rows = db.execute(
                "SELECT summary, strategy, messages FROM knowledge WHERE session_id = ? "
                "ORDER BY seq", (session_id,),
            ).fetchall()
            return [(str(r[0]), str(r[1]), int(r[2])) for r in rows]

        return await run_db(self.path, KNOWLEDGE_SCHEMA, BUDGET, work)

    async def block(self, session_id: str, cap: int) -> str:
        """The Knowledge block for the system prompt ("" without entries or on a store
        fault: a prompt is never refused for it)."""
        try:
            entries = await self.entries(session_id)
        except (DbTimeout, sqlite3.Error, OSError):
            return ""
        return knowledge_block([summary for summary, _, _ in entries], cap)


def knowledge_block(summaries: list[str], cap: int) -> str:
    if not summaries:
        return ""
    kept: list[str] = []
    size = 0
    for summary in reversed(summaries):  # the newest first, until the cap
        if kept and size + len(summary) > cap:
            break
        kept.append(summary[-cap:])
        size += len(summary)
    dropped = len(summaries) - len(kept)
    note = f"({dropped} older summaries dropped for space)\n\n" if dropped else ""
    body = "\n\n---\n\n".join(reversed(kept))
    return (
        "\n\n## Knowledge\nSummaries of earlier parts of this conversation (compress_context), "
        f"oldest first:\n\n{note}{body}"
    )


def cut_point(history: list[Message], keep_turns: int) -> int:
    """Index of the first message kept: the start of the last `keep_turns` user turns."""
    users = [i for i, m in enumerate(history) if m.role == "user"]
    return users[-keep_turns] if len(users) >= keep_turns else 0


def transcript(messages: list[Message], max_chars: int) -> str:
    parts: list[str] = []
    for m in messages:
        if m.role == "tool":
            text = m.text if len(m.text) <= TOOL_RESULT_CHARS else (
                m.text[:TOOL_RESULT_CHARS] + f" [... {len(m.text)} characters in all]")
            parts.append(f"TOOL RESULT{' (error)' if m.is_error else ''}: {text}")
            continue
        line = f"{m.role.upper()}: {m.text}"
        for call in m.tool_calls:
            args = orjson.dumps(call.arguments).decode() if call.arguments is not None else "?"
            line += f"\n[called {call.name} {args[:ARGUMENT_CHARS]}]"
        parts.append(line)
    text = "\n\n".join(parts)
    if len(text) > max_chars:
        text = "[... the oldest part is left out ...]\n" + text[-max_chars:]
    return text


async def summarise(provider: Provider, text: str, settings: CompressConfig, focus: str) -> str:
    """The provider's summary of `text`. Raises ToolError (the reason) on any failure."""
    from acpd.providers.base import (
        Message,
        ModelRequest,
        TextDelta,
        ToolCallEvent,
    )

    ask = f"Summarise this conversation{f' (focus: {focus})' if focus else ''}:\n\n{text}"
    request = ModelRequest(SUMMARY_PROMPT, [Message("user", ask)], [], settings.max_summary_tokens)
    chunks: list[str] = []
    try:
        with anyio.fail_after(settings.budget_secs):
            async with contextlib.aclosing(provider.stream(request)) as events:
                async for event in events:
                    if isinstance(event, ToolCallEvent):
                        raise _failed("the summariser asked to call a tool (compress_context "
                                      "is never recursive)")
                    if isinstance(event, TextDelta):
                        chunks.append(event.text)
    except TimeoutError:
        raise _failed(f"the model did not answer within {settings.budget_secs:g} s") from None
    except ToolError:
        raise
    except Exception as exc:  # a provider error of any kind: the history stays as it was
        raise _failed(f"the model call failed: {str(exc)[:300]}") from None
    summary = "".join(chunks).strip()
    if not summary:
        raise _failed("the model returned an empty summary")
    return summary


def _failed(reason: str) -> ToolError:
    return ToolError(ErrorCategory.PERMANENT_FAILURE,
                     f"compression failed: {reason}; the conversation is unchanged")


class CompressParams(BaseModel):
    model_config = ConfigDict(extra="forbid")

    focus: str | None = Field(
        None, max_length=500, description="What the summary should keep above all (optional)"
    )


class Compressor:
    def __init__(self, knowledge: KnowledgeStore | None, live: LiveSessions,
                 settings: CompressConfig) -> None:
        self.knowledge = knowledge
        self.live = live
        self.settings = settings
        self.running: set[str] = set()
        """Sessions compressing now: a second call is refused (never recursive)."""

    async def run(self, args: CompressParams, ctx: ToolContext) -> ToolOutput:
        session = self.live.get(ctx.session_id)
        if session is None or self.knowledge is None:
            raise ToolError(ErrorCategory.PERMANENT_FAILURE, "compress_context works only in "
                            "an editor session with a data directory")
        if session.id in self.running:
            raise ToolError(ErrorCategory.POLICY_BLOCKED, "a compress_context is already "
                            "running for this session (it is never recursive)",
                            suggestion="Wait for it to finish; do not call it again now.")
        try:
            provider = session.provider()
        except Exception as exc:  # a bad [tools.native.compress] model: said, nothing lost
            raise _failed(f"the summarising model cannot be used: {str(exc)[:300]}") from None
        if provider is None:
            raise ToolError(ErrorCategory.PERMANENT_FAILURE,
                            "the session has no model to summarise with (direct mode)")
        history = session.history
        cut = cut_point(history, self.settings.keep_recent_turns)
        if cut < self.settings.min_messages:
            return ToolOutput(f"nothing to compress: {cut} messages precede the last "
                              f"{self.settings.keep_recent_turns} turn(s)",
                              raw={"compressed": 0, "strategy": STRATEGY})
        older = history[:cut]
        self.running.add(session.id)
        try:
            text = transcript(older, self.settings.max_transcript_chars)
            summary = await summarise(provider, text, self.settings, args.focus or "")
        finally:
            self.running.discard(session.id)
        if len(history) < cut or any(a is not b for a, b in zip(older, history, strict=False)):
            raise _failed("the history changed while it was being summarised")
        try:
            await self.knowledge.append(session.id, summary, STRATEGY, cut)
        except (DbTimeout, sqlite3.Error, OSError) as exc:
            raise _failed(f"the Knowledge entry could not be stored ({exc})") from None
        session.drop_oldest(cut)
        return ToolOutput(
            f"Compressed {cut} earlier messages into the Knowledge block (strategy: "
            f"{STRATEGY}); they are no longer in the conversation. The summary:\n\n{summary}",
            raw=_raw(cut, summary),
        )


def _raw(cut: int, summary: str) -> dict[str, Any]:
    return {"compressed": cut, "strategy": STRATEGY, "summary_chars": len(summary)}


def make_compress_spec(compressor: Compressor) -> ToolSpec:
    return ToolSpec(
        id="core__compress_context", name="compress_context",
        description="Summarise the older part of this conversation into your Knowledge block "
        "and drop it from the context, to make room. The most recent turn stays as it is.",
        params=CompressParams, effect=Effect.STATE_CHANGE, kind="think", workspace_files=False,
        execute=compressor.run, title=lambda a: "Compress the conversation",
        redaction=redaction(("focus",), ("compressed", "strategy", "summary_chars")),
        retry_safe=False,
    )
