"""`max_tool_calls_per_session`: a budget of tool calls per session.

A call counts once, when it is first attempted (the runner's automatic retries are free, as
in the seeds); a call refused before that point (unknown tool, reasoning fields only) does not
count. An exhausted budget never drops a call silently: the call fails with `quota_blocked`.
"""

from __future__ import annotations

from dataclasses import dataclass

QUOTA_BLOCKED = "quota_blocked"


@dataclass(slots=True)
class Quota:
    limit: int | None = None
    """None: unlimited."""
    used: int = 0

    def take(self) -> bool:
        """Count one call; False (and nothing counted) when the budget is spent."""
        if self.limit is not None and self.used >= self.limit:
            return False
        self.used += 1
        return True

    @property
    def remaining(self) -> int | None:
        return None if self.limit is None else max(0, self.limit - self.used)
