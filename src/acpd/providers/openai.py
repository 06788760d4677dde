"""OpenAI-compatible chat completions (OpenAI, Ollama, vLLM, llama.cpp, LM Studio, ...).

The wire format is in `openai_wire`, the HTTP loop in `transport`; this class only binds them
to one model and one endpoint.
"""

from __future__ import annotations

from collections.abc import AsyncGenerator

import anyio

from acpd.providers import openai_wire
from acpd.providers.base import ModelEvent, ModelRequest
from acpd.providers.transport import HTTPCall, Sleep, stream_events


class OpenAIProvider:
    """One model behind an OpenAI-compatible `/chat/completions` endpoint."""

    def __init__(
        self,
        model: str,
        *,
        base_url: str,
        api_key: str | None,
        timeout: float = 120.0,
        max_retries: int = 2,
    ) -> None:
        self.model = model
        self.name = f"openai:{model}"
        self.context_window = openai_wire.context_window(model)
        self.url = base_url.rstrip("/") + "/chat/completions"
        self.timeout = timeout
        self.max_retries = max_retries
        self._api_key = api_key or None
        self.sleep: Sleep = anyio.sleep
        """Waits between retries; replaceable so tests can see the delays without waiting."""

    def __repr__(self) -> str:
        # Never the key.
        return f"OpenAIProvider({self.model!r}, url={self.url!r})"

    def headers(self) -> dict[str, str]:
        headers = {
            "content-type": "application/json",
            "accept": "text/event-stream",
            # Compression makes some servers and proxies hold back small SSE chunks.
            "accept-encoding": "identity",
        }
        if self._api_key:
            # Local servers (Ollama, llama.cpp) need no key; sending none keeps a stray
            # $OPENAI_API_KEY from leaking to whatever the base URL points at.
            headers["authorization"] = f"Bearer {self._api_key}"
        return headers

    async def stream(self, request: ModelRequest) -> AsyncGenerator[ModelEvent, None]:
        """Stream one call. Raises ProviderError; closing or cancelling closes the response."""
        call = HTTPCall(
            label=self.name,
            url=self.url,
            headers=self.headers(),
            body=openai_wire.encode_request(self.model, request),
            timeout=self.timeout,
            max_retries=self.max_retries,
            secret=self._api_key,
        )
        async for event in stream_events(
            call, openai_wire.StreamDecoder, openai_wire.error_message, sleep=self.sleep
        ):
            yield event
