"""Anthropic Messages API, streaming.

The wire format is in `anthropic_wire`, the HTTP loop in `transport`; this class only binds
them to one model and one endpoint.
"""

from __future__ import annotations

from collections.abc import AsyncGenerator

import anyio

from acpd.providers import anthropic_wire
from acpd.providers.base import ModelEvent, ModelRequest
from acpd.providers.transport import HTTPCall, Sleep, stream_events


class AnthropicProvider:
    """One Claude model behind `{base_url}/v1/messages`."""

    def __init__(
        self,
        model: str,
        *,
        base_url: str,
        api_key: str,
        timeout: float = 120.0,
        max_retries: int = 2,
    ) -> None:
        self.model = model
        self.name = f"anthropic:{model}"
        self.context_window = anthropic_wire.context_window(model)
        self.url = anthropic_wire.messages_url(base_url)
        self.timeout = timeout
        self.max_retries = max_retries
        self._api_key = api_key
        self.sleep: Sleep = anyio.sleep
        """Waits between retries; replaceable so tests can see the delays without waiting."""

    def __repr__(self) -> str:
        # Never the key.
        return f"AnthropicProvider({self.model!r}, url={self.url!r})"

    def headers(self) -> dict[str, str]:
        return {
            "content-type": "application/json",
            "accept": "text/event-stream",
            "accept-encoding": "identity",
            "x-api-key": self._api_key,
            "anthropic-version": anthropic_wire.API_VERSION,
        }

    async def stream(self, request: ModelRequest) -> AsyncGenerator[ModelEvent, None]:
        """Stream one call. Raises ProviderError; closing or cancelling closes the response."""
        call = HTTPCall(
            label=self.name,
            url=self.url,
            headers=self.headers(),
            body=anthropic_wire.encode_request(self.model, request),
            timeout=self.timeout,
            max_retries=self.max_retries,
            secret=self._api_key,
        )
        async for event in stream_events(
            call, anthropic_wire.StreamDecoder, anthropic_wire.error_message, sleep=self.sleep
        ):
            yield event
