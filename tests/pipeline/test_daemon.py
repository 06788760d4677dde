"""Through the real daemon with the official SDK client: permission prompts answered with each
option, the audit line of each call, rules from the config, approvals across restarts."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.e2e.client import RecordingClient, always
from tests.e2e.harness import acpd, write_script

pytestmark = pytest.mark.anyio
OPTIONS = ["allow_once", "allow_always", "reject_once", "reject_always"]
# The default shell policy asks for interpreter inline code (echo alone would just run).
ASKS = """python3 -c 'print("a")' >> ran.txt"""


def turns(*calls: tuple[str, dict[str, Any]]) -> list[dict[str, Any]]:
    return [*({"tool_calls": [{"name": n, "arguments": a}]} for n, a in calls), {"text": "done"}]


def audit(data_dir: Path) -> list[dict[str, Any]]:
    return [json.loads(x) for x in (data_dir / "audit.jsonl").read_text().splitlines()]


@pytest.mark.parametrize("option", OPTIONS)
async def test_each_option_is_audited_with_who_approved(
    option: str, tmp_path: Path, data_dir: Path, workspace: Path
) -> None:
    script = write_script(tmp_path / "s.json", turns(
        ("read", {"path": "hello.txt"}),
        ("bash", {"command": ASKS}),
        ("bash", {"command": ASKS}),
    ))
    client = RecordingClient(answer=always(option))
    async with acpd(tmp_path, data_dir=data_dir, workspace=workspace, client=client,
                    args=("--model", f"scripted:{script}")) as run:
        session_id = await run.open_session()
        assert await run.prompt(session_id, "go") == "end_turn"
        asked = client.calls("session/request_permission")
        # The card's title is the command and where it runs.
        assert [a["toolCall"]["title"].rsplit(" (in ", 1)[0] for a in asked] == (
            [ASKS] * (1 if option.endswith("always") else 2))
    lines = audit(data_dir)
    assert [line["name"] for line in lines] == ["read", "bash", "bash"]
    assert all(line["session"] == session_id and line["caller"] == "model" for line in lines)
    assert all(line["caller_id"] == f"acp:{session_id}" for line in lines)
    calls = [c["toolCallId"] for c in client.tool_calls()]
    assert [line["toolCallId"] for line in lines] == calls
    assert lines[0]["approved_by"] == "auto" and lines[0]["exit_code"] is None
    first, second = lines[1], lines[2]
    assert first["decision"] == "ask" and first["answer"] == option
    if option.startswith("allow"):
        assert first["approved_by"] == "user" and first["exit_code"] == 0
        assert second["approved_by"] == "user"
        assert (workspace / "ran.txt").read_text() == "a\na\n"
    else:
        assert first["approved_by"] is None and first["error_category"] == "PolicyBlocked"
        assert first["exit_code"] == 126 and not (workspace / "ran.txt").exists()
    if option.endswith("always"):
        assert second["decision"] in ("allow", "deny") and second["answer"] is None


async def test_always_allow_survives_a_restart_for_the_same_workspace(
    tmp_path: Path, data_dir: Path, workspace: Path
) -> None:
    command = """python3 -c 'print("x")' >> r.txt"""
    script = write_script(tmp_path / "s.json", turns(("bash", {"command": command})))
    for n, answer in enumerate(["allow_always", "reject_once"]):
        client = RecordingClient(answer=always(answer))
        async with acpd(tmp_path, data_dir=data_dir, workspace=workspace, client=client,
                        args=("--model", f"scripted:{script}"), name=f"run{n}") as run:
            session_id = await run.open_session()
            assert await run.prompt(session_id, "go") == "end_turn"
            asked = client.calls("session/request_permission")
            assert len(asked) == (1 if n == 0 else 0)
    assert (workspace / "r.txt").read_text() == "x\nx\n"
    (approvals,) = (data_dir / "approvals").iterdir()
    assert approvals.stat().st_mode & 0o777 == 0o600
    assert audit(data_dir)[-1]["approved_by"] == "user"


async def test_rules_from_the_config_deny_and_allow(
    tmp_path: Path, data_dir: Path, workspace: Path
) -> None:
    config = tmp_path / "acpd.toml"
    config.write_text(
        '[tools.permissions.bash]\nallow = ["echo *"]\ndeny = ["*rm *"]\n'
    )
    script = write_script(tmp_path / "s.json", turns(
        ("bash", {"command": "echo ok > ok.txt"}), ("bash", {"command": "rm -f hello.txt"})))
    client = RecordingClient(answer=always("allow_once"))
    async with acpd(tmp_path, data_dir=data_dir, workspace=workspace, client=client,
                    args=("--model", f"scripted:{script}", "--config", str(config))) as run:
        session_id = await run.open_session()
        assert await run.prompt(session_id, "go") == "end_turn"
        assert client.calls("session/request_permission") == []
        allowed, denied = client.tool_calls()
        assert client.final(allowed["toolCallId"])["status"] == "completed"
        final = client.final(denied["toolCallId"])
        assert final["status"] == "failed"
        assert "denied by the rule '*rm *'" in final["content"][-1]["content"]["text"]
    assert (workspace / "hello.txt").exists() and (workspace / "ok.txt").exists()
    lines = audit(data_dir)
    assert lines[0]["approved_by"] == "rule"
    assert lines[1]["decided_by"] == "rule" and lines[1]["approved_by"] is None


async def test_quota_and_auto_mode_through_the_daemon(
    tmp_path: Path, data_dir: Path, workspace: Path
) -> None:
    config = tmp_path / "acpd.toml"
    config.write_text('[agent]\ndefault_mode = "auto"\n[tools]\nmax_tool_calls_per_session = 1\n')
    script = write_script(tmp_path / "s.json", turns(
        ("bash", {"command": "echo 1 >> q.txt"}), ("bash", {"command": "echo 2 >> q.txt"})))
    client = RecordingClient()
    async with acpd(tmp_path, data_dir=data_dir, workspace=workspace, client=client,
                    args=("--model", f"scripted:{script}", "--config", str(config))) as run:
        session_id = await run.open_session()
        assert await run.prompt(session_id, "go") == "end_turn"
        second = client.final(client.tool_calls()[1]["toolCallId"])
        assert second["status"] == "failed"
        assert "quota_blocked" in second["content"][-1]["content"]["text"]
    assert (workspace / "q.txt").read_text() == "1\n"
    lines = audit(data_dir)
    # Auto mode asks nothing of its own; the shell policy allowed echo.
    assert lines[0]["approved_by"] == "policy" and lines[1]["decision"] == "quota_blocked"
