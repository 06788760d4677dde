"""Automatic retry with exponential backoff for transient failures (`[tools.retry]`).

Only RateLimited, ServerError, NetworkError and Timeout are retried, and only for tools that
are safe to run twice (read-only, or declared `retry_safe`): re-running a write because its
answer was lost could apply it twice. `max_attempts` counts every attempt, the first included
(2 = one retry). The delay before retry n (1-based) is `base_ms * 2**(n-1)` capped at
`max_ms`, with full jitter (a random fraction of it, so concurrent sessions do not retry in
lockstep). No retry starts if it would end past `budget_secs` from the first attempt.
"""

from __future__ import annotations

import random
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import TypeVar

import anyio

from acpd.tools.errors import TRANSIENT, ToolError

T = TypeVar("T")


@dataclass(frozen=True, slots=True)
class RetryPolicy:
    max_attempts: int = 2
    base_ms: int = 500
    max_ms: int = 5000
    budget_secs: float = 30.0
    jitter: Callable[[], float] = field(default=random.random, compare=False)

    def delay(self, retry: int) -> float:
        """Seconds to wait before retry number `retry` (1-based)."""
        ceiling: float = min(self.max_ms, self.base_ms * (2 ** (retry - 1))) / 1000
        return ceiling * float(self.jitter())


OnRetry = Callable[[ToolError, int, float], Awaitable[None]]


async def with_retry(
    attempt: Callable[[], Awaitable[T]], policy: RetryPolicy, *, allowed: bool = True,
    on_retry: OnRetry | None = None, sleep: Callable[[float], Awaitable[None]] = anyio.sleep,
    clock: Callable[[], float] = time.monotonic,
) -> tuple[T, int]:
    """Run `attempt` until it succeeds or must not be retried; returns (result, attempts).

    Raises the last ToolError when the failure is not transient, `allowed` is False, the
    attempts are used up or the budget would be exceeded. Anything else propagates at once.
    """
    started = clock()
    tries = 0
    while True:
        tries += 1
        try:
            return await attempt(), tries
        except ToolError as err:
            if not allowed or err.category not in TRANSIENT or tries >= policy.max_attempts:
                raise
            wait = policy.delay(tries)
            if clock() - started + wait > policy.budget_secs:
                raise
            if on_retry is not None:
                await on_retry(err, tries, wait)
            await sleep(wait)
