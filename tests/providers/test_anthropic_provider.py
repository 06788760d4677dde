"""AnthropicProvider against a real HTTP server on 127.0.0.1 replaying recorded streams."""

from __future__ import annotations

import anyio
import pytest

from acpd.providers.anthropic import AnthropicProvider
from acpd.providers.base import (
    Message,
    ModelEvent,
    ModelRequest,
    ProviderError,
    StopEvent,
    TextDelta,
    ThoughtDelta,
    ToolCallEvent,
    ToolCallRequest,
    ToolDefinition,
    UsageEvent,
)
from tests.providers.fake_server import FakeLLMServer, Reply, fixture
from tests.providers.test_openai_provider import Sleeps

pytestmark = pytest.mark.anyio

KEY = "sk-ant-test-0123456789"
SCHEMA = {"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]}
REQUEST = ModelRequest(
    "You are a test.",
    [
        Message("user", "what is here?"),
        Message("assistant", "", [ToolCallRequest("toolu_a", "list_directory", {"path": "."})]),
        Message("tool", "[file] hello.txt", tool_call_id="toolu_a"),
    ],
    [ToolDefinition("list_directory", "List a directory.", SCHEMA)],
    max_tokens=2048,
)


def provider(url: str, retries: int = 2) -> tuple[AnthropicProvider, Sleeps]:
    made = AnthropicProvider(
        "claude-sonnet-4-20250514", base_url=url, api_key=KEY, timeout=10, max_retries=retries
    )
    sleeps = Sleeps()
    made.sleep = sleeps
    return made, sleeps


async def collect(made: AnthropicProvider) -> list[ModelEvent]:
    return [event async for event in made.stream(REQUEST)]


async def test_text_thinking_tool_use_and_what_was_sent(llm_server: FakeLLMServer) -> None:
    llm_server.queue(Reply(sse="anthropic_text_tool_thinking.sse", chunk_size=13))
    made, _ = provider(llm_server.url)
    assert made.name == "anthropic:claude-sonnet-4-20250514" and made.context_window == 200_000
    events = await collect(made)
    assert events == [
        ThoughtDelta("The user wants to know what is in the workspace."),
        ThoughtDelta(" Listing the directory is the first step."),
        TextDelta("I'll look at"),
        TextDelta(" the workspace first."),
        ToolCallEvent(ToolCallRequest("toolu_01T1x1fJ34qAmk2tNTrN7Up6", "list_directory",
                                      {"path": "."}, '{"path": "."}')),
        UsageEvent(3072, 89, cache_read_tokens=2048),
        StopEvent("tool_use"),
    ]
    [sent] = llm_server.requests
    assert sent.path == "/v1/messages"
    assert sent.headers["x-api-key"] == KEY
    assert sent.headers["anthropic-version"] == "2023-06-01"
    assert "authorization" not in sent.headers
    body = sent.json
    assert body["model"] == "claude-sonnet-4-20250514" and body["stream"] is True
    assert body["system"] == "You are a test." and body["max_tokens"] == 2048
    assert body["tools"] == [
        {"name": "list_directory", "description": "List a directory.", "input_schema": SCHEMA}
    ]
    assert body["messages"] == [
        {"role": "user", "content": [{"type": "text", "text": "what is here?"}]},
        {"role": "assistant", "content": [
            {"type": "tool_use", "id": "toolu_a", "name": "list_directory",
             "input": {"path": "."}}]},
        {"role": "user", "content": [
            {"type": "tool_result", "tool_use_id": "toolu_a", "content": "[file] hello.txt"}]},
    ]


async def test_error_event_after_output_is_raised_not_retried(llm_server: FakeLLMServer) -> None:
    llm_server.queue(Reply(sse="anthropic_error.sse"), Reply(sse="anthropic_text.sse"))
    made, sleeps = provider(llm_server.url)
    seen: list[ModelEvent] = []
    with pytest.raises(ProviderError, match="Overloaded") as info:
        async for event in made.stream(REQUEST):
            seen.append(event)
    assert seen == [TextDelta("Let me")]
    assert info.value.retryable and info.value.status == 529
    assert str(info.value).startswith("anthropic:claude-sonnet-4-20250514: ")
    assert len(llm_server.requests) == 1 and sleeps.delays == []


async def test_error_event_before_output_is_retried(llm_server: FakeLLMServer) -> None:
    llm_server.queue(Reply(sse="anthropic_error_first.sse"), Reply(sse="anthropic_text.sse"))
    made, sleeps = provider(llm_server.url)
    events = await collect(made)
    assert "".join(e.text for e in events if isinstance(e, TextDelta)) == (
        "The workspace holds hello.txt and src/."
    )
    assert events[-2:] == [UsageEvent(1180, 12), StopEvent("end_turn")]
    assert len(llm_server.requests) == 2 and len(sleeps.delays) == 1


async def test_http_529_retried_then_401_not(llm_server: FakeLLMServer) -> None:
    overloaded = b'{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}'
    auth = b'{"type":"error","error":{"type":"authentication_error","message":"invalid x-api-key"}}'
    llm_server.queue(
        Reply(529, body=overloaded, content_type="application/json", headers={"retry-after": "2"}),
        Reply(401, body=auth, content_type="application/json"),
    )
    made, sleeps = provider(llm_server.url)
    with pytest.raises(ProviderError) as info:
        await collect(made)
    assert info.value.status == 401 and not info.value.retryable
    assert "HTTP 401" in str(info.value) and "invalid x-api-key (authentication_error)" in str(
        info.value
    )
    assert KEY not in str(info.value)
    assert sleeps.delays == [2.0] and len(llm_server.requests) == 2


async def test_cancel_mid_stream_closes_the_connection(llm_server: FakeLLMServer) -> None:
    head = fixture("anthropic_text.sse").split(b"event: content_block_stop")[0]
    llm_server.queue(Reply(body=head, hold=True))
    made, _ = provider(llm_server.url)
    stream = made.stream(REQUEST)
    first = anyio.Event()
    seen: list[ModelEvent] = []

    async def consume() -> None:
        async for event in stream:
            seen.append(event)
            first.set()

    async with anyio.create_task_group() as tg:
        tg.start_soon(consume)
        await first.wait()
        tg.cancel_scope.cancel()
    assert seen[0] == TextDelta("The workspace holds")
    assert await anyio.to_thread.run_sync(llm_server.client_left.wait, 10)
    assert stream is not None
