"""Fixtures of the web tests: a test CA, loopback HTTPS servers, and a record of every socket
connect the test process makes (a Python audit hook, so no connect can go unseen)."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.web.server import CertAuthority, LoopbackServer, serving

_RECORDERS: list[list[Any]] = []
_HOOKED = False


def _audit(event: str, args: tuple[Any, ...]) -> None:
    if event == "socket.connect" and _RECORDERS:
        for recorder in _RECORDERS:
            recorder.append(args[1])


@pytest.fixture
def connects() -> Iterator[list[Any]]:
    """Every address this process connects a socket to while the test runs."""
    global _HOOKED
    if not _HOOKED:
        sys.addaudithook(_audit)
        _HOOKED = True
    found: list[Any] = []
    _RECORDERS.append(found)
    yield found
    _RECORDERS.remove(found)


@pytest.fixture(scope="session")
def ca(tmp_path_factory: pytest.TempPathFactory) -> CertAuthority:
    return CertAuthority(tmp_path_factory.mktemp("ca"))


@pytest.fixture
def server(ca: CertAuthority) -> Iterator[LoopbackServer]:
    with serving("127.0.0.1", 0, ca.server_context()) as found:
        yield found


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture
def ca_file(ca: CertAuthority) -> Path:
    return Path(ca.ca_file)
