"""Filtering by an embeddings endpoint through the real daemon: `acpd serve` asks a local HTTP
server for vectors in OpenAI's wire format and sends the model the closest tool; when the
endpoint fails the request falls back to BM25 and /status says so."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.catalog.e2e import names, requests, setup, status
from tests.e2e.client import RecordingClient
from tests.e2e.harness import acpd
from tests.providers.fake_server import FakeLLMServer, Reply

pytestmark = [pytest.mark.anyio, pytest.mark.slow]

TOOLS = ["read", "list_directory", "grep", "bash"]  # the catalog order of these four
QUERY = "make the build green again"  # no word of it is in these tools' descriptions


@pytest.fixture
def server() -> Iterator[FakeLLMServer]:
    fake = FakeLLMServer()
    fake.start()
    try:
        yield fake
    finally:
        fake.stop()


def answer(vectors: list[list[float]]) -> Reply:
    data = [{"object": "embedding", "index": n, "embedding": v} for n, v in enumerate(vectors)]
    body = {"object": "list", "data": data, "model": "nomic-embed-text",
            "usage": {"prompt_tokens": 40, "total_tokens": 40}}
    return Reply(body=json.dumps(body).encode(), content_type="application/json")


async def test_the_endpoint_ranks_the_tools(
    server: FakeLLMServer, tmp_path: Path, data_dir: Path, workspace: Path
) -> None:
    # query, then read, list_directory, grep, bash: the query is closest to bash.
    server.queue(answer([[0.1, 0.9, 0.1], [1, 0, 0], [0.9, 0.1, 0], [0.7, 0, 0.7],
                         [0.2, 1, 0]]))
    server.queue(Reply(503, body=b'{"error": "overloaded"}', content_type="application/json"))
    enabled = ", ".join(f'"core__{t}"' for t in TOOLS)
    args, script = setup(tmp_path, f"""
[tools]
enabled = [{enabled}]
[agent.catalog]
enabled = true
top_k = 1
min_description_words = 0
[agent.catalog.embeddings]
model = "nomic-embed-text"
base_url = "{server.url}/v1"
""", [{"text": "on it"}, {"text": "again"}])
    client = RecordingClient()
    async with acpd(tmp_path, data_dir=data_dir, workspace=workspace, client=client,
                    script=script, args=args) as run:
        session_id = await run.open_session()
        assert await run.prompt(session_id, QUERY) == "end_turn"
        assert await run.prompt(session_id, "/status") == "end_turn"
        ranked = status(client.texts())
        # Tools are embedded once; a new message needs only its own vector, and this time
        # the endpoint fails: BM25 takes over for the request.
        assert await run.prompt(session_id, "search the file contents") == "end_turn"
        assert await run.prompt(session_id, "/status") == "end_turn"
        fallback = status(client.texts())
    first, second = requests(tmp_path)
    assert names(first) == ["bash"]
    assert ranked == "Tools: 1 of 4 sent (embeddings (nomic-embed-text): 1 ranked)"
    embed_1, embed_2 = server.requests
    assert embed_1.path == "/v1/embeddings" and embed_1.json["input"][0] == QUERY
    assert len(embed_1.json["input"]) == 5
    assert embed_2.json["input"] == ["search the file contents"]
    assert names(second) == ["grep"]
    assert fallback.startswith("Tools: 1 of 4 sent (BM25: 1 ranked); embeddings failed")
    assert "HTTP 503" in fallback
