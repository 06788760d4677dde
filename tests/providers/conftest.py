from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.providers.fake_server import FakeLLMServer


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture
def llm_server() -> Iterator[FakeLLMServer]:
    server = FakeLLMServer()
    server.start()
    try:
        yield server
    finally:
        server.stop()
