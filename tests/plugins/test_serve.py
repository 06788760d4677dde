"""Plugin tools in the real daemon with the scripted model: called through the one pipeline
(card, result), added and removed while it runs (hot reload, announced), a tool-only folder
next to overlays, and tool tables in plugin.toml refused instead of ignored."""

from __future__ import annotations

import os
import shutil
from pathlib import Path
from typing import Any

import pytest

from tests.e2e.client import RecordingClient
from tests.e2e.harness import acpd, write_script
from tests.plugins.helpers import add_example, plugins_dir, write_config

pytestmark = [pytest.mark.anyio, pytest.mark.slow]
RELOADED = "acpd/policy_reloaded"


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


def call(name: str, arguments: dict[str, Any]) -> dict[str, Any]:
    return {"tool_calls": [{"name": name, "arguments": arguments}]}


def plugin_reloads(client: RecordingClient) -> list[dict[str, Any]]:
    return [r for r in client.calls(RELOADED) if r.get("scope") == "tools.plugins"]


async def test_plugin_tools_run_in_the_daemon_and_reload_live(
    tmp_path: Path, data_dir: Path, workspace: Path
) -> None:
    plugins = plugins_dir(tmp_path)
    add_example(plugins, "word_count")
    cfg = write_config(tmp_path, plugins)
    cfg.write_text('[agent]\ndefault_mode = "auto"\n' + cfg.read_text())
    script = write_script(tmp_path / "s.json", [
        call("word_count", {"text": "a b c"}), {"text": "1"},
        call("wasi_files", {"path": "hello.txt"}), {"text": "2"},
        call("word_count", {"text": "x"}), {"text": "3"},
    ])
    client = RecordingClient()
    async with acpd(tmp_path, data_dir=data_dir, workspace=workspace, client=client,
                    script=script, env={"ACPD_CONFIG": str(cfg)}) as run:
        session = await run.open_session()
        assert await run.prompt(session, "count") == "end_turn"
        card = client.tool_calls()[-1]
        assert card["title"] == "word_count (plugin)" and card["kind"] == "other"
        final = client.final(card["toolCallId"])
        assert final["status"] == "completed"
        assert "3 words, 1 lines, 5 chars" in str(final["content"])

        staging = tmp_path / "staging"
        staging.mkdir()
        add_example(staging, "wasi_files")
        os.rename(staging / "wasi_files", plugins / "wasi_files")  # appears whole
        await client.wait_for(lambda: any(
            "plugin__wasi_files" in r["tools"] for r in plugin_reloads(client)), 15)
        assert await run.prompt(session, "read") == "end_turn"
        final = client.final(client.tool_calls()[-1]["toolCallId"])
        assert final["status"] == "completed", final
        assert "hello from the workspace" in str(final["content"])

        seen = len(plugin_reloads(client))
        shutil.rmtree(plugins / "word_count")
        await client.wait_for(lambda: any(
            "plugin__word_count" not in r["tools"] for r in plugin_reloads(client)[seen:]), 15)
        assert await run.prompt(session, "count again") == "end_turn"
        final = client.final(client.tool_calls()[-1]["toolCallId"])
        assert final["status"] == "failed"
        assert "no tool named 'word_count'" in str(final["content"])


async def test_a_broken_manifest_is_reported_and_the_rest_keeps_working(
    tmp_path: Path, data_dir: Path, workspace: Path
) -> None:
    plugins = plugins_dir(tmp_path)
    add_example(plugins, "word_count")
    broken = plugins / "broken"
    broken.mkdir()
    (broken / "tool.toml").write_text('tool_name = "broken"\nversion = "1"\n'
                                      'description = "x"\nmax_runtime = 5\n')
    overlay = plugins / "overlay"
    overlay.mkdir()
    (overlay / "plugin.toml").write_text('[[tools]]\nname = "x"\n')
    cfg = write_config(tmp_path, plugins)
    cfg.write_text('[agent]\ndefault_mode = "auto"\n' + cfg.read_text())
    script = write_script(tmp_path / "s.json", [
        call("word_count", {"text": "a"}), {"text": "1"},
        call("bash", {"command": "echo hi"}), {"text": "2"},
    ])
    client = RecordingClient()
    async with acpd(tmp_path, data_dir=data_dir, workspace=workspace, client=client,
                    script=script, env={"ACPD_CONFIG": str(cfg)}) as run:
        session = await run.open_session()
        assert await run.prompt(session, "count") == "end_turn"
        final = client.final(client.tool_calls()[-1]["toolCallId"])
        assert final["status"] == "completed"
        assert await run.prompt(session, "bash") == "end_turn"
        said = client.texts()
        # the overlay that declared tools in plugin.toml was refused, and the session told
        assert "plugin tools are declared in tool.toml" in said + run.daemon_log()
        assert "max_runtime: unknown key" in run.daemon_log()
