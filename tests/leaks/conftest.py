from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.leaks.harness import Place, make_place


@pytest.fixture
def anyio_backend() -> str:
    # The official Python SDK is asyncio-only.
    return "asyncio"


@pytest.fixture
def here(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Place]:
    """A workspace and data dir; no config, policy plugins or TMPDIR of the developer's."""
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "share"))
    monkeypatch.setenv("XDG_RUNTIME_DIR", str(tmp_path / "run"))
    yield make_place(tmp_path)
