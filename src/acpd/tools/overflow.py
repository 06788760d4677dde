"""Output overflow: a tool output too long for the model's context is stored whole and the
model gets its head and tail with an opaque `overflow:<uuid>` reference (seed "Output
Overflow"); `read_overflow` fetches the stored text on demand.

The tools package never sees the storage itself: the daemon injects one session's view of it
(`OverflowAccess`), so a tool has no way to name another session's entries, and the backend
query needs both the session id and the entry id on top of that.
"""

from __future__ import annotations

import re
import uuid
from dataclasses import dataclass
from typing import Protocol

PREFIX = "overflow:"
DEFAULT_THRESHOLD = 50_000
DEFAULT_MAX_BYTES = 10 * 1024 * 1024
DEFAULT_RETENTION_DAYS = 7.0

_UUID4 = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}")


class OverflowBackend(Protocol):
    """Where entries live (the daemon's session store)."""

    def save_overflow(self, session_id: str, entry_id: str, content: str) -> None:
        """Store one entry; raises sqlite3.Error / OSError when it cannot."""
        ...

    def load_overflow(self, session_id: str, entry_id: str) -> str | None:
        """The entry when it exists *and* belongs to `session_id`, else None."""
        ...


class OverflowAccess(Protocol):
    """One session's entries: what a tool is lent."""

    def save(self, entry_id: str, content: str) -> None: ...

    def load(self, entry_id: str) -> str | None: ...


@dataclass(frozen=True, slots=True)
class SessionOverflow:
    backend: OverflowBackend
    session_id: str

    def save(self, entry_id: str, content: str) -> None:
        self.backend.save_overflow(self.session_id, entry_id, content)

    def load(self, entry_id: str) -> str | None:
        return self.backend.load_overflow(self.session_id, entry_id)


@dataclass(frozen=True, slots=True)
class OverflowSettings:
    """`[tools.overflow]`."""

    threshold: int = DEFAULT_THRESHOLD
    """Characters above which an output is stored and cut for the model."""
    max_bytes: int = DEFAULT_MAX_BYTES
    """Largest stored entry in UTF-8 bytes (0: unlimited); a longer one keeps its head."""
    retention_days: float = DEFAULT_RETENTION_DAYS


def new_entry_id() -> str:
    return str(uuid.uuid4())


def reference(entry_id: str) -> str:
    return PREFIX + entry_id


def parse_reference(value: str) -> str | None:
    """The entry id in `overflow:<uuid>` or a bare uuid; None for anything else.

    Only the canonical lowercase uuid4 form is accepted (what `new_entry_id` makes), so a
    reference is never a path, a pattern or a SQL fragment.
    """
    text = value.strip()
    if text.startswith(PREFIX):
        text = text[len(PREFIX) :]
    text = text.lower()
    return text if len(text) == 36 and _UUID4.fullmatch(text) else None


def cap_bytes(text: str, max_bytes: int) -> str:
    """`text` cut to at most `max_bytes` UTF-8 bytes (0: unlimited), with a note when cut."""
    if max_bytes <= 0 or len(text) <= max_bytes // 4:
        return text  # at most 4 bytes a character: certainly within the cap
    data = text.encode("utf-8", "surrogatepass")
    if len(data) <= max_bytes:
        return text
    kept = data[:max_bytes].decode("utf-8", "ignore")
    return f"{kept}\n[overflow entry cut at {max_bytes} bytes of {len(data)}]"


def head_and_tail(text: str, budget: int, ref: str) -> str:
    """About `budget` characters of `text`: its head and its tail on line boundaries, with a
    marker between them naming the reference to read the rest."""
    half = max(1, budget // 2)
    head_end = text.rfind("\n", 0, half)
    head_end = half if head_end < half // 2 else head_end + 1
    tail_start = text.find("\n", len(text) - half)
    tail_start = len(text) - half if tail_start < 0 else tail_start + 1
    if tail_start <= head_end:
        return text
    omitted = tail_start - head_end
    marker = (
        f"[... {omitted} characters omitted; the whole output ({len(text)} characters) is "
        f"stored as {ref}: call read_overflow with that reference (and offset/limit) to read "
        "it ...]\n"
    )
    return text[:head_end] + marker + text[tail_start:]
