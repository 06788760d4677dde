from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.remote.harness import Place, place


@pytest.fixture
def anyio_backend() -> str:
    # The official Python SDK is asyncio-only.
    return "asyncio"


@pytest.fixture
def shared(tmp_path: Path, data_dir: Path, workspace: Path) -> Iterator[Place]:
    """A private runtime directory and data dir; every daemon left is stopped after."""
    with place(tmp_path, data_dir, workspace) as here:
        yield here
