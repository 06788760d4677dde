"""Images in prompts, end to end: `acpd serve` with the OpenAI-compatible and the Anthropic
provider against the fake model server (recorded streams), checking the wire form each API
takes, and the usage (with the router's own cost) that comes back."""

from __future__ import annotations

import base64
import struct
import zlib
from pathlib import Path
from typing import Any

import pytest

from tests.helpers.daemon import RawPeer, raw_daemon
from tests.providers.fake_server import FakeLLMServer, Reply

pytestmark = pytest.mark.slow


def png_bytes() -> bytes:
    """A real 1x1 PNG."""
    def chunk(kind: bytes, data: bytes) -> bytes:
        body = kind + data
        return struct.pack(">I", len(data)) + body + struct.pack(">I", zlib.crc32(body))

    header = struct.pack(">IIBBBBB", 1, 1, 8, 2, 0, 0, 0)
    pixels = zlib.compress(b"\x00\xff\x00\x00")
    return (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + chunk(b"IDAT", pixels)
            + chunk(b"IEND", b""))


PNG = base64.b64encode(png_bytes()).decode()


def prompt_with_image(peer: RawPeer, workspace: Path) -> tuple[dict[str, Any], list[Any]]:
    init = peer.initialize()["result"]
    assert init["agentCapabilities"]["promptCapabilities"]["image"] is True
    new = peer.request("session/new", {"cwd": str(workspace), "mcpServers": []})
    session_id = new["result"]["sessionId"]
    blocks = [{"type": "text", "text": "what is in this picture?"},
              {"type": "image", "mimeType": "image/png", "data": PNG}]
    peer.send({"jsonrpc": "2.0", "id": 1, "method": "session/prompt",
               "params": {"sessionId": session_id, "prompt": blocks}})
    updates: list[dict[str, Any]] = []
    while True:
        msg = peer.recv()
        assert msg is not None, "the daemon closed stdout"
        if msg.get("method") == "session/update":
            updates.append(msg["params"]["update"])
        elif msg.get("id") == 1 and "method" not in msg:
            return msg, updates


def test_openai_compatible_gets_image_url_parts_and_reports_cost(
    llm_server: FakeLLMServer, data_dir: Path, workspace: Path, tmp_path: Path
) -> None:
    llm_server.queue(Reply(sse="openai_openrouter_usage_cost.sse"))
    config = tmp_path / "acpd.toml"
    config.write_text(
        f'[agent]\nimage_models = ["openai:openai/gpt-4o-mini"]\n'
        f'[providers.openai]\nbase_url = "{llm_server.url}/v1"\nmax_retries = 0\n')
    with raw_daemon(data_dir, "--model", "openai:openai/gpt-4o-mini", "--config", str(config),
                    env={"OPENAI_API_KEY": "sk-e2e"}) as peer:
        reply, updates = prompt_with_image(peer, workspace)
        assert reply["result"] == {"stopReason": "end_turn"}
        assert peer.close() == 0
    [request] = llm_server.requests
    user = request.json["messages"][1]
    assert user == {"role": "user", "content": [
        {"type": "text", "text": "what is in this picture?"},
        {"type": "image_url", "image_url": {"url": f"data:image/png;base64,{PNG}"}},
    ]}
    [usage] = [u for u in updates if u["sessionUpdate"] == "usage_update"]
    assert usage["used"] == 1486
    assert usage["cost"] == {"amount": 0.0001446, "currency": "USD"}


def test_anthropic_gets_base64_image_blocks_before_the_text(
    llm_server: FakeLLMServer, data_dir: Path, workspace: Path, tmp_path: Path
) -> None:
    llm_server.queue(Reply(sse="anthropic_text.sse"))
    config = tmp_path / "acpd.toml"
    config.write_text(
        '[agent.prices."anthropic:claude-sonnet-4-20250514"]\n'
        "input_per_mtok = 3.0\noutput_per_mtok = 15.0\n"
        f'[providers.anthropic]\nbase_url = "{llm_server.url}"\nmax_retries = 0\n')
    with raw_daemon(data_dir, "--model", "anthropic:claude-sonnet-4-20250514",
                    "--config", str(config), env={"ANTHROPIC_API_KEY": "test"}) as peer:
        reply, updates = prompt_with_image(peer, workspace)
        assert reply["result"] == {"stopReason": "end_turn"}
        assert peer.close() == 0
    [request] = llm_server.requests
    assert request.json["messages"][0] == {"role": "user", "content": [
        {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": PNG}},
        {"type": "text", "text": "what is in this picture?"},
    ]}
    # Priced from the table: 1180 input * 3 + 12 output * 15, per million (no cached tokens).
    [usage] = [u for u in updates if u["sessionUpdate"] == "usage_update"]
    assert usage["cost"] == {"amount": pytest.approx(0.00372), "currency": "USD"}
