"""The Anthropic wire format without I/O: request encoding and the stream decoder."""

from __future__ import annotations

import json

import pytest

from acpd.providers import anthropic_wire
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
    parse_arguments,
)
from acpd.providers.sse import SSEEvent
from tests.providers.fake_server import decode_stream, fixture


def decode(data: bytes) -> list[ModelEvent]:
    return decode_stream(anthropic_wire.StreamDecoder(), data)


def test_encode_system_tools_and_merged_tool_results() -> None:
    schema = {"type": "object", "properties": {"path": {"type": "string"}}}
    history = [
        Message("user", "look around"),
        Message("assistant", "Two at once.", [
            ToolCallRequest("toolu_1", "list_directory", {"path": "."}),
            parse_arguments("toolu_2", "read", "{not json"),
        ]),
        Message("tool", "[file] hello.txt", tool_call_id="toolu_1"),
        Message("tool", "[tool_error]\ninvalid_json", tool_call_id="toolu_2", is_error=True),
        Message("user", "and now?"),
        Message("assistant", ""),
    ]
    request = ModelRequest("be brief", history, [ToolDefinition("read", "Read.", schema)], 512)
    body = json.loads(anthropic_wire.encode_request("claude-sonnet-4-20250514", request))
    assert body["model"] == "claude-sonnet-4-20250514"
    assert body["system"] == "be brief"
    assert body["max_tokens"] == 512
    assert body["stream"] is True
    assert body["tools"] == [{"name": "read", "description": "Read.", "input_schema": schema}]
    assert body["messages"] == [
        {"role": "user", "content": [{"type": "text", "text": "look around"}]},
        {"role": "assistant", "content": [
            {"type": "text", "text": "Two at once."},
            {"type": "tool_use", "id": "toolu_1", "name": "list_directory",
             "input": {"path": "."}},
            {"type": "tool_use", "id": "toolu_2", "name": "read", "input": {}},
        ]},
        # Both results and the next user text in one user turn, results first; the empty
        # assistant message is dropped (the API rejects empty content).
        {"role": "user", "content": [
            {"type": "tool_result", "tool_use_id": "toolu_1", "content": "[file] hello.txt"},
            {"type": "tool_result", "tool_use_id": "toolu_2",
             "content": "[tool_error]\ninvalid_json", "is_error": True},
            {"type": "text", "text": "and now?"},
        ]},
    ]


def test_tool_ids_from_other_providers_are_made_acceptable_on_both_ends() -> None:
    history = [
        Message("user", "x"),
        Message("assistant", "", [ToolCallRequest("fc.1:a/b", "read", {"path": "a"})]),
        Message("tool", "ok", tool_call_id="fc.1:a/b"),
    ]
    body = json.loads(anthropic_wire.encode_request("claude-x", ModelRequest("", history, [])))
    assert body["messages"][1]["content"][0]["id"] == "fc_1_a_b"
    assert body["messages"][2]["content"][0]["tool_use_id"] == "fc_1_a_b"


def test_encode_leaves_out_empty_system_and_tools() -> None:
    body = json.loads(anthropic_wire.encode_request("claude-x", ModelRequest("", [], [])))
    assert "system" not in body and "tools" not in body


@pytest.mark.parametrize(("base", "url"), [
    ("https://api.anthropic.com", "https://api.anthropic.com/v1/messages"),
    ("https://proxy.example/anthropic/", "https://proxy.example/anthropic/v1/messages"),
    ("http://127.0.0.1:9/v1", "http://127.0.0.1:9/v1/messages"),
])
def test_messages_url(base: str, url: str) -> None:
    assert anthropic_wire.messages_url(base) == url


def test_context_window() -> None:
    assert anthropic_wire.context_window("claude-3-5-haiku-latest") == 200_000
    assert anthropic_wire.context_window("deepseek-chat") == 128_000


def test_text_thinking_and_tool_use_fixture() -> None:
    events = decode(fixture("anthropic_text_tool_thinking.sse"))
    assert events == [
        ThoughtDelta("The user wants to know what is in the workspace."),
        ThoughtDelta(" Listing the directory is the first step."),
        TextDelta("I'll look at"),
        TextDelta(" the workspace first."),
        ToolCallEvent(ToolCallRequest("toolu_01T1x1fJ34qAmk2tNTrN7Up6", "list_directory",
                                      {"path": "."}, '{"path": "."}')),
        # input_tokens + cache_read_input_tokens; output_tokens from message_delta; the
        # cached part told apart (it is priced apart); Anthropic reports no cost.
        UsageEvent(3072, 89, cache_read_tokens=2048, cache_write_tokens=0, cost=None),
        StopEvent("tool_use"),
    ]


def test_invalid_tool_input_becomes_invalid_json() -> None:
    stream = b"".join(
        b"event: %s\ndata: %s\n\n" % (kind.encode(), json.dumps(data).encode())
        for kind, data in [
            ("message_start", {"type": "message_start", "message": {"usage": {"input_tokens": 5}}}),
            ("content_block_start", {"type": "content_block_start", "index": 0, "content_block":
                                     {"type": "tool_use", "id": "toolu_9", "name": "read",
                                      "input": {}}}),
            ("content_block_delta", {"type": "content_block_delta", "index": 0, "delta":
                                     {"type": "input_json_delta", "partial_json": '{"path": '}}),
            ("content_block_stop", {"type": "content_block_stop", "index": 0}),
            ("some_future_event", {"type": "some_future_event", "x": 1}),
            ("message_delta", {"type": "message_delta", "delta": {"stop_reason": "max_tokens"},
                               "usage": {"output_tokens": 3}}),
            ("message_stop", {"type": "message_stop"}),
        ]
    )
    events = decode(stream)
    call = next(e.call for e in events if isinstance(e, ToolCallEvent))
    assert call.arguments is None and call.raw_arguments == '{"path": '
    assert call.invalid_json is not None and call.invalid_json.startswith("invalid_json")
    assert events[-2:] == [UsageEvent(5, 3), StopEvent("max_tokens")]


def test_error_event() -> None:
    with pytest.raises(ProviderError, match=r"mid-stream: Overloaded \(overloaded_error\)") as info:
        decode(fixture("anthropic_error.sse"))
    assert info.value.retryable and info.value.status == 529


def test_non_retryable_error_event() -> None:
    decoder = anthropic_wire.StreamDecoder()
    data = {"type": "error", "error": {"type": "invalid_request_error", "message": "bad"}}
    with pytest.raises(ProviderError) as info:
        decoder.feed(SSEEvent(json.dumps(data), "error"))
    assert not info.value.retryable and info.value.status == 400


def test_truncated_stream_and_bad_json() -> None:
    with pytest.raises(ProviderError, match="ended before message_stop") as info:
        decode(fixture("anthropic_text.sse").split(b"event: message_stop")[0])
    assert info.value.retryable
    with pytest.raises(ProviderError, match="not JSON"):
        anthropic_wire.StreamDecoder().feed(SSEEvent("{oops", "content_block_delta"))


def test_error_body() -> None:
    body = b'{"type":"error","error":{"type":"authentication_error","message":"invalid x-api-key"}}'
    assert anthropic_wire.error_message(body) == "invalid x-api-key (authentication_error)"
