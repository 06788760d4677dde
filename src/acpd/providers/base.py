"""The provider interface: a model call is a stream of events.

Messages and tool calls are plain dataclasses so sessions can store and reload them without
knowing which provider produced them.
"""

from __future__ import annotations

from collections.abc import AsyncGenerator
from dataclasses import asdict, dataclass, field
from typing import Any, Literal, Protocol


@dataclass(slots=True)
class ToolDefinition:
    name: str
    description: str
    parameters: dict[str, Any]


@dataclass(slots=True)
class ToolCallRequest:
    id: str
    name: str
    arguments: dict[str, Any] | None
    """None when the model's argument text was not a JSON object (see `invalid_json`)."""
    raw_arguments: str = ""
    invalid_json: str | None = None


@dataclass(frozen=True, slots=True)
class ImagePart:
    """An image the user put in a prompt: its MIME type and base64 data, as checked by
    daemon/images.py (a supported type, data that decodes and matches it, under the cap)."""

    mime_type: str
    data: str


@dataclass(slots=True)
class Message:
    role: Literal["user", "assistant", "tool"]
    text: str = ""
    tool_calls: list[ToolCallRequest] = field(default_factory=list)
    tool_call_id: str | None = None
    is_error: bool = False
    images: list[ImagePart] = field(default_factory=list)
    """User messages only: sent after the text, in each provider's wire format."""

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Message:
        calls = [ToolCallRequest(**c) for c in data.get("tool_calls", [])]
        images = [ImagePart(**i) for i in data.get("images", [])]
        return cls(
            role=data["role"],
            text=data.get("text", ""),
            tool_calls=calls,
            tool_call_id=data.get("tool_call_id"),
            is_error=data.get("is_error", False),
            images=images,
        )


@dataclass(slots=True)
class ModelRequest:
    system: str
    messages: list[Message]
    tools: list[ToolDefinition]
    max_tokens: int = 4096


@dataclass(frozen=True, slots=True)
class TextDelta:
    text: str


@dataclass(frozen=True, slots=True)
class ThoughtDelta:
    text: str


@dataclass(frozen=True, slots=True)
class ToolCallEvent:
    call: ToolCallRequest


@dataclass(frozen=True, slots=True)
class UsageEvent:
    input_tokens: int
    """Every prompt token, cached ones included (they fill the context all the same)."""
    output_tokens: int
    cache_read_tokens: int = 0
    """Of input_tokens, those read from the provider's prompt cache."""
    cache_write_tokens: int = 0
    """Of input_tokens, those written to the prompt cache (Anthropic bills them apart)."""
    cost: float | None = None
    """What the provider says this call cost, in USD (OpenRouter's `usage.cost`); None when
    it did not say. Never estimated here: daemon/usage.py prices tokens from a table."""


ModelStop = Literal["end_turn", "tool_use", "max_tokens", "refusal"]


@dataclass(frozen=True, slots=True)
class StopEvent:
    reason: ModelStop


ModelEvent = TextDelta | ThoughtDelta | ToolCallEvent | UsageEvent | StopEvent


class ProviderError(Exception):
    """A model call failed; `retryable` says whether the same call may succeed later."""

    def __init__(self, message: str, *, status: int | None = None, retryable: bool = False):
        super().__init__(message)
        self.status = status
        self.retryable = retryable


class Provider(Protocol):
    name: str
    """`kind:model`, as the user selected it."""
    context_window: int

    def stream(self, request: ModelRequest) -> AsyncGenerator[ModelEvent, None]:
        """Stream one model call. Raises ProviderError; cancellation closes the stream."""
        ...


def parse_arguments(call_id: str, name: str, raw: str) -> ToolCallRequest:
    """Turn a model's argument text into a call; bad JSON is kept for an `invalid_json` result."""
    import orjson

    text = raw.strip() or "{}"
    try:
        value = orjson.loads(text)
    except orjson.JSONDecodeError as exc:
        return ToolCallRequest(call_id, name, None, raw, f"invalid_json: {exc.msg}")
    if not isinstance(value, dict):
        problem = "invalid_json: arguments must be an object"
        return ToolCallRequest(call_id, name, None, raw, problem)
    return ToolCallRequest(call_id, name, value, raw)
