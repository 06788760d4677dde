"""Helpers for the catalog's end-to-end tests: a config file, a recording script, the requests."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from tests.e2e.harness import write_script


def setup(tmp: Path, config: str, turns: list[dict[str, Any]]) -> tuple[tuple[str, ...], Path]:
    """(daemon args, script) for a run whose scripted model records every request."""
    path = tmp / "acpd.toml"
    path.write_text(config)
    script = write_script(tmp / "script.json", turns)
    data = json.loads(script.read_text())
    script.write_text(json.dumps({**data, "record": "requests.jsonl"}))
    return ("--config", str(path)), script


def requests(tmp: Path) -> list[dict[str, Any]]:
    """What each model request carried, in order (see providers/scripted.py `record`)."""
    path = tmp / "requests.jsonl"
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text().splitlines()]


def names(request: dict[str, Any]) -> list[str]:
    return [t["name"] for t in request["tools"]]


def status(texts: str) -> str:
    """The catalog line of the last /status answer."""
    lines = [line for line in texts.splitlines() if line.startswith("Tools: ")]
    assert lines, texts
    return lines[-1]


def files_holding(root: Path, needle: str) -> list[Path]:
    """Every file under `root` whose bytes contain `needle` (SQLite files and WAL included)."""
    return [p for p in root.rglob("*") if p.is_file() and needle.encode() in p.read_bytes()]
