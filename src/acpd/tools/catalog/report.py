"""What one turn's catalog was, and the `/status` line that says so.

Kept per session (`CatalogState`, in SessionTools): the tools that completed in this session
(for `requires`/`prefers`; emptied by /clear with the conversation) and the last report.
"""

from __future__ import annotations

from dataclasses import dataclass, field

REASONS = (
    ("always_on", "always on"), ("named", "named in your message"),
    ("referenced", "already called this turn"), ("short", "short description"),
    ("no_vector", "no embedding"), ("ranked", "ranked"),
)


@dataclass(slots=True)
class CatalogReport:
    visible: int
    sent: int
    how: str
    """Why this set: "filtering off", "BM25", "embeddings (model)", "no query vector", ..."""
    reasons: dict[str, int] = field(default_factory=dict)
    held: dict[str, tuple[str, ...]] = field(default_factory=dict)
    deadlock: bool = False
    tafc: tuple[str, ...] = ()
    note: str = ""
    """A degradation worth saying (the embeddings endpoint failed: BM25 was used)."""

    def line(self) -> str:
        parts = [f"Tools: {self.sent} of {self.visible} sent ({self.how}"]
        counted = [f"{self.reasons[k]} {label}" for k, label in REASONS if self.reasons.get(k)]
        if counted:
            parts.append(": " + ", ".join(counted))
        parts.append(")")
        if self.held:
            waits = "; ".join(
                f"{name} waits for {', '.join(missing)}"
                for name, missing in sorted(self.held.items())
            )
            parts.append(f"; held back by requires: {waits}")
        if self.deadlock:
            parts.append("; every candidate waited for a prerequisite, so all were sent")
        if self.tafc:
            parts.append(f"; reasoning field in {', '.join(self.tafc)}")
        if self.note:
            parts.append(f"; {self.note}")
        return "".join(parts)


@dataclass(slots=True)
class CatalogState:
    completed: set[str] = field(default_factory=set)
    """Names and ids of tools that completed in this session (never another session's)."""
    last: CatalogReport | None = None

    def record_completed(self, name: str, tool_id: str) -> None:
        self.completed.update((name, tool_id))

    def clear(self) -> None:
        """/clear: a new conversation owes nothing to the old one's calls."""
        self.completed.clear()
        self.last = None

    def status_line(self) -> str:
        if self.last is None:
            return "Tools: no model request yet in this session"
        return self.last.line()
