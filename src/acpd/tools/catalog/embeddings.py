"""Vectors from an OpenAI-compatible `POST {base_url}/embeddings` (OpenAI, Ollama, vLLM, ...).

Request `{"model", "input": [texts], "encoding_format": "float"}`; the answer must hold one
`data[i].embedding` per input (matched by `index`), all of one length, finite numbers. Any
other answer, an HTTP error, a timeout or a body past MAX_BODY_BYTES raises EmbeddingError
with a message that never carries the key. Vectors are returned normalised (cosine = dot).
httpx is imported on the first request.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import orjson

MAX_BODY_BYTES = 32 * 1024 * 1024
MAX_TEXT_CHARS = 4000
MAX_BATCH = 256


class EmbeddingError(Exception):
    pass


class EmbeddingClient:
    def __init__(
        self, model: str, base_url: str, api_key: str | None, timeout: float = 10.0
    ) -> None:
        self.model = model
        self.url = base_url.rstrip("/") + "/embeddings"
        self.timeout = timeout
        self._api_key = api_key or None

    def __repr__(self) -> str:
        return f"EmbeddingClient({self.model!r}, url={self.url!r})"  # never the key

    async def embed(self, texts: Sequence[str]) -> list[list[float]]:
        """One normalised vector per text, in order. Raises EmbeddingError."""
        vectors: list[list[float]] = []
        for start in range(0, len(texts), MAX_BATCH):
            batch = texts[start:start + MAX_BATCH]
            vectors += await self._batch([t[:MAX_TEXT_CHARS] for t in batch])
        return vectors

    async def _batch(self, texts: list[str]) -> list[list[float]]:
        import httpx

        headers = {"content-type": "application/json"}
        if self._api_key:
            headers["authorization"] = f"Bearer {self._api_key}"
        body = orjson.dumps({"model": self.model, "input": texts, "encoding_format": "float"})
        try:
            async with (
                httpx.AsyncClient(timeout=self.timeout) as client,
                client.stream("POST", self.url, headers=headers, content=body) as r,
            ):
                raw = await _read_capped(r)
                status = r.status_code
        except httpx.TimeoutException:
            raise EmbeddingError(f"{self.url} timed out after {self.timeout:g} s") from None
        except (httpx.HTTPError, httpx.InvalidURL, ValueError, OSError) as exc:
            # ValueError: e.g. a key or URL httpx cannot encode; never echo the key.
            raise EmbeddingError(f"{self.url}: {type(exc).__name__}") from None
        if status != 200:
            snippet = _snippet(raw, self._api_key)
            raise EmbeddingError(f"{self.url} answered HTTP {status}: {snippet}")
        return parse_response(raw, len(texts))


async def _read_capped(response: Any) -> bytes:
    chunks: list[bytes] = []
    size = 0
    async for chunk in response.aiter_bytes():
        size += len(chunk)
        if size > MAX_BODY_BYTES:
            raise EmbeddingError(f"the embeddings answer is larger than {MAX_BODY_BYTES} bytes")
        chunks.append(chunk)
    return b"".join(chunks)


def _snippet(raw: bytes, secret: str | None) -> str:
    text = raw[:300].decode("utf-8", "replace").replace("\n", " ")
    return text.replace(secret, "[redacted]") if secret else text


def parse_response(raw: bytes, expected: int) -> list[list[float]]:
    """The vectors of an embeddings answer, in input order. Raises EmbeddingError."""
    try:
        data = orjson.loads(raw)
    except orjson.JSONDecodeError:
        raise EmbeddingError("the embeddings answer is not JSON") from None
    items = data.get("data") if isinstance(data, dict) else None
    if not isinstance(items, list) or len(items) != expected:
        got = len(items) if isinstance(items, list) else "no"
        raise EmbeddingError(f"expected {expected} embeddings, got {got}")
    vectors: list[list[float] | None] = [None] * expected
    size: int | None = None
    for position, item in enumerate(items):
        index = item.get("index", position) if isinstance(item, dict) else None
        vector = item.get("embedding") if isinstance(item, dict) else None
        if isinstance(index, bool) or not isinstance(index, int) or not 0 <= index < expected \
                or vectors[index] is not None:
            raise EmbeddingError(f"data[{position}] has a bad or repeated index")
        vectors[index] = _normalised(vector, position)
        if size is None:
            size = len(vectors[index] or [])
        elif size != len(vectors[index] or []):
            raise EmbeddingError("the embeddings differ in length")
    return [v for v in vectors if v is not None]


def _normalised(vector: Any, position: int) -> list[float]:
    if not isinstance(vector, list) or not vector or not all(
        isinstance(x, int | float) and not isinstance(x, bool) and math.isfinite(x)
        for x in vector
    ):
        raise EmbeddingError(f"data[{position}].embedding is not a list of finite numbers")
    norm = math.sqrt(sum(x * x for x in vector))
    if norm == 0:
        raise EmbeddingError(f"data[{position}].embedding is all zeros")
    return [x / norm for x in vector]


def cosine(a: Sequence[float], b: Sequence[float]) -> float:
    """Of two normalised vectors; 0 when their lengths differ."""
    if len(a) != len(b):
        return 0.0
    return sum(x * y for x, y in zip(a, b, strict=True))
