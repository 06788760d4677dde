from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest


@pytest.fixture
def anyio_backend() -> str:
    # The official Python SDK client of the e2e harness is asyncio-only.
    return "asyncio"


def audit_lines(data_dir: Path) -> list[dict[str, Any]]:
    return [json.loads(x) for x in (data_dir / "audit.jsonl").read_text().splitlines()]


def bash_turns(*commands: str) -> list[dict[str, Any]]:
    calls = [{"tool_calls": [{"name": "bash", "arguments": {"command": c}}]} for c in commands]
    return [*calls, {"text": "done"}]
