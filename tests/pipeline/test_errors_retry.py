"""The eleven categories as the model sees them, HTTP and exception classification, retry."""

from __future__ import annotations

import errno
from collections.abc import Awaitable, Callable

import pytest

from acpd.tools.errors import (
    TRANSIENT,
    ErrorCategory,
    ToolError,
    classify_exception,
    classify_exit,
    classify_http_status,
    http_error,
)
from acpd.tools.retry import RetryPolicy, with_retry
from tests.pipeline.conftest import RigFactory, transient

pytestmark = pytest.mark.anyio


@pytest.mark.parametrize("category", list(ErrorCategory))
async def test_every_category_reaches_the_model_as_a_tool_error_block(
    category: ErrorCategory, rig: RigFactory
) -> None:
    r = rig(retry=RetryPolicy(max_attempts=1))
    r.behaviours["probe"].errors = [ToolError(category, "it broke")]
    result = await r.call("probe", {"path": category.value})
    assert result.error is not None and result.error.category is category
    lines = result.text.splitlines()
    assert lines[0] == "[tool_error]" and lines[1] == f"category: {category.value}"
    assert lines[-1] == f"retryable: {'true' if category.retryable else 'false'}"
    assert r.audit()[-1]["error_category"] == category.value
    assert r.observer.statuses()[-1] == "failed"


def test_only_infrastructure_failures_are_transient() -> None:
    assert {ErrorCategory.RATE_LIMITED, ErrorCategory.SERVER_ERROR,
                         ErrorCategory.NETWORK_ERROR, ErrorCategory.TIMEOUT} == TRANSIENT


@pytest.mark.parametrize(("status", "category"), [
    (200, None), (301, None), (400, ErrorCategory.INVALID_PARAMETERS),
    (422, ErrorCategory.INVALID_PARAMETERS), (401, ErrorCategory.POLICY_BLOCKED),
    (403, ErrorCategory.POLICY_BLOCKED), (404, ErrorCategory.PERMANENT_FAILURE),
    (410, ErrorCategory.PERMANENT_FAILURE), (408, ErrorCategory.TIMEOUT),
    (429, ErrorCategory.RATE_LIMITED), (500, ErrorCategory.SERVER_ERROR),
    (503, ErrorCategory.SERVER_ERROR),
])
def test_http_status_classification(status: int, category: ErrorCategory | None) -> None:
    assert classify_http_status(status) is category
    if category is not None:
        assert http_error(status, "x").category is category


def test_exception_classification() -> None:
    class ConnectError(Exception):
        pass

    class ReadTimeout(Exception):
        pass

    assert classify_exception(TimeoutError()) is ErrorCategory.TIMEOUT
    assert classify_exception(ReadTimeout()) is ErrorCategory.TIMEOUT
    assert classify_exception(ConnectError()) is ErrorCategory.NETWORK_ERROR
    assert classify_exception(ConnectionRefusedError()) is ErrorCategory.NETWORK_ERROR
    unreachable = OSError(errno.ENETUNREACH, "unreachable")
    assert classify_exception(unreachable) is ErrorCategory.NETWORK_ERROR
    assert classify_exception(ValueError()) is ErrorCategory.PERMANENT_FAILURE


def test_shell_exit_classification() -> None:
    assert classify_exit(126, "") is ErrorCategory.POLICY_BLOCKED
    assert classify_exit(127, "") is ErrorCategory.PERMANENT_FAILURE
    assert classify_exit(1, "cat: x: No such file or directory") is ErrorCategory.PERMANENT_FAILURE
    assert classify_exit(1, "bash: Permission denied") is ErrorCategory.PERMANENT_FAILURE
    assert classify_exit(1, "FAILED tests") is None and classify_exit(0, "") is None


def test_backoff_doubles_up_to_the_cap() -> None:
    policy = RetryPolicy(max_attempts=9, base_ms=100, max_ms=1000, jitter=lambda: 1.0)
    assert [policy.delay(n) for n in range(1, 7)] == [0.1, 0.2, 0.4, 0.8, 1.0, 1.0]
    half = RetryPolicy(base_ms=100, jitter=lambda: 0.5)
    assert half.delay(1) == 0.05


class Clock:
    def __init__(self) -> None:
        self.now = 0.0
        self.slept: list[float] = []

    def __call__(self) -> float:
        return self.now

    async def sleep(self, seconds: float) -> None:
        self.slept.append(seconds)
        self.now += seconds


def flaky(*errors: ToolError) -> tuple[list[int], Callable[[], Awaitable[str]]]:
    calls = [0]
    pending = list(errors)

    async def attempt() -> str:
        calls[0] += 1
        if pending:
            raise pending.pop(0)
        return "done"

    return calls, attempt


@pytest.mark.parametrize("category", sorted(TRANSIENT, key=str))
async def test_transient_failures_are_retried_with_backoff(category: ErrorCategory) -> None:
    clock = Clock()
    _calls, attempt = flaky(transient(category), transient(category))
    policy = RetryPolicy(max_attempts=3, base_ms=100, max_ms=1000, jitter=lambda: 1.0)
    result: tuple[str, int] = await with_retry(attempt, policy, sleep=clock.sleep, clock=clock)
    assert result == ("done", 3) and clock.slept == [0.1, 0.2]


@pytest.mark.parametrize(
    "category", sorted(set(ErrorCategory) - TRANSIENT, key=str)
)
async def test_other_failures_are_never_retried(category: ErrorCategory) -> None:
    clock = Clock()
    calls, attempt = flaky(ToolError(category, "no"))
    with pytest.raises(ToolError):
        await with_retry(attempt, RetryPolicy(max_attempts=5), sleep=clock.sleep, clock=clock)
    assert calls == [1] and clock.slept == []


async def test_attempts_and_budget_limit_retries() -> None:
    clock = Clock()
    calls, attempt = flaky(*(transient() for _ in range(10)))
    with pytest.raises(ToolError):
        await with_retry(attempt, RetryPolicy(max_attempts=3, jitter=lambda: 1.0),
                         sleep=clock.sleep, clock=clock)
    assert calls == [3]
    clock = Clock()
    calls, attempt = flaky(*(transient() for _ in range(10)))
    budget = RetryPolicy(max_attempts=10, base_ms=1000, max_ms=1000, budget_secs=2.5,
                         jitter=lambda: 1.0)
    with pytest.raises(ToolError):
        await with_retry(attempt, budget, sleep=clock.sleep, clock=clock)
    assert calls == [3] and clock.slept == [1.0, 1.0]


async def test_the_runner_retries_read_only_tools_only(rig: RigFactory) -> None:
    r = rig(mode="auto")
    r.behaviours["probe"].errors = [transient(ErrorCategory.RATE_LIMITED)]
    ok = await r.call("probe", {"path": "a"})
    assert ok.error is None and r.behaviours["probe"].calls == 2
    assert r.audit()[-1]["attempts"] == 2
    assert any("retrying" in str(v["content"]) for v in r.observer.views)
    r.behaviours["mutate"].errors = [transient(ErrorCategory.SERVER_ERROR)]
    failed = await r.call("mutate", {"path": "a"})
    assert failed.error is not None and r.behaviours["mutate"].calls == 1
