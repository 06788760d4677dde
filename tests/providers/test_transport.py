"""The retry arithmetic of the HTTP transport (the retries themselves are tested over HTTP)."""

from __future__ import annotations

import pytest

from acpd.providers.transport import MAX_RETRY_AFTER, backoff, retry_after_seconds


@pytest.mark.parametrize(("headers", "expected"), [
    ({}, None),
    ({"retry-after": "7"}, 7.0),
    ({"retry-after": "0.25"}, 0.25),
    ({"retry-after": "-3"}, 0.0),
    ({"retry-after-ms": "250", "retry-after": "7"}, 0.25),
    ({"retry-after-ms": "soon", "retry-after": "7"}, 7.0),
    ({"retry-after": "Wed, 21 Oct 2015 07:28:30 GMT"}, 30.0),
    ({"retry-after": "Wed, 21 Oct 2015 07:27:00 GMT"}, 0.0),
    ({"retry-after": "whenever"}, None),
])
def test_retry_after_seconds(headers: dict[str, str], expected: float | None) -> None:
    now = 1445412480.0  # Wed, 21 Oct 2015 07:28:00 GMT
    assert retry_after_seconds(headers, now) == expected


def test_backoff_prefers_the_server_and_caps_it() -> None:
    assert backoff(0, 4.0) == 4.0
    assert backoff(5, 0.0) == 0.0
    assert backoff(0, 10_000.0) == MAX_RETRY_AFTER


def test_backoff_grows_exponentially_up_to_a_cap() -> None:
    for attempt, ceiling in [(0, 0.5), (1, 1.0), (2, 2.0), (3, 4.0), (4, 8.0), (9, 8.0)]:
        delays = [backoff(attempt) for _ in range(50)]
        assert all(0.75 * ceiling <= d <= ceiling for d in delays)
