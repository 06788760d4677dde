"""The OpenAI wire format without I/O: request encoding and the stream decoder."""

from __future__ import annotations

import json

import pytest

from acpd.providers import openai_wire
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


def decode(name: str) -> list[ModelEvent]:
    return decode_stream(openai_wire.StreamDecoder(), fixture(name))


def decode_chunks(*chunks: object, done: bool = True) -> list[ModelEvent]:
    decoder = openai_wire.StreamDecoder()
    events: list[ModelEvent] = []
    for chunk in chunks:
        events.extend(decoder.feed(SSEEvent(json.dumps(chunk))))
    if done:
        events.extend(decoder.feed(SSEEvent("[DONE]")))
    events.extend(decoder.finish())
    return events


def test_encode_maps_every_role_and_the_tools() -> None:
    schema = {"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]}
    history = [
        Message("user", "list it"),
        Message("assistant", "Looking.", [ToolCallRequest("call_1", "list_directory", {"path": "."},
                                                          '{"path": "."}')]),
        Message("tool", "[file] hello.txt", tool_call_id="call_1"),
        Message("assistant", "", [ToolCallRequest("call_2", "read", {"path": "a"})]),
        Message("tool", "[tool_error]\nboom", tool_call_id="call_2", is_error=True),
    ]
    request = ModelRequest("be brief", history, [ToolDefinition("list_directory", "List.", schema)],
                           max_tokens=333)
    body = json.loads(openai_wire.encode_request("gpt-4o", request))
    assert body["model"] == "gpt-4o"
    assert body["stream"] is True
    assert body["stream_options"] == {"include_usage": True}
    assert body["max_tokens"] == 333
    assert body["tools"] == [
        {"type": "function",
         "function": {"name": "list_directory", "description": "List.", "parameters": schema}}
    ]
    assert body["messages"] == [
        {"role": "system", "content": "be brief"},
        {"role": "user", "content": "list it"},
        {"role": "assistant", "content": "Looking.", "tool_calls": [
            {"id": "call_1", "type": "function",
             "function": {"name": "list_directory", "arguments": '{"path": "."}'}}]},
        {"role": "tool", "tool_call_id": "call_1", "content": "[file] hello.txt"},
        {"role": "assistant", "content": None, "tool_calls": [
            {"id": "call_2", "type": "function",
             "function": {"name": "read", "arguments": '{"path":"a"}'}}]},
        {"role": "tool", "tool_call_id": "call_2", "content": "[tool_error]\nboom"},
    ]


def test_encode_invalid_call_sends_an_empty_object_and_no_tools_key() -> None:
    bad = parse_arguments("call_9", "read", "{'path': 'x'}")
    request = ModelRequest("", [Message("user", "hi"), Message("assistant", "", [bad])], [])
    body = json.loads(openai_wire.encode_request("llama3.1", request))
    assert "tools" not in body
    assert body["messages"][0] == {"role": "user", "content": "hi"}
    assert body["messages"][1]["tool_calls"][0]["function"]["arguments"] == "{}"


@pytest.mark.parametrize(("model", "key"), [("o3-mini", "max_completion_tokens"),
                                            ("gpt-5", "max_completion_tokens"),
                                            ("gpt-4o", "max_tokens"), ("qwen3:8b", "max_tokens")])
def test_token_limit_key_follows_the_model(model: str, key: str) -> None:
    body = json.loads(openai_wire.encode_request(model, ModelRequest("", [], [], 77)))
    assert body[key] == 77
    other = ({"max_tokens", "max_completion_tokens"} - {key}).pop()
    assert other not in body


@pytest.mark.parametrize(("model", "window"), [
    ("gpt-4o", 128_000), ("gpt-4o-mini-2024-07-18", 128_000), ("gpt-4.1-nano", 1_047_576),
    ("o1-mini", 128_000), ("o3", 200_000), ("o4-mini-high", 200_000), ("gpt-4", 8_192),
    ("openai/gpt-4.1", 1_047_576), ("claude-opus-4-1", 200_000), ("llama3.1:8b", 128_000),
])
def test_context_windows(model: str, window: int) -> None:
    assert openai_wire.context_window(model) == window


def test_plain_text_fixture() -> None:
    events = decode("openai_text.sse")
    text = "".join(e.text for e in events if isinstance(e, TextDelta))
    assert text == "The workspace holds hello.txt and src/ — café ☕."
    assert events[-2:] == [UsageEvent(412, 14), StopEvent("end_turn")]


def test_parallel_calls_with_interleaved_deltas_are_assembled_by_index() -> None:
    events = decode("openai_parallel_tool_calls.sse")
    calls = [e.call for e in events if isinstance(e, ToolCallEvent)]
    assert [(c.id, c.name, c.arguments) for c in calls] == [
        ("call_4hT0mW2qZ8yR6pN1bV3cX5sA", "read", {"path": "src/main.py", "limit": 40}),
        ("call_9Lk2fD7gH1jQ3wE5rT8yU0iO", "grep", {"pattern": "def main\\(", "path": "src"}),
    ]


def test_vllm_cumulative_usage_counts_once_and_reasoning_is_a_thought() -> None:
    events = decode("openai_vllm_continuous_usage_crlf.sse")
    assert events == [ThoughtDelta("The user wants a greeting."), TextDelta("Hello"),
                      TextDelta("!"), UsageEvent(57, 8), StopEvent("max_tokens")]


def test_calls_without_index_and_stop_finish_reason() -> None:
    # Older Ollama / llama.cpp: no `index`, whole calls per delta, finish_reason "stop".
    def call(call_id: str, name: str, args: str) -> dict[str, object]:
        return {"id": call_id, "type": "function", "function": {"name": name, "arguments": args}}

    events = decode_chunks(
        {"choices": [{"index": 0, "delta": {"tool_calls": [call("a", "read", '{"path":"x"}'),
                                                           call("b", "read", '{"path":"y"}')]}}]},
        {"choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]},
    )
    assert [e.call.arguments for e in events if isinstance(e, ToolCallEvent)] == [
        {"path": "x"}, {"path": "y"}]
    assert events[-1] == StopEvent("tool_use")


def test_missing_call_id_gets_one_and_content_filter_is_a_refusal() -> None:
    events = decode_chunks(
        {"choices": [{"index": 0, "delta": {"tool_calls": [
            {"index": 0, "function": {"name": "read", "arguments": {"path": "x"}}}]}}]},
        {"choices": [{"index": 0, "delta": {}, "finish_reason": "content_filter"}]},
    )
    call = next(e.call for e in events if isinstance(e, ToolCallEvent))
    assert call.id.startswith("call_") and call.arguments == {"path": "x"}
    assert events[-1] == StopEvent("refusal")


def test_refusal_text_is_shown() -> None:
    events = decode_chunks(
        {"choices": [{"index": 0, "delta": {"refusal": "I can't help with that."}}]},
        {"choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]},
    )
    assert events == [TextDelta("I can't help with that."), StopEvent("end_turn")]


def test_error_object_inside_the_stream() -> None:
    decoder = openai_wire.StreamDecoder()
    with pytest.raises(ProviderError, match=r"mid-stream: The server had an error.*server_error"):
        decoder.feed(SSEEvent(json.dumps(
            {"error": {"message": "The server had an error", "type": "server_error"}})))


def test_bad_json_in_a_data_line() -> None:
    with pytest.raises(ProviderError, match="malformed stream: a data line is not JSON"):
        openai_wire.StreamDecoder().feed(SSEEvent('{"choices": [{"delta": {"content": "Hel'))


def test_stream_that_ends_before_finish_reason_is_a_retryable_error() -> None:
    decoder = openai_wire.StreamDecoder()
    decoder.feed(SSEEvent(json.dumps({"choices": [{"index": 0, "delta": {"content": "Hi"}}]})))
    with pytest.raises(ProviderError, match="ended before the model finished") as info:
        decoder.finish()
    assert info.value.retryable


def test_done_without_finish_reason_is_accepted() -> None:
    events = decode_chunks({"choices": [{"index": 0, "delta": {"content": "Hi"}}]})
    assert events == [TextDelta("Hi"), StopEvent("end_turn")]


@pytest.mark.parametrize(("body", "expected"), [
    (b'{"error": {"message": "Incorrect API key provided", "type": "invalid_request_error",'
     b' "code": "invalid_api_key"}}', "Incorrect API key provided (invalid_api_key)"),
    (b'{"error": "model \\"llama9\\" not found, try pulling it first"}',
     'model "llama9" not found, try pulling it first'),
    (b'{"object": "error", "message": "max_tokens is too large", "type": "BadRequestError"}',
     "max_tokens is too large (BadRequestError)"),
    (b"<html>502 Bad Gateway</html>", "<html>502 Bad Gateway</html>"),
])
def test_error_bodies_of_compatible_servers(body: bytes, expected: str) -> None:
    assert openai_wire.error_message(body) == expected


def test_openrouter_reports_its_cost_and_cached_tokens() -> None:
    events = decode("openai_openrouter_usage_cost.sse")
    text = "".join(e.text for e in events if isinstance(e, TextDelta))
    assert text == "Priced by the router."
    assert events[-2:] == [
        UsageEvent(1480, 6, cache_read_tokens=1024, cost=0.0001446), StopEvent("end_turn"),
    ]


def test_cached_tokens_without_a_cost_leave_the_cost_unknown() -> None:
    events = decode("openai_usage_cached.sse")
    assert events[-2] == UsageEvent(3000, 500, cache_read_tokens=2000, cost=None)


@pytest.mark.parametrize("cost", [-1, "0.5", True, None, {"amount": 1}, [1]])
def test_a_cost_that_is_not_a_real_amount_is_dropped(cost: object) -> None:
    usage = {"prompt_tokens": 10, "completion_tokens": 2, "cost": cost}
    chunk = {"choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}], "usage": usage}
    events = decode_chunks(chunk)
    assert events[-2] == UsageEvent(10, 2, cost=None)
