"""`[tools.permissions.*]` edits in config.toml take effect while the real daemon runs: no
restart, announced like a policy reload, a broken file keeps the rules in force and says so
at the next prompt. The file tools' rules meet real paths after a reload too."""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import anyio
import pytest

from tests.e2e.client import RecordingClient, always
from tests.e2e.harness import Run, acpd, write_script

pytestmark = pytest.mark.anyio
RELOADED = "acpd/policy_reloaded"
BASE = '[agent]\ndefault_mode = "auto"\n'


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    path = tmp_path / "ws"
    path.mkdir()
    return path


def put(path: Path, text: str) -> None:
    """Replace the file as editors do (write a temp file, rename it over)."""
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(text)
    os.replace(tmp, path)


def bash(command: str) -> dict[str, Any]:
    return {"tool_calls": [{"name": "bash", "arguments": {"command": command}}]}


def read(path: str) -> dict[str, Any]:
    return {"tool_calls": [{"name": "read", "arguments": {"path": path}}]}


def rule_reloads(client: RecordingClient) -> list[dict[str, Any]]:
    return [r for r in client.calls(RELOADED) if r.get("scope") == "tools.permissions"]


async def reloaded(client: RecordingClient, seen: int,
                   check: Callable[[dict[str, Any]], bool]) -> dict[str, Any]:
    await client.wait_for(lambda: any(check(r) for r in rule_reloads(client)[seen:]), 15)
    return next(r for r in rule_reloads(client)[seen:] if check(r))


async def last_call(run: Run, client: RecordingClient, session_id: str,
                    prompt: str) -> dict[str, Any]:
    assert await run.prompt(session_id, prompt) == "end_turn"
    call = client.tool_calls()[-1]
    return client.final(call["toolCallId"])


async def test_permission_rules_reload_without_a_restart(
    tmp_path: Path, data_dir: Path, ws: Path
) -> None:
    config = tmp_path / "acpd.toml"
    put(config, BASE)
    (ws / "secret").mkdir()
    (ws / "secret" / "x.txt").write_text("TOP-SECRET\n")
    (ws / "s2").symlink_to("secret")
    script = write_script(tmp_path / "s.json", [
        bash("touch one.txt"), {"text": "1"},
        bash("touch two.txt"), {"text": "2"},
        bash("touch three.txt"), {"text": "3"},
        bash("touch four.txt"), {"text": "4"},
        read("s2/x.txt"), {"text": "5"},
    ])
    client = RecordingClient(answer=always("reject_once"))
    async with acpd(tmp_path, data_dir=data_dir, workspace=ws, client=client,
                    args=("--model", f"scripted:{script}", "--config", str(config))) as run:
        session_id = await run.open_session()
        assert (await last_call(run, client, session_id, "one"))["status"] == "completed"
        assert (ws / "one.txt").exists()

        # A deny rule for bash and one for read, added while the daemon runs.
        put(config, BASE + '[tools.permissions.bash]\ndeny = ["touch *"]\n'
                           '[tools.permissions.read]\ndeny = ["secret/**"]\n')
        good = await reloaded(client, 0, lambda r: r["changed"] and not r["errors"])
        assert good["sources"] == [str(config)] and good["keptLastGood"] is False
        final = await last_call(run, client, session_id, "two")
        assert final["status"] == "failed" and "touch *" in str(final["content"])
        assert not (ws / "two.txt").exists()

        # Broken: the rules in force stay, the editor is told, the next prompt says why.
        seen = len(rule_reloads(client))
        put(config, BASE + "[tools.permissions.bash\n")
        broken = await reloaded(client, seen, lambda r: bool(r["errors"]))
        assert broken["keptLastGood"] is True and broken["hash"] == good["hash"]
        before = len(client.texts())
        final = await last_call(run, client, session_id, "three")
        assert "permission rules were not reloaded" in client.texts()[before:]
        assert final["status"] == "failed" and not (ws / "three.txt").exists()

        # Fixed again, now asking first: the prompt comes (and is rejected).
        seen = len(rule_reloads(client))
        put(config, BASE + '[tools.permissions.bash]\nask = ["touch *"]\n'
                           '[tools.permissions.read]\ndeny = ["secret/**"]\n')
        await reloaded(client, seen, lambda r: r["changed"] and not r["errors"])
        asked = len(client.calls("session/request_permission"))
        final = await last_call(run, client, session_id, "four")
        assert len(client.calls("session/request_permission")) == asked + 1
        assert final["status"] == "failed" and not (ws / "four.txt").exists()

        # The read rule meets the real path behind the directory link.
        final = await last_call(run, client, session_id, "five")
        assert final["status"] == "failed" and "TOP-SECRET" not in str(final["content"])
        assert "secret/**" in str(final["content"])
    assert "permission rules reloaded" in run.daemon_log()


async def test_an_edit_made_before_the_watch_started_is_not_lost(tmp_path: Path) -> None:
    """The config changes after it was read and before the watcher is in place: the reload
    made when the watch is ready finds it, with no further edit."""
    from acpd.daemon.config import load_config
    from acpd.tools.permissions import ToolPolicy
    from acpd.tools.rules import RuleSet
    from acpd.tools.rulesreload import RulesReloader, rules_loader

    config = tmp_path / "acpd.toml"
    put(config, BASE)

    class Target:
        policy = ToolPolicy(rules=RuleSet(load_config(str(config)).tools.rule_entries()))

    target = Target()
    reloader = RulesReloader(target, config, rules_loader(lambda: load_config(str(config)).tools))
    put(config, BASE + '[tools.permissions.bash]\ndeny = ["touch *"]\n')  # not watched yet
    stop = anyio.Event()
    async with anyio.create_task_group() as tg:
        tg.start_soon(reloader.watch, stop)
        with anyio.fail_after(15):
            while not target.policy.rules.rules:  # noqa: ASYNC110 (polls the published rules)
                await anyio.sleep(0.01)
        stop.set()
    assert target.policy.rules.describe() == {"bash": [["touch *", "deny"]]}
