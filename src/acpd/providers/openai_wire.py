"""OpenAI chat-completions wire format: request encoding and a streaming decoder.

Sans-io. The decoder takes server-sent events and returns provider events; it copes with
what OpenAI-compatible servers actually send, not only with OpenAI:

- tool calls arrive as deltas keyed by `index`; `id`, `type` and `name` only in the first
  delta of each call, the argument text split anywhere (several calls may interleave);
- Ollama and llama.cpp send a whole call in one delta, some builds without `index`, and
  older ones end a tool-calling turn with `finish_reason: "stop"`;
- usage arrives in a final chunk with empty `choices` when `include_usage` is on; vLLM can
  repeat cumulative usage in every chunk, so only the last one counts;
- reasoning text comes as `reasoning_content` (vLLM, llama.cpp, DeepSeek) or `reasoning`
  (Ollama, OpenRouter);
- an error can arrive inside a 200 stream as `{"error": {...}}`.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass, field
from typing import Any

import orjson

from acpd.providers.base import (
    Message,
    ModelEvent,
    ModelRequest,
    ModelStop,
    ProviderError,
    StopEvent,
    TextDelta,
    ThoughtDelta,
    ToolCallEvent,
    ToolCallRequest,
    UsageEvent,
    parse_arguments,
)
from acpd.providers.sse import SSEEvent

DEFAULT_CONTEXT_WINDOW = 128_000
# Longest prefix wins; names are compared after any `vendor/` prefix (OpenRouter style).
CONTEXT_WINDOWS: dict[str, int] = {
    "gpt-3.5-turbo": 16_385,
    "gpt-4": 8_192,
    "gpt-4-32k": 32_768,
    "gpt-4-turbo": 128_000,
    "gpt-4o": 128_000,
    "gpt-4.1": 1_047_576,
    "gpt-4.5": 128_000,
    "gpt-5": 400_000,
    "o1": 200_000,
    "o1-mini": 128_000,
    "o1-preview": 128_000,
    "o3": 200_000,
    "o3-mini": 200_000,
    "o4-mini": 200_000,
    "claude-": 200_000,
}
# Reasoning models reject `max_tokens`; everything else (Ollama, vLLM, llama.cpp) knows it.
_COMPLETION_TOKENS_PREFIXES = ("o1", "o3", "o4", "gpt-5")

STOP_REASONS: dict[str, ModelStop] = {
    "stop": "end_turn",
    "tool_calls": "tool_use",
    "function_call": "tool_use",
    "length": "max_tokens",
    "content_filter": "refusal",
}
DONE = "[DONE]"


def context_window(model: str, table: dict[str, int] = CONTEXT_WINDOWS) -> int:
    """The context window of a known model family, else DEFAULT_CONTEXT_WINDOW."""
    name = model.rsplit("/", 1)[-1].lower()
    best = ""
    for prefix in table:
        if name.startswith(prefix) and len(prefix) > len(best):
            best = prefix
    return table[best] if best else DEFAULT_CONTEXT_WINDOW


# --- request ---------------------------------------------------------------------------------


def encode_request(model: str, request: ModelRequest) -> bytes:
    """The JSON body of a streaming chat-completions call."""
    body: dict[str, Any] = {
        "model": model,
        "messages": encode_messages(request.system, request.messages),
        "stream": True,
        "stream_options": {"include_usage": True},
    }
    name = model.rsplit("/", 1)[-1].lower()
    limit_key = (
        "max_completion_tokens" if name.startswith(_COMPLETION_TOKENS_PREFIXES) else "max_tokens"
    )
    body[limit_key] = request.max_tokens
    if request.tools:
        # An empty `tools` list is rejected by some servers, so it is left out instead.
        body["tools"] = [
            {
                "type": "function",
                "function": {
                    "name": tool.name,
                    "description": tool.description,
                    "parameters": tool.parameters,
                },
            }
            for tool in request.tools
        ]
    return orjson.dumps(body)


def encode_messages(system: str, messages: list[Message]) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    if system:
        out.append({"role": "system", "content": system})
    for message in messages:
        if message.role == "user":
            out.append({"role": "user", "content": _user_content(message)})
        elif message.role == "tool":
            call_id = message.tool_call_id or ""
            out.append({"role": "tool", "tool_call_id": call_id, "content": message.text})
        elif message.text or message.tool_calls:
            entry: dict[str, Any] = {"role": "assistant", "content": message.text or None}
            if message.tool_calls:
                entry["tool_calls"] = [_encode_call(call) for call in message.tool_calls]
            out.append(entry)
    return out


def _user_content(message: Message) -> str | list[dict[str, Any]]:
    """Plain text, or text and `image_url` parts with data URLs (the form every OpenAI-
    compatible server with vision takes: OpenAI, vLLM, Ollama, llama.cpp, OpenRouter)."""
    if not message.images:
        return message.text
    parts: list[dict[str, Any]] = []
    if message.text:
        parts.append({"type": "text", "text": message.text})
    for image in message.images:
        url = f"data:{image.mime_type};base64,{image.data}"
        parts.append({"type": "image_url", "image_url": {"url": url}})
    return parts


def _encode_call(call: ToolCallRequest) -> dict[str, Any]:
    if call.arguments is None:
        # Ollama and vLLM parse the arguments of past calls and answer 400 to text that is
        # not JSON, which would wedge the session; the tool result already tells the model
        # what was wrong with what it sent.
        arguments = "{}"
    else:
        arguments = call.raw_arguments or orjson.dumps(call.arguments).decode()
    return {
        "id": call.id,
        "type": "function",
        "function": {"name": call.name, "arguments": arguments},
    }


# --- errors ----------------------------------------------------------------------------------


def error_message(body: bytes) -> str:
    """The human part of an error body, in any of the shapes compatible servers use."""
    try:
        data = orjson.loads(body)
    except orjson.JSONDecodeError:
        return _snippet(body.decode("utf-8", errors="replace"))
    return describe_error(data) or _snippet(body.decode("utf-8", errors="replace"))


def describe_error(data: Any) -> str | None:
    if not isinstance(data, dict):
        return None
    error = data.get("error", data)
    if isinstance(error, str):
        return _snippet(error)
    if not isinstance(error, dict):
        return None
    message = error.get("message") or error.get("detail")
    if not isinstance(message, str | list) or not message:
        return None
    kind = error.get("code") or error.get("type")
    text = _snippet(str(message))
    return f"{text} ({kind})" if isinstance(kind, str) and kind else text


def _snippet(text: str, limit: int = 500) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[:limit] + "..."


# --- stream ----------------------------------------------------------------------------------


@dataclass(slots=True)
class _PartialCall:
    id: str = ""
    name: str = ""
    arguments: list[str] = field(default_factory=list)


class StreamDecoder:
    """Chat-completion chunks in, provider events out; the StopEvent is always last."""

    def __init__(self) -> None:
        self._calls: dict[int, _PartialCall] = {}
        self._emitted_calls = 0
        self._finish: str | None = None
        self._usage: UsageEvent | None = None
        self._done = False

    def feed(self, sse: SSEEvent) -> list[ModelEvent]:
        """Decode one event; raises ProviderError for an error event or malformed data."""
        if self._done:
            return []
        if sse.data.strip() == DONE:
            return self._complete()
        try:
            chunk = orjson.loads(sse.data)
        except orjson.JSONDecodeError as exc:
            raise ProviderError(
                f"malformed stream: a data line is not JSON ({exc.msg}): {_snippet(sse.data, 120)}"
            ) from None
        if not isinstance(chunk, dict):
            raise ProviderError(
                f"malformed stream: expected a JSON object, got {type(chunk).__name__}"
            )
        if sse.event == "error" or chunk.get("error"):
            message = describe_error(chunk) or _snippet(sse.data)
            raise ProviderError(f"the server reported an error mid-stream: {message}")
        usage = chunk.get("usage")
        if isinstance(usage, dict):
            self._usage = usage_event(usage)
        events: list[ModelEvent] = []
        choices = chunk.get("choices")
        if isinstance(choices, list):
            for choice in choices:
                # We never ask for n > 1; a server that sends other choices is ignored.
                if isinstance(choice, dict) and choice.get("index", 0) == 0:
                    self._choice(choice, events)
        return events

    def finish(self) -> list[ModelEvent]:
        """The body ended. Raises ProviderError (retryable) if the model had not finished."""
        if self._done:
            return []
        if self._finish is None:
            raise ProviderError(
                "the stream ended before the model finished (no finish_reason)", retryable=True
            )
        return self._complete()

    def _choice(self, choice: dict[str, Any], events: list[ModelEvent]) -> None:
        delta = choice.get("delta")
        if isinstance(delta, dict):
            for key in ("reasoning_content", "reasoning"):
                thought = delta.get(key)
                if isinstance(thought, str) and thought:
                    events.append(ThoughtDelta(thought))
                    break
            for key in ("content", "refusal"):
                # A refusal is text the user should see, in place of the answer.
                content = delta.get(key)
                if isinstance(content, str) and content:
                    events.append(TextDelta(content))
            calls = delta.get("tool_calls")
            if isinstance(calls, list):
                for call in calls:
                    if isinstance(call, dict):
                        self._call_delta(call)
        finish = choice.get("finish_reason")
        if isinstance(finish, str) and finish:
            self._finish = finish
            events.extend(self._flush_calls())

    def _call_delta(self, delta: dict[str, Any]) -> None:
        index = delta.get("index")
        if not isinstance(index, int):
            # No index (some llama.cpp and Ollama builds): a new id starts a new call,
            # anything else continues the latest one.
            call_id = delta.get("id")
            latest = max(self._calls, default=-1)
            fresh = bool(call_id) and all(c.id != call_id for c in self._calls.values())
            index = latest + 1 if fresh or latest < 0 else latest
        partial = self._calls.setdefault(index, _PartialCall())
        if isinstance(delta.get("id"), str) and delta["id"] and not partial.id:
            partial.id = delta["id"]
        function = delta.get("function")
        if isinstance(function, dict):
            name = function.get("name")
            if isinstance(name, str) and name and not partial.name:
                partial.name = name
            arguments = function.get("arguments")
            if isinstance(arguments, str):
                partial.arguments.append(arguments)
            elif isinstance(arguments, dict):
                # A few servers send the arguments already parsed.
                partial.arguments.append(orjson.dumps(arguments).decode())

    def _flush_calls(self) -> list[ModelEvent]:
        events: list[ModelEvent] = []
        for index in sorted(self._calls):
            partial = self._calls[index]
            call_id = partial.id or f"call_{uuid.uuid4().hex[:24]}"
            call = parse_arguments(call_id, partial.name, "".join(partial.arguments))
            events.append(ToolCallEvent(call))
        self._emitted_calls += len(self._calls)
        self._calls.clear()
        return events

    def _complete(self) -> list[ModelEvent]:
        self._done = True
        events = self._flush_calls()
        if self._usage is not None:
            events.append(self._usage)
        reason = STOP_REASONS.get(self._finish or "", "end_turn")
        if self._emitted_calls and reason == "end_turn":
            reason = "tool_use"
        events.append(StopEvent(reason))
        return events


def usage_event(usage: dict[str, Any]) -> UsageEvent:
    """A `usage` object: token counts, cached prompt tokens (`prompt_tokens_details`), and
    the cost when the server reports one (OpenRouter: `cost`, in USD credits)."""
    details = usage.get("prompt_tokens_details")
    cached = _int(details.get("cached_tokens")) if isinstance(details, dict) else 0
    return UsageEvent(
        _int(usage.get("prompt_tokens")), _int(usage.get("completion_tokens")),
        cache_read_tokens=cached, cost=reported_cost(usage.get("cost")),
    )


def reported_cost(value: Any) -> float | None:
    """A cost a server reported: a finite, non-negative number, else None (never guessed)."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    cost = float(value)
    return cost if 0 <= cost < float("inf") else None


def _int(value: Any) -> int:
    return value if isinstance(value, int) and value >= 0 else 0
