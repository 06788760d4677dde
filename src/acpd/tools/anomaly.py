"""Failure-rate anomaly detection per session and tool (`[tools.anomaly]`).

Each tool keeps a sliding window of its last `window_size` outcomes in the session. Once the
window holds at least `min_calls` outcomes and the failed fraction exceeds
`failure_threshold`, the tool is blocked for the session (when `auto_block`): it disappears
from the catalog and calls to it fail with PolicyBlocked, saying how to lift the block. The
block is reversible: `/unblock <tool>` in the session (or a new session) clears the tool's
window and the block.

A failure is a call that ran, or tried to, and broke: an execution error, a timeout, invalid
arguments. Policy refusals, user rejections and cancellations are decisions, not failures,
and a command exiting non-zero is a result (failing tests must not get bash blocked).
"""

from __future__ import annotations

import logging
from collections import deque
from dataclasses import dataclass, field

log = logging.getLogger("acpd.anomaly")


@dataclass(frozen=True, slots=True)
class AnomalySettings:
    enabled: bool = True
    window_size: int = 20
    failure_threshold: float = 0.7
    min_calls: int = 10
    auto_block: bool = True


@dataclass(slots=True)
class AnomalyDetector:
    settings: AnomalySettings = field(default_factory=AnomalySettings)
    windows: dict[str, deque[bool]] = field(default_factory=dict)
    blocked: dict[str, str] = field(default_factory=dict)
    """Tool id -> why it was blocked."""

    def record(self, tool: str, failed: bool) -> str | None:
        """Note one outcome; returns the reason when this outcome blocks the tool."""
        s = self.settings
        if not s.enabled:
            return None
        window = self.windows.get(tool)
        if window is None:
            window = self.windows[tool] = deque(maxlen=s.window_size)
        window.append(failed)
        if len(window) < min(s.min_calls, s.window_size) or tool in self.blocked:
            return None
        rate = sum(window) / len(window)
        if rate <= s.failure_threshold:
            return None
        reason = (
            f"{sum(window)} of its last {len(window)} calls failed "
            f"({rate:.0%} > {s.failure_threshold:.0%})"
        )
        log.warning("anomaly: tool %s %s", tool, reason)
        if s.auto_block:
            self.blocked[tool] = reason
            return reason
        return None

    def is_blocked(self, tool: str) -> str | None:
        return self.blocked.get(tool)

    def unblock(self, tool: str) -> bool:
        """Lift the block and forget the window; False when the tool was not blocked."""
        self.windows.pop(tool, None)
        return self.blocked.pop(tool, None) is not None
