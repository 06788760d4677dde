"""A session's cache of tool results (`[tools.result_cache]`).

Only read-only tools are cached, and never the seeds' non-cacheable set (bash, write,
memory_save, memory_search, scheduler, compress_context, anything from MCP) even if one of them
were declared read-only. Keys are (tool id, digest of the canonical arguments). Entries expire
after `ttl` seconds, lazily on lookup. What a cached read returns can go stale when the files
change, so the cache is emptied whenever something could have changed them: any successful
call that is not read-only, the start of every prompt (the user may have edited between
turns) and `/clear`.
"""

from __future__ import annotations

import hashlib
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import orjson

from acpd.tools.spec import Effect, ToolOutput, ToolSpec

NON_CACHEABLE = frozenset(
    {
        "bash", "shell", "write", "memory_save", "memory_search", "scheduler", "compress_context",
        # Stored outputs are read from SQLite on demand (the seed's JIT retrieval): caching
        # them would keep up to 50 KB a page resident for the whole session.
        "read_overflow",
        # Each question is the user's to answer now: a cached answer would be made up.
        "ask_user",
    }
)
MAX_ENTRIES = 512


def cacheable(spec: ToolSpec) -> bool:
    return (
        spec.effect is Effect.READ_ONLY
        and spec.name not in NON_CACHEABLE
        and spec.id.removeprefix("core__") not in NON_CACHEABLE
        and not spec.id.startswith(("mcp__", "mcp_"))
    )


def cache_key(spec: ToolSpec, args: dict[str, Any]) -> str:
    """Raises TypeError for arguments that are not JSON (validated arguments always are)."""
    canonical = orjson.dumps(args, option=orjson.OPT_SORT_KEYS)
    return f"{spec.id}:{hashlib.sha256(canonical).hexdigest()[:32]}"


@dataclass(slots=True)
class _Entry:
    output: ToolOutput
    expires: float | None


class ResultCache:
    def __init__(
        self, enabled: bool = True, ttl: float | None = 300.0,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.enabled = enabled
        self.ttl = ttl if ttl else None
        self.clock = clock
        self.hits = 0
        self.misses = 0
        self._entries: dict[str, _Entry] = {}

    def get(self, key: str) -> ToolOutput | None:
        if not self.enabled:
            return None
        entry = self._entries.get(key)
        if entry is not None and entry.expires is not None and entry.expires <= self.clock():
            del self._entries[key]
            entry = None
        if entry is None:
            self.misses += 1
            return None
        self.hits += 1
        return entry.output

    def put(self, key: str, output: ToolOutput) -> None:
        if not self.enabled or output.failed:
            return
        if len(self._entries) >= MAX_ENTRIES:
            self._entries.pop(next(iter(self._entries)))
        expires = None if self.ttl is None else self.clock() + self.ttl
        self._entries[key] = _Entry(output, expires)

    def clear(self) -> None:
        """Drop every entry and reset the counters (on /clear, as the seeds ask)."""
        self._entries.clear()
        self.hits = self.misses = 0

    def invalidate(self) -> None:
        """Something may have changed the files: drop the entries, keep the counters."""
        self._entries.clear()

    def __len__(self) -> int:
        return len(self._entries)
