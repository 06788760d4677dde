from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest

from acpd.policy.cli import corpus_workspace
from acpd.policy.engine import CompiledPolicy, compile_policy
from acpd.policy.rules import load_base

HERE = Path(__file__).parent
REFERENCE = HERE / "reference-policy.toml"
CORPUS = HERE / "shell_policy.jsonl"


@pytest.fixture(scope="session")
def reference() -> CompiledPolicy:
    return compile_policy(load_base(REFERENCE)[0])


@pytest.fixture(scope="session")
def default() -> CompiledPolicy:
    return compile_policy(load_base(None)[0])


@pytest.fixture(scope="session")
def workspace() -> Iterator[str]:
    ws = os.path.realpath(corpus_workspace())
    yield ws
    shutil.rmtree(ws, ignore_errors=True)
