from __future__ import annotations

import pytest


@pytest.fixture
def anyio_backend() -> str:
    # The official Python SDK is asyncio-only.
    return "asyncio"
