"""Anthropic Messages API wire format: request encoding and a streaming decoder.

Sans-io. Stream events, in order: `message_start` (input usage), then per content block
`content_block_start` / `content_block_delta`* / `content_block_stop`, then `message_delta`
(stop reason, cumulative output usage) and `message_stop`; `ping` may appear anywhere and
`error` ends the stream. Unknown event and block types are skipped, as the API's versioning
policy asks of clients.
"""

from __future__ import annotations

import re
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
    UsageEvent,
    parse_arguments,
)
from acpd.providers.openai_wire import context_window as _context_window
from acpd.providers.sse import SSEEvent

API_VERSION = "2023-06-01"
_UNSAFE_ID = re.compile(r"[^a-zA-Z0-9_-]")

STOP_REASONS: dict[str, ModelStop] = {
    "end_turn": "end_turn",
    "stop_sequence": "end_turn",
    "pause_turn": "end_turn",
    "tool_use": "tool_use",
    "max_tokens": "max_tokens",
    "model_context_window_exceeded": "max_tokens",
    "refusal": "refusal",
}
# The API's documented error types and the HTTP status each stands for.
ERROR_STATUS: dict[str, int] = {
    "invalid_request_error": 400,
    "authentication_error": 401,
    "billing_error": 402,
    "permission_error": 403,
    "not_found_error": 404,
    "request_too_large": 413,
    "rate_limit_error": 429,
    "api_error": 500,
    "timeout_error": 504,
    "overloaded_error": 529,
}
RETRYABLE_ERRORS = frozenset({"rate_limit_error", "api_error", "timeout_error", "overloaded_error"})


def context_window(model: str) -> int:
    """Claude models have a 200k window (1M is an opt-in beta); other models served through an
    Anthropic-compatible endpoint get the shared table's answer."""
    return _context_window(model)


def messages_url(base_url: str) -> str:
    base = base_url.rstrip("/")
    # A base URL copied with its `/v1` (as for OpenAI) must not become `/v1/v1/messages`.
    return f"{base}/messages" if base.endswith("/v1") else f"{base}/v1/messages"


# --- request ---------------------------------------------------------------------------------


def encode_request(model: str, request: ModelRequest) -> bytes:
    """The JSON body of a streaming Messages API call."""
    body: dict[str, Any] = {
        "model": model,
        "max_tokens": request.max_tokens,
        "messages": encode_messages(request.messages),
        "stream": True,
    }
    if request.system:
        body["system"] = request.system
    if request.tools:
        body["tools"] = [
            {"name": t.name, "description": t.description, "input_schema": t.parameters}
            for t in request.tools
        ]
    return orjson.dumps(body)


def encode_messages(messages: list[Message]) -> list[dict[str, Any]]:
    """Map history to alternating user/assistant turns.

    Tool results travel as `tool_result` blocks in a user turn; consecutive messages that map
    to the same role are merged, since the API wants the results of one assistant turn in the
    next single user turn, with the results first.
    """
    out: list[dict[str, Any]] = []
    for message in messages:
        role = "assistant" if message.role == "assistant" else "user"
        blocks = _blocks(message)
        if not blocks:
            # The API rejects empty text blocks and empty turns.
            continue
        if out and out[-1]["role"] == role:
            out[-1]["content"].extend(blocks)
        else:
            out.append({"role": role, "content": blocks})
    return out


def _blocks(message: Message) -> list[dict[str, Any]]:
    if message.role == "tool":
        block: dict[str, Any] = {
            "type": "tool_result",
            "tool_use_id": _tool_id(message.tool_call_id or ""),
            "content": message.text or "(no output)",
        }
        if message.is_error:
            block["is_error"] = True
        return [block]
    blocks: list[dict[str, Any]] = []
    for image in message.images:
        # Images before the text, as Anthropic's vision guide advises.
        source = {"type": "base64", "media_type": image.mime_type, "data": image.data}
        blocks.append({"type": "image", "source": source})
    if message.text:
        blocks.append({"type": "text", "text": message.text})
    for call in message.tool_calls:
        # `input` must be an object; a call whose text was not JSON is sent as `{}` and its
        # tool result says what was wrong.
        blocks.append(
            {
                "type": "tool_use",
                "id": _tool_id(call.id),
                "name": call.name,
                "input": call.arguments or {},
            }
        )
    return blocks


def _tool_id(call_id: str) -> str:
    # The API wants ids matching ^[a-zA-Z0-9_-]+$; calls recorded from other providers may
    # not, and both ends of a pair go through here, so they still match.
    return _UNSAFE_ID.sub("_", call_id) or "call"


# --- errors ----------------------------------------------------------------------------------


def error_message(body: bytes) -> str:
    """The human part of an error body (`{"type": "error", "error": {...}}`)."""
    try:
        data = orjson.loads(body)
    except orjson.JSONDecodeError:
        return _snippet(body.decode("utf-8", errors="replace"))
    error = data.get("error") if isinstance(data, dict) else None
    if isinstance(error, dict) and isinstance(error.get("message"), str):
        kind = error.get("type")
        text = _snippet(error["message"])
        return f"{text} ({kind})" if isinstance(kind, str) and kind else text
    return _snippet(body.decode("utf-8", errors="replace"))


def _snippet(text: str, limit: int = 500) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[:limit] + "..."


# --- stream ----------------------------------------------------------------------------------


@dataclass(slots=True)
class _Block:
    kind: str
    id: str = ""
    name: str = ""
    parts: list[str] = field(default_factory=list)
    initial_input: Any = None


class StreamDecoder:
    """Messages API stream events in, provider events out; the StopEvent is always last."""

    def __init__(self) -> None:
        self._blocks: dict[int, _Block] = {}
        self._input_tokens = 0
        self._output_tokens = 0
        self._cache_read = 0
        self._cache_write = 0
        self._stop: str | None = None
        self._done = False

    def feed(self, sse: SSEEvent) -> list[ModelEvent]:
        """Decode one event; raises ProviderError for an `error` event or malformed data."""
        if self._done:
            return []
        try:
            data = orjson.loads(sse.data)
        except orjson.JSONDecodeError as exc:
            raise ProviderError(
                f"malformed stream: a data line is not JSON ({exc.msg}): {_snippet(sse.data, 120)}"
            ) from None
        if not isinstance(data, dict):
            raise ProviderError(
                f"malformed stream: expected a JSON object, got {type(data).__name__}"
            )
        kind = data.get("type") or sse.event
        handler = getattr(self, f"_on_{kind}", None) if isinstance(kind, str) else None
        if handler is None:
            return []
        events: list[ModelEvent] = handler(data)
        return events

    def finish(self) -> list[ModelEvent]:
        """The body ended. Raises ProviderError (retryable) if `message_stop` never came."""
        if self._done:
            return []
        raise ProviderError("the stream ended before message_stop", retryable=True)

    def _on_message_start(self, data: dict[str, Any]) -> list[ModelEvent]:
        message = data.get("message")
        usage = message.get("usage") if isinstance(message, dict) else None
        if isinstance(usage, dict):
            self._usage(usage)
        return []

    def _on_content_block_start(self, data: dict[str, Any]) -> list[ModelEvent]:
        block = data.get("content_block")
        index = data.get("index")
        if not isinstance(block, dict) or not isinstance(index, int):
            raise ProviderError("malformed stream: content_block_start without a block")
        kind = str(block.get("type", ""))
        self._blocks[index] = _Block(
            kind, str(block.get("id", "")), str(block.get("name", "")),
            initial_input=block.get("input"),
        )
        if kind == "text" and block.get("text"):
            return [TextDelta(str(block["text"]))]
        if kind == "thinking" and block.get("thinking"):
            return [ThoughtDelta(str(block["thinking"]))]
        return []

    def _on_content_block_delta(self, data: dict[str, Any]) -> list[ModelEvent]:
        delta = data.get("delta")
        if not isinstance(delta, dict):
            return []
        kind = delta.get("type")
        if kind == "text_delta" and delta.get("text"):
            return [TextDelta(str(delta["text"]))]
        if kind == "thinking_delta" and delta.get("thinking"):
            return [ThoughtDelta(str(delta["thinking"]))]
        if kind == "input_json_delta":
            block = self._blocks.get(data.get("index", -1))
            if block is None:
                raise ProviderError("malformed stream: input_json_delta for an unknown block")
            block.parts.append(str(delta.get("partial_json", "")))
        # signature_delta and citations_delta carry nothing we keep.
        return []

    def _on_content_block_stop(self, data: dict[str, Any]) -> list[ModelEvent]:
        block = self._blocks.pop(data.get("index", -1), None)
        if block is None or block.kind != "tool_use":
            return []
        raw = "".join(block.parts)
        if not block.parts and isinstance(block.initial_input, dict) and block.initial_input:
            raw = orjson.dumps(block.initial_input).decode()
        return [ToolCallEvent(parse_arguments(block.id, block.name, raw))]

    def _on_message_delta(self, data: dict[str, Any]) -> list[ModelEvent]:
        delta = data.get("delta")
        if isinstance(delta, dict) and isinstance(delta.get("stop_reason"), str):
            self._stop = delta["stop_reason"]
        usage = data.get("usage")
        if isinstance(usage, dict):
            self._usage(usage)
        return []

    def _on_message_stop(self, data: dict[str, Any]) -> list[ModelEvent]:
        self._done = True
        return [
            UsageEvent(self._input_tokens, self._output_tokens, self._cache_read,
                       self._cache_write),
            StopEvent(STOP_REASONS.get(self._stop or "", "end_turn")),
        ]

    def _on_error(self, data: dict[str, Any]) -> list[ModelEvent]:
        error = data.get("error")
        kind = message = ""
        if isinstance(error, dict):
            kind, message = str(error.get("type", "")), str(error.get("message", ""))
        text = _snippet(message) or "no message"
        raise ProviderError(
            f"the API reported an error mid-stream: {text} ({kind or 'unknown error'})",
            status=ERROR_STATUS.get(kind),
            retryable=kind in RETRYABLE_ERRORS,
        )

    def _usage(self, usage: dict[str, Any]) -> None:
        # Usage counts are cumulative; cached prompt tokens are reported apart from
        # `input_tokens` but fill the context window all the same.
        if isinstance(usage.get("input_tokens"), int):
            self._input_tokens = sum(_int(usage.get(key)) for key in _INPUT_KEYS)
            self._cache_read = _int(usage.get("cache_read_input_tokens"))
            self._cache_write = _int(usage.get("cache_creation_input_tokens"))
        if isinstance(usage.get("output_tokens"), int):
            self._output_tokens = _int(usage.get("output_tokens"))


_INPUT_KEYS = ("input_tokens", "cache_creation_input_tokens", "cache_read_input_tokens")


def _int(value: Any) -> int:
    return value if isinstance(value, int) and value >= 0 else 0
