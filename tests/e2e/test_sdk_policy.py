"""The shell policy through the real daemon, with the official SDK client as the editor: what it
allows runs without a prompt, what it denies is refused without one (its reasons in the card),
what it asks about prompts with the real command; the same on the editor-terminal and the
local path; output streamed into the card; plugin overlays reloaded while the daemon runs."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest

from acpd.policy import compile_policy, load_base
from tests.e2e.client import RecordingClient, always
from tests.e2e.harness import acpd, caps, text, write_script

pytestmark = pytest.mark.anyio

ALLOWED = "echo ok > ok.txt"
DENIED = "curl -s https://example.com -o got.txt"
ASKED = "python3 -c 'print(\"asked\")' > asked.txt"
RELOADED = "acpd/policy_reloaded"  # the SDK hands extensions over without the leading "_"


def bash(command: str) -> dict[str, Any]:
    return {"tool_calls": [{"name": "bash", "arguments": {"command": command}}]}


def audit(data_dir: Path) -> list[dict[str, Any]]:
    return [json.loads(x) for x in (data_dir / "audit.jsonl").read_text().splitlines()]


def shown(final: dict[str, Any]) -> str:
    return str(final["content"][-1]["content"]["text"])


def default_hash() -> str:
    return compile_policy(load_base(None)[0]).hash


@pytest.mark.parametrize("mode", ["ask", "auto"])
@pytest.mark.parametrize("where", ["editor-terminal", "local-process-group"])
async def test_allow_deny_and_ask_on_both_paths(
    where: str, mode: str, tmp_path: Path, data_dir: Path, workspace: Path
) -> None:
    config = tmp_path / "acpd.toml"
    config.write_text(f'[agent]\ndefault_mode = "{mode}"\n')
    script = write_script(tmp_path / "s.json", [bash(ALLOWED), bash(DENIED), bash(ASKED),
                                                {"text": "done"}])
    terminal = where == "editor-terminal"
    client = RecordingClient(answer=always("allow_once"), terminal_enabled=terminal)
    async with acpd(tmp_path, data_dir=data_dir, workspace=workspace, client=client,
                    args=("--model", f"scripted:{script}", "--config", str(config))) as run:
        session_id = await run.open_session(caps(terminal=terminal))
        assert await run.prompt(session_id, "go") == "end_turn"

        # Only the command the policy asks about prompts, even in auto mode, titled with the
        # real command and saying why.
        (asked,) = client.calls("session/request_permission")
        assert asked["toolCall"]["title"].rsplit(" (in ", 1)[0] == ASKED
        assert asked["toolCall"]["rawInput"]["command"] == ASKED
        why = asked["toolCall"]["content"][-1]["content"]["text"]
        assert "shell policy asks" in why and "interpreter with inline code" in why

        allowed, denied, ran_after_asking = client.tool_calls()
        assert client.final(allowed["toolCallId"])["status"] == "completed"
        assert (workspace / "ok.txt").read_text() == "ok\n"
        refused = client.final(denied["toolCallId"])
        assert refused["status"] == "failed"
        assert shown(refused).startswith("Blocked: the shell policy denies it")
        assert "curl reaches the network" in shown(refused)
        assert not (workspace / "got.txt").exists()
        assert client.final(ran_after_asking["toolCallId"])["status"] == "completed"
        assert (workspace / "asked.txt").read_text() == "asked\n"
        creates = client.calls("terminal/create")
        assert len(creates) == (2 if terminal else 0), "the denied command never started"

    lines = audit(data_dir)
    policy_hash = default_hash()
    assert [line["policy_hash"] for line in lines] == [policy_hash] * 3
    ok, no, yes = lines
    assert ok["decision"] == "allow" and ok["approved_by"] == "policy"
    assert ok["shell_policy"]["rules"] == ["shell.builtins"]
    assert no["decision"] == "deny" and no["decided_by"] == "policy"
    assert no["error_category"] == "PolicyBlocked" and no["exit_code"] == 126
    assert "network" in no["shell_policy"]["rules"]
    assert any("curl reaches the network" in r for r in no["shell_policy"]["reasons"])
    assert yes["decision"] == "ask" and yes["answer"] == "allow_once"
    assert yes["approved_by"] == "user" and "interp.inline" in yes["shell_policy"]["rules"]
    assert all(len(line["rules_hash"]) == 16 for line in lines)


async def test_a_policy_deny_is_not_lifted_by_auto_mode_or_an_allow_rule(
    tmp_path: Path, data_dir: Path, workspace: Path
) -> None:
    config = tmp_path / "acpd.toml"
    config.write_text('[agent]\ndefault_mode = "auto"\n[tools.permissions.bash]\n'
                      'allow = ["git *"]\n')
    script = write_script(tmp_path / "s.json", [bash("git push --force origin main"),
                                                {"text": "done"}])
    client = RecordingClient(answer=always("allow_once"))
    async with acpd(tmp_path, data_dir=data_dir, workspace=workspace, client=client,
                    args=("--model", f"scripted:{script}", "--config", str(config))) as run:
        session_id = await run.open_session()
        assert await run.prompt(session_id, "push") == "end_turn"
        assert client.calls("session/request_permission") == []
        (call,) = client.tool_calls()
        assert "force pushes" in shown(client.final(call["toolCallId"]))
    (line,) = audit(data_dir)
    assert line["error_category"] == "PolicyBlocked"
    assert "git.push-force" in line["shell_policy"]["rules"]


async def test_read_only_mode_still_denies_what_the_policy_allows(
    tmp_path: Path, data_dir: Path, workspace: Path
) -> None:
    config = tmp_path / "acpd.toml"
    config.write_text('[agent]\ndefault_mode = "read-only"\n')
    script = write_script(tmp_path / "s.json", [bash(ALLOWED), {"text": "done"}])
    client = RecordingClient(answer=always("allow_once"))
    async with acpd(tmp_path, data_dir=data_dir, workspace=workspace, client=client,
                    args=("--model", f"scripted:{script}", "--config", str(config))) as run:
        session_id = await run.open_session()
        assert await run.prompt(session_id, "go") == "end_turn"
        (call,) = client.tool_calls()
        assert "session is read-only" in shown(client.final(call["toolCallId"]))
        assert client.calls("session/request_permission") == []
    assert not (workspace / "ok.txt").exists()
    assert audit(data_dir)[0]["decided_by"] == "mode"


async def test_terminal_output_streams_into_the_card_before_the_final_update(
    tmp_path: Path, data_dir: Path, workspace: Path
) -> None:
    """The command waits for a file the test creates only after it saw the first line in the
    card: the streamed update provably came while the command ran."""
    command = "echo first; while [ ! -e go ]; do sleep 0.05; done; echo second"
    script = write_script(tmp_path / "s.json", [bash(command), {"text": "done"}])
    client = RecordingClient()
    async with acpd(tmp_path, data_dir=data_dir, workspace=workspace, client=client,
                    args=("--model", f"scripted:{script}")) as run:
        session_id = await run.open_session()
        prompt = asyncio.ensure_future(run.conn.prompt(session_id=session_id,
                                                       prompt=text("stream")))

        def streamed() -> list[dict[str, Any]]:
            return [
                u for u in client.updates
                if u.get("sessionUpdate") == "tool_call_update"
                and u.get("status") == "in_progress"
                and any(c.get("type") == "content" and "first" in c["content"].get("text", "")
                        for c in u.get("content", []))
            ]

        await client.wait_for(lambda: bool(streamed()), within=15)
        await asyncio.to_thread((workspace / "go").touch)
        assert (await asyncio.wait_for(prompt, 15)).stop_reason == "end_turn"

        (create,) = client.calls("terminal/create")
        terminal_id = create["terminalId"]
        live = streamed()[0]
        assert live["content"][0] == {"type": "terminal", "terminalId": terminal_id}
        assert "second" not in live["content"][-1]["content"]["text"]
        final = client.final(live["toolCallId"])
        assert "first\nsecond\n" in shown(final)
        order = [u for k, u in client.events if k == "update"]
        assert order.index(live) < order.index(final)
        assert client.calls("terminal/output"), "the terminal was polled"


async def test_plugin_overlays_reload_while_the_daemon_runs(
    tmp_path: Path, data_dir: Path, workspace: Path
) -> None:
    plugins = tmp_path / "plugins"
    plugins.mkdir()
    config = tmp_path / "acpd.toml"
    config.write_text(f'[tools.shell]\nplugin_dirs = ["{plugins}"]\n')
    script = write_script(tmp_path / "s.json", [
        bash("touch one.txt"), {"text": "first"},
        bash("touch two.txt"), {"text": "second"},
        bash("touch three.txt"), {"text": "third"},
    ])
    client = RecordingClient(answer=always("allow_once"))
    async with acpd(tmp_path, data_dir=data_dir, workspace=workspace, client=client,
                    args=("--model", f"scripted:{script}", "--config", str(config))) as run:
        session_id = await run.open_session()
        assert await run.prompt(session_id, "one") == "end_turn"
        assert (workspace / "one.txt").exists()  # touch: allowed by the default policy
        start_hash = audit(data_dir)[0]["policy_hash"]

        def reloads() -> list[dict[str, Any]]:
            return list(client.calls(RELOADED))

        overlay = plugins / "no-touch"
        overlay.mkdir()
        (overlay / "plugin.toml").write_text('[shell]\nblocked_commands = ["touch"]\n')
        await client.wait_for(lambda: any(r["hash"] != start_hash for r in reloads()), 15)
        good = reloads()[-1]
        assert good["errors"] == [] and any("no-touch" in s for s in good["sources"])

        assert await run.prompt(session_id, "two") == "end_turn"
        second = client.tool_calls()[1]
        assert "touch" in shown(client.final(second["toolCallId"]))
        assert client.final(second["toolCallId"])["status"] == "failed"
        assert not (workspace / "two.txt").exists()
        assert client.calls("session/request_permission") == []

        # A malformed overlay keeps the last good policy, and says so.
        seen = len(reloads())
        (overlay / "plugin.toml").write_text("[shell\nblocked_commands = \n")
        await client.wait_for(lambda: any(r["errors"] for r in reloads()[seen:]), 15)
        broken = next(r for r in reloads()[seen:] if r["errors"])
        assert broken["hash"] == good["hash"] and broken["keptLastGood"] is True
        assert "plugin.toml" in " ".join(broken["errors"])

        before = len(client.texts())
        assert await run.prompt(session_id, "three") == "end_turn"
        assert "last good version stays in force" in client.texts()[before:]
        third = client.tool_calls()[2]
        assert client.final(third["toolCallId"])["status"] == "failed"
        assert not (workspace / "three.txt").exists()

    hashes = [line["policy_hash"] for line in audit(data_dir)]
    assert hashes == [start_hash, good["hash"], good["hash"]]


@pytest.mark.parametrize("where", ["editor-terminal", "local-process-group"])
async def test_transactional_shell_rolls_back_a_failing_write(
    where: str, tmp_path: Path, data_dir: Path, workspace: Path
) -> None:
    config = tmp_path / "acpd.toml"
    config.write_text("[tools.shell]\ntransactional = true\nauto_rollback_exit_codes = [1]\n")
    script = write_script(tmp_path / "s.json", [bash("echo broken > hello.txt; exit 1"),
                                                {"text": "done"}])
    terminal = where == "editor-terminal"
    client = RecordingClient(answer=always("allow_once"), terminal_enabled=terminal)
    async with acpd(tmp_path, data_dir=data_dir, workspace=workspace, client=client,
                    args=("--model", f"scripted:{script}", "--config", str(config))) as run:
        session_id = await run.open_session(caps(terminal=terminal))
        assert await run.prompt(session_id, "break it") == "end_turn"
        final = client.final(client.tool_calls()[0]["toolCallId"])
        assert final["status"] == "failed"
        assert "[rolled back after exit code 1" in shown(final)
        assert final["rawOutput"]["rollback"] == [str(workspace / "hello.txt")]
    assert (workspace / "hello.txt").read_text() == "hello from the workspace\n"
    (line,) = audit(data_dir)
    assert line["result"]["rollback"] == [str(workspace / "hello.txt")]
