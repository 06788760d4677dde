"""The per-turn catalog: which tools (and which schemas) one model request carries.

Input: the tools the policy lets the model see (`ToolPipeline.catalog`, already without
denied tools), the conversation, the session's CatalogState. Steps, each only when enabled:

1. A provider without native tool use gets every tool, unfiltered and without TAFC.
2. Filtering needs a query vector for the user's last message (embeddings, or BM25 when no
   embeddings model is set or its endpoint failed); without one every tool is sent. With one,
   the catalog is: always_on + tools named in the message + tools the model already called
   this turn + tools with a description under min_description_words + tools without a vector
   + the top_k others by similarity (+ the `prefers` boost; BM25 keeps only scores above 0).
3. Dependency gates (deps.py) then hold back tools whose `requires` have not completed,
   except always_on, named and already-called ones; if that leaves nothing but always-on
   tools, the full set is sent (deadlock fallback).
4. TAFC adds `_tafc_think` to each sent schema scoring at least the threshold (tafc.py).

Tools keep their catalog order (provider prompt caches key on it). Per-tool work (schema,
score, BM25 document) is cached on the spec object, the BM25 index on the set of tools, and
embeddings by text, so a turn costs a lookup per tool plus the scoring. The per-tool work for
more than OFFLOAD_AT new tools (the first turn, a plugin reload, MCP servers starting) runs on
a worker thread, not on the event loop. Schemas handed out
are shared with the cache: encoders only serialise them. The report of each build is kept
for /status; nothing of the query or of the model's reasoning is logged.
"""

from __future__ import annotations

import fnmatch
import logging
import re
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import anyio.to_thread

from acpd.providers.base import Message, ToolDefinition
from acpd.tools.catalog import tafc
from acpd.tools.catalog.bm25 import BM25Index, tool_document
from acpd.tools.catalog.config import CatalogConfig
from acpd.tools.catalog.deps import DependencyGraph
from acpd.tools.catalog.embeddings import EmbeddingClient, EmbeddingError, cosine
from acpd.tools.catalog.report import CatalogReport, CatalogState

if TYPE_CHECKING:
    from acpd.tools.spec import ToolSpec

log = logging.getLogger("acpd.catalog")

EMBEDDING_PAUSE = 60.0
"""After a failed embeddings request, BM25 is used for this long before trying again."""
MAX_VECTORS = 8192
QUERY_EDGE = 8000
"""A message longer than twice this is read as its first and last QUERY_EDGE characters
(for mentions and scoring): a pasted file must not cost a turn, and requests sit at the
start or the end of a message."""
OFFLOAD_AT = 8
MAX_INDEXES = 8
_MENTION = re.compile(r"\w[\w-]*")
Keys = tuple[str, str]


@dataclass(slots=True)
class _Tool:
    spec: ToolSpec
    schema: dict[str, Any]
    words: int
    complexity: float | None = None
    document: list[str] | None = None
    augmented: dict[str, Any] | None = None


@dataclass(slots=True)
class _Turn:
    """What one build knows about the turn."""

    query: str
    referenced: set[str]
    keys: list[Keys]
    always: set[int] = field(default_factory=set)
    named: set[int] = field(default_factory=set)
    called: set[int] = field(default_factory=set)


def native_tool_use(provider: object) -> bool:
    """Whether the provider takes tools natively: its `supports_tool_use` (a bool or a
    method), True when it has none (every provider acpd had before legacy invocation)."""
    value = getattr(provider, "supports_tool_use", True)
    if callable(value):
        value = value()
    return bool(value)


def last_query(history: Sequence[Message]) -> tuple[str, set[str]]:
    """The last user message's text (see QUERY_EDGE), and the tool names called after it
    (this turn)."""
    called: set[str] = set()
    for message in reversed(history):
        if message.role == "user":
            text = message.text
            if len(text) > 2 * QUERY_EDGE:
                text = f"{text[:QUERY_EDGE]}\n{text[-QUERY_EDGE:]}"
            return text, called
        if message.role == "assistant":
            called.update(c.name for c in message.tool_calls)
    return "", called


class CatalogBuilder:
    def __init__(
        self, config: CatalogConfig | None = None, embedder: EmbeddingClient | None = None,
        *, clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.config = config or CatalogConfig()
        self.embedder = embedder
        self.clock = clock
        deps = self.config.dependencies
        self.graph = DependencyGraph(
            {k: r.requires for k, r in deps.rules.items()},
            {k: r.prefers for k, r in deps.rules.items()},
            boost_per_dep=deps.boost_per_dep, max_total_boost=deps.max_total_boost,
        ) if deps.enabled else None
        self._always = [re.compile(fnmatch.translate(p)) for p in self.config.always_on]
        self._tools: dict[str, _Tool] = {}
        self._indexes: dict[tuple[int, ...], tuple[tuple[ToolSpec, ...], BM25Index]] = {}
        """By the specs' identities; the specs are held so no id is reused while cached."""
        self._vectors: dict[str, list[float]] = {}
        self._query: tuple[str, list[float]] | None = None
        """The last query's vector: the rounds of one turn share their query."""
        self._paused_until = 0.0

    @property
    def active(self) -> bool:
        c = self.config
        return c.enabled or c.tafc.enabled or c.dependencies.enabled

    async def build(
        self, entries: Sequence[tuple[str, ToolSpec]], history: Sequence[Message],
        state: CatalogState, *, native: bool = True,
    ) -> list[ToolDefinition]:
        """The tool definitions for the next model request; the report goes to `state`."""
        names = [name for name, _ in entries]
        known = [self._cached(spec) for _, spec in entries]
        fresh = [spec for (_, spec), tool in zip(entries, known, strict=True) if tool is None]
        # Prepared off the loop, stored on it: another session's build may be reading. This
        # build uses its own lookups, not the cache after the wait: two sessions may hold
        # different tools under one id (two MCP servers both named "github").
        if len(fresh) > OFFLOAD_AT:
            prepared = await anyio.to_thread.run_sync(self._prepare, fresh)
        else:
            prepared = self._prepare(fresh)
        self._tools.update((t.spec.id, t) for t in prepared)
        new = iter(prepared)
        tools = [tool if tool is not None else next(new) for tool in known]
        if len(self._tools) > 2 * len(tools) + 64:  # a reload replaced the specs
            live = {t.spec.id for t in tools}
            self._tools = {k: v for k, v in self._tools.items() if k in live}
        chosen, report = await self._choose(names, tools, history, state, native)
        state.last = report
        return self._definitions(names, tools, chosen, native, report)

    def prewarm(self, specs: Iterable[ToolSpec]) -> None:
        """Prepare the tools known when the daemon loads (blocking: the runtime loads in a
        worker thread, before any build), so that the first turn costs what every later
        turn does. Tools that come later (MCP servers, a plugin reload) are prepared at
        their first build, off the loop."""
        fresh = [spec for spec in specs if self._cached(spec) is None]
        self._tools.update((t.spec.id, t) for t in self._prepare(fresh))

    def _cached(self, spec: ToolSpec) -> _Tool | None:
        cached = self._tools.get(spec.id)
        return cached if cached is not None and cached.spec is spec else None

    def _prepare(self, specs: list[ToolSpec]) -> list[_Tool]:
        """Schema, description length, and (when their feature is on) BM25 document and
        TAFC score of each spec. Touches no shared state (it may run on a thread)."""
        prepared = []
        for spec in specs:
            schema = spec.input_schema()
            tool = _Tool(spec, schema, len(spec.description.split()))
            if self.config.enabled:
                tool.document = tool_document(spec.name, spec.description, schema)
            if self.config.tafc.enabled:
                tool.complexity = tafc.complexity(schema)
            prepared.append(tool)
        return prepared

    async def _choose(
        self, names: list[str], tools: list[_Tool], history: Sequence[Message],
        state: CatalogState, native: bool,
    ) -> tuple[list[int], CatalogReport]:
        everything = list(range(len(tools)))
        if not native:
            return everything, CatalogReport(
                len(tools), len(tools), "the provider has no native tool use: no filtering")
        if not (self.config.enabled or self.graph is not None):
            return everything, CatalogReport(len(tools), len(tools), "filtering off")
        turn = self._turn(names, tools, history)
        report = CatalogReport(len(tools), len(tools), "filtering off")
        chosen = set(everything)
        if self.config.enabled:
            chosen = await self._filter(tools, turn, state, report)
        if self.graph is not None:
            chosen = self._gate(chosen, turn, state, report, everything)
        ordered = sorted(chosen)
        report.sent = len(ordered)
        return ordered, report

    def _turn(self, names: list[str], tools: list[_Tool], history: Sequence[Message]) -> _Turn:
        query, referenced = last_query(history)
        turn = _Turn(query, referenced, [(n, t.spec.id) for n, t in zip(names, tools, strict=True)])
        words = {w.lower() for w in _MENTION.findall(query)}
        for i, (name, tool_id) in enumerate(turn.keys):
            if any(p.match(name) or p.match(tool_id) for p in self._always):
                turn.always.add(i)
            if name.lower() in words or tool_id.lower() in words:
                turn.named.add(i)
            if name in referenced or tool_id in referenced:
                turn.called.add(i)
        return turn

    async def _filter(
        self, tools: list[_Tool], turn: _Turn, state: CatalogState, report: CatalogReport
    ) -> set[int]:
        scores, how, positive_only = await self._scores(turn.query, tools, report)
        if scores is None:
            report.how = how
            return set(range(len(tools)))
        report.how = how
        reason: dict[int, str] = {}
        for group, label in ((turn.always, "always_on"), (turn.named, "named"),
                             (turn.called, "referenced")):
            for i in group:
                reason.setdefault(i, label)
        for i, tool in enumerate(tools):
            if tool.words < self.config.min_description_words:
                reason.setdefault(i, "short")
            elif scores[i] is None:
                reason.setdefault(i, "no_vector")
        ranked = []
        for i, score in enumerate(scores):
            if i in reason or score is None or (positive_only and score <= 0):
                continue
            boost = self.graph.boost(turn.keys[i], state.completed) if self.graph else 0.0
            ranked.append((-(score + boost), i))
        for _, i in sorted(ranked)[: self.config.top_k]:
            reason[i] = "ranked"
        for label in reason.values():
            report.reasons[label] = report.reasons.get(label, 0) + 1
        return set(reason)

    def _gate(
        self, chosen: set[int], turn: _Turn, state: CatalogState, report: CatalogReport,
        everything: list[int],
    ) -> set[int]:
        assert self.graph is not None
        exempt = {turn.keys[i] for i in turn.always | turn.named | turn.called}
        always = {turn.keys[i] for i in turn.always}
        result = self.graph.gate(
            [turn.keys[i] for i in sorted(chosen)], state.completed, exempt, always
        )
        if result.deadlock:
            report.deadlock = True
            return set(everything)
        report.held = result.held
        return {i for i in chosen if turn.keys[i][0] not in result.held}

    async def _scores(
        self, query: str, tools: list[_Tool], report: CatalogReport
    ) -> tuple[list[float | None] | None, str, bool]:
        """Similarity per tool (None: the tool has no vector), how it was scored, and
        whether only positive scores rank; (None, why, _) when there is no query vector."""
        if not query.strip():
            return None, "no query vector (the message has no text): no filtering", False
        if self.embedder is not None and self.clock() >= self._paused_until:
            try:
                return await self._embedding_scores(query, tools), \
                    f"embeddings ({self.embedder.model})", False
            except EmbeddingError as exc:
                self._paused_until = self.clock() + EMBEDDING_PAUSE
                log.warning("tool catalog: embeddings failed (%s); using BM25", exc)
                report.note = f"embeddings failed ({exc}); BM25 used"
        elif self.embedder is not None:
            report.note = "embeddings paused after a failure; BM25 used"
        index = self._index(tools)
        scores = index.score(query)
        if scores is None:
            return None, "no query vector (no word of the message is in any tool): " \
                "no filtering", True
        return [s if index.has_vector(i) else None for i, s in enumerate(scores)], "BM25", True

    def _index(self, tools: list[_Tool]) -> BM25Index:
        key = tuple(id(t.spec) for t in tools)
        cached = self._indexes.get(key)
        if cached is not None:
            return cached[1]
        for tool in tools:
            if tool.document is None:
                tool.document = tool_document(tool.spec.name, tool.spec.description,
                                              tool.schema)
        index = BM25Index([t.document or [] for t in tools])
        if len(self._indexes) >= MAX_INDEXES:
            self._indexes.clear()
        self._indexes[key] = (tuple(t.spec for t in tools), index)
        return index

    async def _embedding_scores(self, query: str, tools: list[_Tool]) -> list[float | None]:
        assert self.embedder is not None
        texts = [f"{t.spec.name}: {t.spec.description}" for t in tools]
        missing = list(dict.fromkeys(t for t in texts if t not in self._vectors))
        known = self._query[1] if self._query is not None and self._query[0] == query else None
        asked = missing if known is not None else [query, *missing]
        vectors = await self.embedder.embed(asked) if asked else []
        if len(self._vectors) + len(missing) > MAX_VECTORS:
            self._vectors.clear()
        self._vectors.update(zip(missing, vectors[len(asked) - len(missing):], strict=True))
        q = known if known is not None else vectors[0]
        self._query = (query, q)
        return [
            cosine(q, self._vectors[text]) if text in self._vectors else None for text in texts
        ]

    def _definitions(
        self, names: list[str], tools: list[_Tool], chosen: list[int], native: bool,
        report: CatalogReport,
    ) -> list[ToolDefinition]:
        think = native and self.config.tafc.enabled
        threshold = self.config.tafc.complexity_threshold
        out: list[ToolDefinition] = []
        augmented: list[str] = []
        for i in chosen:
            tool = tools[i]
            schema = tool.schema
            if think:
                if tool.complexity is None:
                    tool.complexity = tafc.complexity(tool.schema)
                if tool.complexity >= threshold and tafc.can_augment(tool.schema):
                    if tool.augmented is None:
                        tool.augmented = tafc.augment(tool.schema)
                    schema = tool.augmented
                    augmented.append(names[i])
            out.append(ToolDefinition(names[i], tool.spec.description, schema))
        report.tafc = tuple(augmented)
        return out
