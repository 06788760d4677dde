"""End to end through the real `acpd serve`, on the local path and the editor-terminal path:
commands the user allowed (the policy asked: each is spelled so that it cannot be judged
statically, and the client answers "allow once") still cannot read a masked file, write
outside the workspace, touch git hooks, reach the network, or leave processes behind."""

from __future__ import annotations

import asyncio
import json
import shutil
import tempfile
from pathlib import Path
from typing import Any

import pytest

from acpd.sandbox import relaybin
from tests.e2e.client import RecordingClient, always
from tests.e2e.harness import acpd, caps, text, wait_for_file_lines, wait_unmarked, write_script
from tests.sandbox.conftest import escapes, marked, sleep_marker

pytestmark = [pytest.mark.anyio, pytest.mark.slow]

WHERE = ["local-process-group", "editor-terminal", "editor-launcher"]
"""The editor-terminal path through the relay client (built by scripts/build_native.py),
and through the sh launcher (the relay switched off)."""


def launcher(where: str) -> dict[str, str]:
    return {relaybin.SWITCH_ENV: "off" if where == "editor-launcher" else "on"}


def turns(*commands: str, timeout: int | None = None) -> list[dict[str, Any]]:
    calls = []
    for command in commands:
        arguments: dict[str, Any] = {"command": command}
        if timeout is not None:
            arguments["timeout"] = timeout
        calls.append({"tool_calls": [{"name": "bash", "arguments": arguments}]})
    return [*calls, {"text": "done"}]


def finals(client: RecordingClient) -> list[dict[str, Any]]:
    return [client.final(c["toolCallId"]) for c in client.tool_calls()]


def shown(final: dict[str, Any]) -> str:
    return "".join(c["content"]["text"] for c in final.get("content") or []
                   if c.get("type") == "content")


def untouched(ws: Path, outside: Path, hooks: list[str], config: str) -> bool:
    return (list(outside.iterdir()) == [] and not Path("/etc/acpd-canary").exists()
            and sorted(p.name for p in (ws / ".git" / "hooks").iterdir()) == hooks
            and (ws / "vendor" / "lib" / ".git" / "config").read_text() == config)


@pytest.mark.parametrize("where", WHERE)
async def test_allowed_commands_stay_confined(
    where: str, tmp_path: Path, data_dir: Path, ws: Path, outside: Path,
    loopback_server: int,
) -> None:
    marker = sleep_marker()
    # Names come from files at run time, so the policy cannot judge them and asks.
    (ws / "names.txt").write_text(".env\nsrc/.env.local\n")
    (ws / "where.txt").write_text(f"{outside}\n/etc\n")
    (ws / "hooks.txt").write_text(".git/hooks/pre-commit\nvendor/lib/.git/config\n")
    (ws / "probe.py").write_text(
        "import socket\n"
        f"socket.create_connection(('127.0.0.1', {loopback_server}), 2)\n"
        "print('CONNECTED')\n")
    commands = [
        "echo RAN-0; while read f; do cat \"$f\"; done < names.txt",
        "echo RAN-1; while read d; do echo x > \"$d/acpd-canary\"; done < where.txt",
        "echo RAN-2; while read h; do printf x >> \"$h\"; done < hooks.txt",
        "echo RAN-3; python3 probe.py",
        "echo RAN-4; " + escapes(marker) + "echo started",
    ]
    script = write_script(tmp_path / "s.json", turns(*commands))
    terminal = where != "local-process-group"
    client = RecordingClient(answer=always("allow_once"), terminal_enabled=terminal)
    hooks_before = sorted(p.name for p in (ws / ".git" / "hooks").iterdir())
    config_before = (ws / "vendor" / "lib" / ".git" / "config").read_text()
    async with acpd(tmp_path, data_dir=data_dir, workspace=ws, client=client,
                    script=script, env=launcher(where)) as run:
        info = await run.initialize(caps(terminal=terminal))
        assert info.field_meta["acpd"]["sandbox"]["kind"] == "bwrap"
        session_id = await run.new_session()
        assert await run.prompt(session_id, "go") == "end_turn"
        results = finals(client)
        assert len(results) == len(commands)
        for n, final in enumerate(results):
            # Each command really ran (the user allowed it), in the sandbox.
            assert "rawOutput" in final, (n, shown(final))
            assert final["rawOutput"]["sandbox"] == "bwrap", final
            assert f"RAN-{n}" in final["rawOutput"]["stdout"], final["rawOutput"]
        everything = json.dumps(results)
        assert "ENV-CANARY" not in everything and "ENV-LOCAL-CANARY" not in everything
        assert "CONNECTED" not in results[3]["rawOutput"]["stdout"]
        assert await wait_unmarked(marker) == []
        if terminal:
            created = client.calls("terminal/create")
            relayed = where == "editor-terminal" and relaybin.client() is not None
            assert all(c["command"] == relaybin.client() if relayed
                       else "acpd-sandbox" in c["args"] for c in created)
        audit = (data_dir / "audit.jsonl").read_text()
        assert audit.count('"sandbox":"bwrap"') + audit.count('"sandbox": "bwrap"') >= 5
    assert untouched(ws, outside, hooks_before, config_before)


@pytest.mark.parametrize("where", WHERE)
async def test_timeout_and_cancel_end_every_process(
    where: str, tmp_path: Path, data_dir: Path, ws: Path
) -> None:
    timed, cancelled = sleep_marker(), sleep_marker()
    script = write_script(tmp_path / "s.json", [
        *turns(escapes(timed) + f"sleep {timed}", timeout=2),
        *turns(escapes(cancelled) + f"echo go > started.txt; sleep {cancelled}"),
    ])
    terminal = where != "local-process-group"
    client = RecordingClient(answer=always("allow_once"), terminal_enabled=terminal)
    async with acpd(tmp_path, data_dir=data_dir, workspace=ws, client=client,
                    script=script, env=launcher(where)) as run:
        session_id = await run.open_session(caps(terminal=terminal))
        assert await run.prompt(session_id, "slow") == "end_turn"
        (first,) = finals(client)
        assert first["rawOutput"]["timed_out"] is True
        assert await wait_unmarked(timed) == []
        prompt = asyncio.ensure_future(run.conn.prompt(session_id=session_id, prompt=text("x")))
        await wait_for_file_lines(ws / "started.txt", 1)
        assert len(marked(cancelled)) >= 6
        await run.conn.cancel(session_id=session_id)
        assert (await asyncio.wait_for(prompt, 20)).stop_reason == "cancelled"
        assert await wait_unmarked(cancelled) == []


@pytest.mark.parametrize("where", WHERE)
async def test_without_a_sandbox_every_card_and_audit_line_says_so(
    where: str, tmp_path: Path, data_dir: Path, ws: Path
) -> None:
    script = write_script(tmp_path / "s.json", turns("echo hi"))
    terminal = where != "local-process-group"
    client = RecordingClient(answer=always("allow_once"), terminal_enabled=terminal)
    async with acpd(tmp_path, data_dir=data_dir, workspace=ws, client=client, script=script,
                    env={"ACPD_SANDBOX": "off", **launcher(where)}) as run:
        info = await run.initialize(caps(terminal=terminal))
        meta = info.field_meta["acpd"]["sandbox"]
        assert meta["available"] is False and "ACPD_SANDBOX" in meta["reason"]
        session_id = await run.new_session()
        assert await run.prompt(session_id, "go") == "end_turn"
        (final,) = finals(client)
        assert final["rawOutput"]["sandbox"].startswith("none: switched off by ACPD_SANDBOX")
        assert final["rawOutput"]["stdout"].startswith("hi")
        if terminal:
            created = client.calls("terminal/create")[0]
            assert created["command"].endswith("/bash") and created["args"][-3:-1] == [
                created["command"], "-c"]  # the scrub, then bash by absolute path
        else:
            assert "[NOT sandboxed: switched off" in shown(final)
        audit = [json.loads(line) for line in (data_dir / "audit.jsonl").read_text().splitlines()]
        assert any(str(e.get("result", {}).get("sandbox", "")).startswith("none: switched off")
                   for e in audit), audit


@pytest.mark.parametrize("where", WHERE)
async def test_acpd_s_own_data_is_hidden_from_commands(
    where: str, tmp_path: Path, ws: Path,
) -> None:
    """Checkpoint blobs are copies of workspace files, `.env` included, and sessions hold
    what was said: a data directory the sandbox can see (outside /tmp) is hidden whole."""
    data_dir = Path(tempfile.mkdtemp(prefix="acpd-data-", dir="/var/tmp"))
    try:
        (ws / "data.txt").write_text(f"{data_dir}\n")
        commands = ["echo RAN-0 > out.txt",
                    "echo RAN-1; read d < data.txt; grep -r -a ENV-CAN\"\"ARY \"$d\"; ls -R \"$d\"",
                    "echo RAN-2; read d < data.txt; cat \"$d\"/*/*/* \"$d\"/*/*/*/* 2>&1"]
        script = write_script(tmp_path / "s.json", turns(*commands))
        terminal = where != "local-process-group"
        client = RecordingClient(answer=always("allow_once"), terminal_enabled=terminal)
        async with acpd(tmp_path, data_dir=data_dir, workspace=ws, client=client,
                        script=script, env=launcher(where)) as run:
            await run.initialize(caps(terminal=terminal))
            session_id = await run.new_session()
            assert await run.prompt(session_id, "go") == "end_turn"
            results = finals(client)
            assert [r["rawOutput"]["sandbox"] for r in results] == ["bwrap"] * 3
            assert "RAN-1" in results[1]["rawOutput"]["stdout"]
            assert "ENV-CANARY" not in json.dumps(results)
        assert _holds(data_dir, b"ENV-CANARY")  # it was there to find
    finally:
        shutil.rmtree(data_dir, ignore_errors=True)


def _holds(directory: Path, needle: bytes) -> bool:
    return any(needle in p.read_bytes() for p in directory.rglob("*") if p.is_file())


SECRETS = {"ACPD_TEST_API_KEY": "CANARY-A", "acpd_test_token": "CANARY-B",
           "ACPD-TEST_SECRET": "CANARY-C"}
"""Blocked by the default `env_blocklist`; the last is not a shell identifier."""


@pytest.mark.parametrize("sandbox", ["on", "off"])
@pytest.mark.parametrize("where", WHERE)
async def test_blocked_environment_names_never_reach_a_command(
    where: str, sandbox: str, tmp_path: Path, data_dir: Path, ws: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The editor runs a command with its own environment (here: the test process's, which
    the client's terminals inherit), the local path with the daemon's: neither may pass a
    blocked name on, sandboxed or not."""
    for name, value in SECRETS.items():
        monkeypatch.setenv(name, value)  # the editor's environment
    monkeypatch.setenv("ACPD_TEST_PLAIN", "VISIBLE")
    script = write_script(tmp_path / "s.json", turns(
        "env; printenv; bash -c 'echo \"$ACPD_TEST_API_KEY\"'; echo plain=$ACPD_TEST_PLAIN"))
    terminal = where != "local-process-group"
    client = RecordingClient(answer=always("allow_once"), terminal_enabled=terminal)
    async with acpd(tmp_path, data_dir=data_dir, workspace=ws, client=client, script=script,
                    env={**SECRETS, "ACPD_SANDBOX": sandbox, **launcher(where)}) as run:
        await run.initialize(caps(terminal=terminal))
        session_id = await run.new_session()
        assert await run.prompt(session_id, "go") == "end_turn"
        (final,) = finals(client)
        stdout = final["rawOutput"]["stdout"]
        assert "plain=VISIBLE" in stdout and "PATH=" in stdout
        assert "CANARY" not in json.dumps(final)
        if terminal:
            assert client.calls("terminal/create")
