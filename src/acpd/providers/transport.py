"""The thin I/O half of the HTTP providers: POST, retry, feed the body through SSE and a decoder.

All wire knowledge lives in the sans-io modules (`sse`, `openai_wire`, `anthropic_wire`); this
module owns the connection, the retry policy and the one place where transport exceptions
become `ProviderError`.

Retries: 408, 429, 5xx and connection failures, with exponential backoff or the server's
`Retry-After` (capped), at most `max_retries` times, and only while nothing has been yielded:
a retry after text reached the editor would show the user two different answers spliced
together. `x-should-retry` (sent by OpenAI and Anthropic) overrides the status rule.
"""

from __future__ import annotations

import email.utils
import logging
import random
import time
from collections.abc import AsyncGenerator, Awaitable, Callable, Mapping
from dataclasses import dataclass
from typing import Protocol
from urllib.parse import urlsplit

import anyio
import httpx

from acpd.providers.base import ModelEvent, ProviderError
from acpd.providers.sse import SSEError, SSEEvent, SSEParser

log = logging.getLogger("acpd.providers")

BACKOFF_BASE = 0.5
BACKOFF_CAP = 8.0
MAX_RETRY_AFTER = 60.0
CONNECT_TIMEOUT = 15.0
MAX_ERROR_BODY = 64 * 1024

Sleep = Callable[[float], Awaitable[None]]


class StreamDecoder(Protocol):
    def feed(self, sse: SSEEvent) -> list[ModelEvent]: ...

    def finish(self) -> list[ModelEvent]: ...


@dataclass(frozen=True, slots=True)
class HTTPCall:
    label: str
    """Who is calling, for messages: `openai:gpt-4o`."""
    url: str
    headers: dict[str, str]
    body: bytes
    timeout: float
    max_retries: int
    secret: str | None = None
    """Redacted from every message, in case an error body echoes it."""


class _Failed(Exception):
    def __init__(self, error: ProviderError, retry_after: float | None = None) -> None:
        self.error = error
        self.retry_after = retry_after


async def stream_events(
    call: HTTPCall,
    new_decoder: Callable[[], StreamDecoder],
    error_message: Callable[[bytes], str],
    *,
    sleep: Sleep = anyio.sleep,
) -> AsyncGenerator[ModelEvent, None]:
    """POST `call` and yield the decoded events.

    Raises ProviderError (with `status` for HTTP errors and `retryable` set) once retries are
    spent or not allowed. Closing or cancelling the iterator closes the response.
    """
    timeout = httpx.Timeout(call.timeout, connect=min(call.timeout, CONNECT_TIMEOUT))
    where = _display(call.url)
    # One client per call: the Provider protocol has no close hook, and a pool that outlived
    # the event loop it was made on would break; a model call dwarfs the handshake.
    async with httpx.AsyncClient(timeout=timeout) as client:
        attempt = 0
        while True:
            yielded = False
            retry_after: float | None = None
            try:
                async with client.stream(
                    "POST", call.url, headers=call.headers, content=call.body
                ) as response:
                    await _check(call, response, error_message)
                    parser = SSEParser()
                    decoder = new_decoder()
                    async for chunk in response.aiter_bytes():
                        for sse in parser.feed(chunk):
                            for event in decoder.feed(sse):
                                yielded = True
                                yield event
                    for sse in parser.close():
                        for event in decoder.feed(sse):
                            yielded = True
                            yield event
                    for event in decoder.finish():
                        yielded = True
                        yield event
                return
            except _Failed as failed:
                error, retry_after = failed.error, failed.retry_after
            except ProviderError as exc:
                error = _labelled(call, exc)
            except SSEError as exc:
                raise ProviderError(f"{call.label}: malformed stream from {where}: {exc}") from None
            except httpx.ConnectTimeout:
                error = ProviderError(
                    f"{call.label}: could not connect to {where} within {timeout.connect:g} s",
                    retryable=True,
                )
            except httpx.TimeoutException as exc:
                error = ProviderError(
                    f"{call.label}: {where} timed out after {call.timeout:g} s "
                    f"({type(exc).__name__})",
                    retryable=True,
                )
            except (httpx.NetworkError, httpx.RemoteProtocolError) as exc:
                reason = _redact(str(exc) or type(exc).__name__, call.secret)
                error = ProviderError(
                    f"{call.label}: cannot talk to {where}: {reason}", retryable=True
                )
            except httpx.HTTPError as exc:
                # UnsupportedProtocol, LocalProtocolError, DecodingError...: retrying cannot help.
                raise ProviderError(
                    f"{call.label}: request to {where} failed: {_redact(str(exc), call.secret)}"
                ) from None
            if yielded or not error.retryable or attempt >= call.max_retries:
                if attempt:
                    error = ProviderError(
                        f"{error} (gave up after {attempt + 1} attempts)",
                        status=error.status,
                        retryable=error.retryable,
                    )
                raise error
            delay = backoff(attempt, retry_after)
            attempt += 1
            log.warning("%s; retry %d of %d in %.1fs", error, attempt, call.max_retries, delay)
            await sleep(delay)


async def _check(
    call: HTTPCall, response: httpx.Response, error_message: Callable[[bytes], str]
) -> None:
    status = response.status_code
    success = 200 <= status < 300
    if success and not response.headers.get("content-type", "").startswith("application/json"):
        return
    body = await _read_capped(response)
    message = _redact(error_message(body), call.secret)
    if success:
        # JSON instead of a stream: the server ignored `stream: true` or a proxy answered.
        message = f"{call.label}: expected an event stream, got JSON: {message}"
        raise _Failed(ProviderError(message, status=status))
    if 300 <= status < 400 and "location" in response.headers:
        # Redirects are not followed: the POST body and the key must not go elsewhere.
        message = f"redirected to {_display(response.headers['location'])}; set base_url to it"
    should_retry = response.headers.get("x-should-retry", "").lower()
    if should_retry in ("true", "false"):
        retryable = should_retry == "true"
    else:
        retryable = status in (408, 429) or status >= 500
    error = ProviderError(
        f"{call.label}: HTTP {status} from {_display(call.url)}: {message}",
        status=status,
        retryable=retryable,
    )
    raise _Failed(error, retry_after_seconds(response.headers))


async def _read_capped(response: httpx.Response) -> bytes:
    body = bytearray()
    async for chunk in response.aiter_bytes():
        body += chunk
        if len(body) >= MAX_ERROR_BODY:
            break
    return bytes(body[:MAX_ERROR_BODY])


def backoff(attempt: int, retry_after: float | None = None) -> float:
    """Seconds to wait before retry number `attempt + 1`: the server's word if it gave one
    (capped at MAX_RETRY_AFTER), else exponential with jitter so clients spread out."""
    if retry_after is not None:
        return min(max(retry_after, 0.0), MAX_RETRY_AFTER)
    ceiling: float = min(BACKOFF_CAP, BACKOFF_BASE * 2**attempt)
    return ceiling * random.uniform(0.75, 1.0)


def retry_after_seconds(headers: Mapping[str, str], now: float | None = None) -> float | None:
    """`retry-after-ms`, else `Retry-After` as seconds or an HTTP date; None if absent or bad."""
    millis = headers.get("retry-after-ms")
    if millis:
        try:
            return max(float(millis) / 1000, 0.0)
        except ValueError:
            pass
    value = headers.get("retry-after")
    if not value:
        return None
    try:
        return max(float(value), 0.0)
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    return max(when.timestamp() - (time.time() if now is None else now), 0.0)


def _labelled(call: HTTPCall, exc: ProviderError) -> ProviderError:
    message = f"{call.label}: {_redact(str(exc), call.secret)}"
    return ProviderError(message, status=exc.status, retryable=exc.retryable)


def _display(url: str) -> str:
    """The URL without credentials or query, for messages."""
    parts = urlsplit(url)
    host = parts.hostname or ""
    if parts.port:
        host = f"{host}:{parts.port}"
    return f"{parts.scheme}://{host}{parts.path}"


def _redact(text: str, secret: str | None) -> str:
    return text.replace(secret, "***") if secret else text
