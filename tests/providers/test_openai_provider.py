"""OpenAIProvider against a real HTTP server on 127.0.0.1 replaying recorded streams."""

from __future__ import annotations

import socket

import anyio
import anyio.lowlevel
import pytest

from acpd.providers.base import (
    Message,
    ModelEvent,
    ModelRequest,
    ProviderError,
    StopEvent,
    TextDelta,
    ToolCallEvent,
    ToolCallRequest,
    ToolDefinition,
    UsageEvent,
)
from acpd.providers.openai import OpenAIProvider
from tests.providers.fake_server import FakeLLMServer, Reply, fixture

pytestmark = pytest.mark.anyio

SCHEMA = {
    "type": "object",
    "properties": {"path": {"type": "string"}},
    "required": ["path"],
    "additionalProperties": False,
}
REQUEST = ModelRequest(
    "You are a test.",
    [Message("user", "what is here?")],
    [ToolDefinition("list_directory", "List a directory.", SCHEMA)],
    max_tokens=1000,
)


class Sleeps:
    """Stands in for anyio.sleep between retries: records the delays, does not wait."""

    def __init__(self) -> None:
        self.delays: list[float] = []

    async def __call__(self, delay: float) -> None:
        self.delays.append(delay)
        await anyio.lowlevel.checkpoint()


def provider(
    url: str, *, key: str | None = None, retries: int = 2, model: str = "gpt-4o"
) -> tuple[OpenAIProvider, Sleeps]:
    made = OpenAIProvider(model, base_url=url + "/v1", api_key=key, timeout=10, max_retries=retries)
    sleeps = Sleeps()
    made.sleep = sleeps
    return made, sleeps


async def collect(made: OpenAIProvider, request: ModelRequest = REQUEST) -> list[ModelEvent]:
    return [event async for event in made.stream(request)]


def json_error(status: int, message: str, **headers: str) -> Reply:
    body = b'{"error": {"message": "%s", "type": "test_error"}}' % message.encode()
    return Reply(status, body=body, content_type="application/json", headers=headers)


async def test_text_stream_and_what_was_sent(llm_server: FakeLLMServer) -> None:
    llm_server.queue(Reply(sse="openai_text.sse", chunk_size=7))
    made, _ = provider(llm_server.url)
    assert made.name == "openai:gpt-4o" and made.context_window == 128_000
    events = await collect(made)
    assert "".join(e.text for e in events if isinstance(e, TextDelta)) == (
        "The workspace holds hello.txt and src/ — café ☕."
    )
    assert events[-2:] == [UsageEvent(412, 14), StopEvent("end_turn")]
    [sent] = llm_server.requests
    assert sent.path == "/v1/chat/completions"
    assert "authorization" not in sent.headers
    assert sent.headers["content-type"] == "application/json"
    body = sent.json
    assert body["model"] == "gpt-4o"
    assert body["stream"] is True and body["stream_options"] == {"include_usage": True}
    assert body["messages"] == [
        {"role": "system", "content": "You are a test."},
        {"role": "user", "content": "what is here?"},
    ]
    assert body["tools"] == [{"type": "function", "function": {
        "name": "list_directory", "description": "List a directory.", "parameters": SCHEMA}}]


async def test_api_key_goes_in_a_bearer_header(llm_server: FakeLLMServer) -> None:
    llm_server.queue(Reply(sse="openai_text.sse"))
    await collect(provider(llm_server.url, key="sk-test-123")[0])
    assert llm_server.requests[0].headers["authorization"] == "Bearer sk-test-123"


async def test_one_tool_call_assembled_from_argument_deltas(llm_server: FakeLLMServer) -> None:
    llm_server.queue(Reply(sse="openai_tool_call.sse", chunk_size=5))
    events = await collect(provider(llm_server.url)[0])
    assert events == [
        ToolCallEvent(ToolCallRequest("call_Xq7bN2pLk4T9sVwR1mC8dE0f", "list_directory",
                                      {"path": "."}, '{"path":"."}')),
        UsageEvent(388, 15),
        StopEvent("tool_use"),
    ]


async def test_parallel_calls_with_interleaved_deltas(llm_server: FakeLLMServer) -> None:
    llm_server.queue(Reply(sse="openai_parallel_tool_calls.sse", chunk_size=11))
    events = await collect(provider(llm_server.url, model="gpt-4.1")[0])
    calls = [e.call for e in events if isinstance(e, ToolCallEvent)]
    assert [(c.name, c.arguments) for c in calls] == [
        ("read", {"path": "src/main.py", "limit": 40}),
        ("grep", {"pattern": "def main\\(", "path": "src"}),
    ]
    assert events[-2:] == [UsageEvent(1210, 52, cache_read_tokens=1024), StopEvent("tool_use")]


async def test_invalid_argument_json_is_a_call_not_an_exception(
    llm_server: FakeLLMServer,
) -> None:
    llm_server.queue(Reply(sse="openai_invalid_json.sse"))
    events = await collect(provider(llm_server.url, model="qwen2.5-coder:7b")[0])
    [call] = [e.call for e in events if isinstance(e, ToolCallEvent)]
    assert (call.id, call.name, call.arguments) == ("call_mZ3xK8qP", "read", None)
    assert call.raw_arguments == "{'path': 'hello.txt'}"
    assert call.invalid_json is not None and call.invalid_json.startswith("invalid_json:")
    assert events[-1] == StopEvent("tool_use")


async def test_ollama_stream_whole_call_in_one_chunk_and_no_usage(
    llm_server: FakeLLMServer,
) -> None:
    llm_server.queue(Reply(sse="openai_ollama_tool_call.sse"))
    events = await collect(provider(llm_server.url, model="qwen2.5-coder:7b-instruct-q8_0")[0])
    assert events == [
        ToolCallEvent(ToolCallRequest("call_hk81qg8b", "list_directory", {"path": "."},
                                      '{"path":"."}')),
        StopEvent("tool_use"),
    ]


async def test_usage_reported_once_from_cumulative_usage_chunks(
    llm_server: FakeLLMServer,
) -> None:
    llm_server.queue(Reply(sse="openai_vllm_continuous_usage_crlf.sse", chunk_size=3))
    events = await collect(provider(llm_server.url, model="Qwen/Qwen3-8B")[0])
    assert [e for e in events if isinstance(e, UsageEvent)] == [UsageEvent(57, 8)]
    assert events[-1] == StopEvent("max_tokens")


@pytest.mark.parametrize(("headers", "delay"), [
    ({"retry-after": "3"}, 3.0),
    ({"retry-after-ms": "1500", "retry-after": "9"}, 1.5),
    ({"retry-after": "3600"}, 60.0),
])
async def test_429_then_200_honours_retry_after(
    llm_server: FakeLLMServer, headers: dict[str, str], delay: float
) -> None:
    llm_server.queue(json_error(429, "Rate limit reached", **headers), Reply(sse="openai_text.sse"))
    made, sleeps = provider(llm_server.url)
    events = await collect(made)
    assert events[-1] == StopEvent("end_turn")
    assert sleeps.delays == [delay]
    assert len(llm_server.requests) == 2
    assert llm_server.requests[0].raw == llm_server.requests[1].raw


async def test_500_after_retries_are_spent(llm_server: FakeLLMServer) -> None:
    llm_server.queue(*(json_error(500, "The server had an error") for _ in range(3)))
    made, sleeps = provider(llm_server.url, retries=2)
    with pytest.raises(ProviderError) as info:
        await collect(made)
    assert info.value.status == 500 and info.value.retryable
    assert "HTTP 500" in str(info.value) and "The server had an error" in str(info.value)
    assert "gave up after 3 attempts" in str(info.value)
    assert len(llm_server.requests) == 3
    # Exponential backoff with jitter: 0.5 s then 1 s, each scaled into [0.75, 1].
    assert len(sleeps.delays) == 2
    assert 0.375 <= sleeps.delays[0] <= 0.5 and 0.75 <= sleeps.delays[1] <= 1.0


async def test_401_is_not_retried_and_the_key_is_not_shown(llm_server: FakeLLMServer) -> None:
    key = "sk-secret-abcdef123456"
    llm_server.queue(json_error(401, f"Incorrect API key provided: {key}"))
    made, sleeps = provider(llm_server.url, key=key)
    with pytest.raises(ProviderError) as info:
        await collect(made)
    assert info.value.status == 401 and not info.value.retryable
    assert "HTTP 401" in str(info.value) and "Incorrect API key provided: ***" in str(info.value)
    assert key not in str(info.value) and key not in repr(made)
    assert len(llm_server.requests) == 1 and sleeps.delays == []


async def test_x_should_retry_false_overrides_the_status(llm_server: FakeLLMServer) -> None:
    llm_server.queue(json_error(503, "maintenance", **{"x-should-retry": "false"}))
    with pytest.raises(ProviderError) as info:
        await collect(provider(llm_server.url)[0])
    assert info.value.status == 503 and not info.value.retryable
    assert len(llm_server.requests) == 1


async def test_redirect_is_reported_not_followed(llm_server: FakeLLMServer) -> None:
    llm_server.queue(Reply(307, body=b"", content_type="text/plain",
                           headers={"location": "https://elsewhere.example/v1/chat/completions"}))
    with pytest.raises(ProviderError, match=r"redirected to https://elsewhere\.example/") as info:
        await collect(provider(llm_server.url, key="sk-x")[0])
    assert info.value.status == 307 and not info.value.retryable
    assert len(llm_server.requests) == 1


async def test_malformed_sse_is_a_provider_error(llm_server: FakeLLMServer) -> None:
    llm_server.queue(Reply(body=b'data: {"choices": [{"index": 0, "delta": {"content": "Hel\n\n'))
    with pytest.raises(ProviderError, match="malformed stream: a data line is not JSON") as info:
        await collect(provider(llm_server.url)[0])
    assert not info.value.retryable and len(llm_server.requests) == 1


async def test_json_instead_of_a_stream(llm_server: FakeLLMServer) -> None:
    llm_server.queue(Reply(body=b'{"choices": []}', content_type="application/json"))
    with pytest.raises(ProviderError, match="expected an event stream"):
        await collect(provider(llm_server.url)[0])


async def test_stream_cut_before_any_event_is_retried(llm_server: FakeLLMServer) -> None:
    first_chunk = fixture("openai_text.sse").split(b"\n\n")[0] + b"\n\n"
    llm_server.queue(Reply(body=first_chunk), Reply(sse="openai_text.sse"))
    made, sleeps = provider(llm_server.url)
    events = await collect(made)
    assert events[-1] == StopEvent("end_turn") and len(sleeps.delays) == 1
    assert len(llm_server.requests) == 2


async def test_stream_cut_after_text_is_not_retried(llm_server: FakeLLMServer) -> None:
    two_chunks = b"\n\n".join(fixture("openai_text.sse").split(b"\n\n")[:2]) + b"\n\n"
    llm_server.queue(Reply(body=two_chunks), Reply(sse="openai_text.sse"))
    seen: list[ModelEvent] = []
    with pytest.raises(ProviderError, match="ended before the model finished") as info:
        async for event in provider(llm_server.url)[0].stream(REQUEST):
            seen.append(event)
    assert seen == [TextDelta("The")]
    assert info.value.retryable and len(llm_server.requests) == 1


async def test_connection_refused_is_retried_then_reported() -> None:
    # Bound and never listening, and kept bound: a freed port could be taken by a parallel
    # test between here and the connect.
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
        made, sleeps = provider(f"http://127.0.0.1:{port}", retries=1)
        with pytest.raises(ProviderError, match=r"cannot talk to http://127\.0\.0\.1") as info:
            await collect(made)
    assert info.value.retryable and info.value.status is None and len(sleeps.delays) == 1


async def test_cancel_mid_stream_closes_the_connection(llm_server: FakeLLMServer) -> None:
    head = b"\n\n".join(fixture("openai_text.sse").split(b"\n\n")[:3]) + b"\n\n"
    llm_server.queue(Reply(body=head, hold=True))
    made, _ = provider(llm_server.url)
    seen: list[ModelEvent] = []
    first = anyio.Event()

    # Held here so that garbage collection cannot be what closes it: cancellation must.
    stream = made.stream(REQUEST)

    async def consume() -> None:
        async for event in stream:
            seen.append(event)
            first.set()

    async with anyio.create_task_group() as tg:
        tg.start_soon(consume)
        await first.wait()
        tg.cancel_scope.cancel()
    assert seen[0] == TextDelta("The")
    # The server is still holding the response open; only the client can end it.
    assert await anyio.to_thread.run_sync(llm_server.client_left.wait, 10)
    assert stream is not None


async def test_silent_server_times_out(llm_server: FakeLLMServer) -> None:
    head = fixture("openai_text.sse").split(b"\n\n")[0] + b"\n\n"
    llm_server.queue(Reply(body=head, hold=True))
    made = OpenAIProvider("gpt-4o", base_url=llm_server.url, api_key=None, timeout=0.3,
                          max_retries=0)
    with pytest.raises(ProviderError, match=r"timed out after 0\.3 s \(ReadTimeout\)") as info:
        await collect(made)
    assert info.value.retryable
