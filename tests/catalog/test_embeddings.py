"""Embeddings from an OpenAI-compatible endpoint (a real HTTP server on 127.0.0.1 replaying an
answer in OpenAI's wire format), the fallback to BM25 and the answer checks."""

from __future__ import annotations

import logging
from collections.abc import Iterator
from pathlib import Path

import orjson
import pytest

from acpd.providers.base import Message
from acpd.tools.catalog import CatalogBuilder, CatalogConfig, CatalogState, make_builder
from acpd.tools.catalog.embeddings import EmbeddingClient, EmbeddingError, parse_response
from tests.catalog.catalog100 import specs
from tests.providers.fake_server import FakeLLMServer, Reply

pytestmark = pytest.mark.anyio

FIXTURE = Path(__file__).resolve().parent.parent / "fixtures" / "catalog" / "openai_embeddings.json"
NAMES = ["kubectl_scale", "calendar_create_event", "mail_send", "git_log"]
ENTRIES = [(s.name, s) for s in specs() if s.name in NAMES]
QUERY = "Schedule a 30 minute meeting with alice@example.com tomorrow at 10"
KEY = "sk-embed-secret-123"


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture
def server() -> Iterator[FakeLLMServer]:
    fake = FakeLLMServer()
    fake.start()
    try:
        yield fake
    finally:
        fake.stop()


def builder(server: FakeLLMServer, timeout: float = 10.0, top_k: int = 1) -> CatalogBuilder:
    config = CatalogConfig.model_validate({"enabled": True, "top_k": top_k,
                                           "min_description_words": 0})
    return CatalogBuilder(config, EmbeddingClient("text-embedding-3-small",
                                                  f"{server.url}/v1", KEY, timeout))


def answer() -> Reply:
    return Reply(body=FIXTURE.read_bytes(), content_type="application/json")


async def test_ranked_by_the_endpoints_vectors_and_cached(server: FakeLLMServer) -> None:
    server.queue(answer())
    b = builder(server)
    state = CatalogState()
    history = [Message("user", QUERY)]
    tools = await b.build(ENTRIES, history, state)
    # BM25 finds no word of this request in these tools; the vectors do.
    assert [t.name for t in tools] == ["calendar_create_event"]
    assert state.last is not None and state.last.how == "embeddings (text-embedding-3-small)"
    (request,) = server.requests
    assert request.path == "/v1/embeddings"
    assert request.headers["authorization"] == f"Bearer {KEY}"
    body = request.json
    assert body["model"] == "text-embedding-3-small" and body["encoding_format"] == "float"
    assert body["input"] == [QUERY, *(f"{n}: {s.description}" for n, s in ENTRIES)]
    # The next round of the turn: the same query and tools need no request at all.
    again = await b.build(ENTRIES, history, CatalogState())
    assert [t.name for t in again] == ["calendar_create_event"]
    assert len(server.requests) == 1


@pytest.mark.parametrize("reply", [
    Reply(500, body=b'{"error": {"message": "boom ' + KEY.encode() + b'"}}',
          content_type="application/json"),
    Reply(body=b"not json", content_type="application/json"),
    Reply(body=b'{"data": []}', content_type="application/json"),
])
async def test_a_failing_endpoint_falls_back_to_bm25_and_pauses(
    server: FakeLLMServer, reply: Reply, caplog: pytest.LogCaptureFixture
) -> None:
    server.queue(reply)
    b = builder(server, top_k=2)
    state = CatalogState()
    with caplog.at_level(logging.WARNING, "acpd.catalog"):
        tools = await b.build(ENTRIES, [Message("user", "scale the deployment")], state)
    assert [t.name for t in tools] == ["kubectl_scale"]  # the only tool sharing a word
    assert state.last is not None and state.last.how == "BM25"
    assert "embeddings failed" in state.status_line()
    assert KEY not in caplog.text and KEY not in state.status_line()
    await b.build(ENTRIES, [Message("user", "scale it")], state)
    assert len(server.requests) == 1  # paused: no new request for a while
    assert "paused" in state.status_line()


async def test_a_stalled_endpoint_times_out(server: FakeLLMServer) -> None:
    server.queue(Reply(body=b'{"data": [', hold=True))
    client = EmbeddingClient("m", f"{server.url}/v1", None, timeout=0.5)
    with pytest.raises(EmbeddingError, match="timed out"):
        await client.embed(["x"])
    assert "authorization" not in server.requests[0].headers


async def test_unreachable_endpoint() -> None:
    client = EmbeddingClient("m", "http://127.0.0.1:9/v1", None, timeout=2)
    with pytest.raises(EmbeddingError):
        await client.embed(["x"])


def vectors(*items: object) -> bytes:
    return orjson.dumps({"data": list(items)})


@pytest.mark.parametrize(("raw", "problem"), [
    (vectors({"index": 0, "embedding": [1, 0]}), "expected 2"),
    (vectors({"index": 0, "embedding": [1, 0]}, {"index": 0, "embedding": [0, 1]}), "index"),
    (vectors({"index": 0, "embedding": [1, 0]}, {"index": 5, "embedding": [0, 1]}), "index"),
    (vectors({"index": 0, "embedding": [1, 0]}, {"index": True, "embedding": [0, 1]}), "index"),
    (vectors({"index": 0, "embedding": [1, 0]}, {"index": 1, "embedding": [0, 1, 0]}), "length"),
    (vectors({"index": 0, "embedding": [1, 0]}, {"index": 1, "embedding": [0, 0]}), "zeros"),
    (vectors({"index": 0, "embedding": [1, 0]}, {"index": 1, "embedding": ["a", 1]}), "finite"),
    (vectors({"index": 0, "embedding": [1, 0]}, {"index": 1, "embedding": [True, 1]}), "finite"),
    (vectors({"index": 0, "embedding": [1, 0]}, {"index": 1, "embedding": []}), "finite"),
    (b'{"data": [{"index": 0, "embedding": [1e999, 0]}, {"index": 1, "embedding": [0, 1]}]}',
     "finite|JSON"),
    (b"[]", "expected 2"),
])
def test_bad_answers_are_refused(raw: bytes, problem: str) -> None:
    with pytest.raises(EmbeddingError, match=problem):
        parse_response(raw, 2)


def test_out_of_order_answers_are_matched_by_index() -> None:
    raw = vectors({"index": 1, "embedding": [0, 2]}, {"index": 0, "embedding": [3, 0]})
    assert parse_response(raw, 2) == [[1.0, 0.0], [0.0, 1.0]]


def test_make_builder_defaults_to_the_openai_provider(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MY_KEY", "sk-x")
    config = CatalogConfig.model_validate({"embeddings": {"model": "e5"}})
    b = make_builder(config, openai_base_url="http://127.0.0.1:1/v1", openai_key_env="MY_KEY")
    assert b.embedder is not None and b.embedder.url == "http://127.0.0.1:1/v1/embeddings"
    assert "sk-x" not in repr(b.embedder)
    assert make_builder(CatalogConfig()).embedder is None
