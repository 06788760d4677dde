"""Running a scripted turn through the real daemon with a config, and reading what it did."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tests.e2e.client import RecordingClient
from tests.e2e.harness import acpd, write_script

DENIED = "curl -s https://example.com -o got.txt"
"""The default shell policy denies it (network)."""


def call(name: str, **arguments: Any) -> dict[str, Any]:
    return {"tool_calls": [{"name": name, "arguments": arguments}]}


def audit(data_dir: Path) -> list[dict[str, Any]]:
    path = data_dir / "audit.jsonl"
    return [json.loads(x) for x in path.read_text().splitlines()] if path.exists() else []


def shown(final: dict[str, Any]) -> str:
    return str(final["content"][-1]["content"]["text"])


@dataclass
class Done:
    client: RecordingClient
    session_id: str
    stop: str
    lines: list[dict[str, Any]]
    log: str

    def finals(self) -> list[dict[str, Any]]:
        return [self.client.final(c["toolCallId"]) for c in self.client.tool_calls()]

    def said(self) -> str:
        return "".join(u["content"]["text"] for u in self.client.updates
                       if u.get("sessionUpdate") == "agent_message_chunk")


async def run_turns(
    tmp_path: Path, data_dir: Path, workspace: Path, turns: list[dict[str, Any]],
    config: str = "", *, model: str = "s.json", prompt: str = "go",
    client: RecordingClient | None = None,
) -> Done:
    script = write_script(tmp_path / model, turns)
    toml = tmp_path / "acpd.toml"
    toml.write_text('[agent]\ndefault_mode = "auto"\n' + config)
    client = client or RecordingClient()
    async with acpd(tmp_path, data_dir=data_dir, workspace=workspace, client=client,
                    args=("--model", f"scripted:{script}", "--config", str(toml))) as run:
        session_id = await run.open_session()
        stop = await run.prompt(session_id, prompt)
        log = run.daemon_log()
    return Done(client, session_id, stop, audit(data_dir), log)
