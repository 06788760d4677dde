"""MCP servers end to end: the official Python ACP SDK drives `acpd serve`, a scripted model
calls the tools of a real MCP server (tests/mcp/server.py) passed in `session/new`, and every
line acpd writes is validated against the ACP v1 schema (tests/e2e/harness.py)."""

from __future__ import annotations

import asyncio
import json
import sys
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from acp.schema import EnvVariable, HttpHeader, McpServerStdio

from tests.e2e.client import RecordingClient, always
from tests.e2e.harness import REPO, Run, acpd, marked, sleep_marker, wait_unmarked, write_script

pytestmark = [pytest.mark.anyio, pytest.mark.slow]

TOKEN = "ghp_" + "Z9y8X7w6V5u4T3s2R1q0P9o8N7m6L5k4J3i2"


def stdio(name: str = "srv", *args: str, env: dict[str, str] | None = None) -> McpServerStdio:
    pairs = {"PYTHONPATH": str(REPO), **(env or {})}
    return McpServerStdio(
        name=name, command=sys.executable, args=["-m", "tests.mcp.server", *(args or ("stdio",))],
        env=[EnvVariable(name=k, value=v) for k, v in pairs.items()],
    )


def calls(*pairs: tuple[str, dict[str, Any]], final: str = "done") -> list[dict[str, Any]]:
    return [*({"tool_calls": [{"name": n, "arguments": a}]} for n, a in pairs), {"text": final}]


def config(tmp: Path, text: str) -> dict[str, str]:
    path = tmp / "config.toml"
    path.write_text(text)
    return {"ACPD_CONFIG": str(path)}


async def open_with(run: Run, *servers: Any) -> str:
    await run.initialize()
    response = await run.conn.new_session(cwd=str(run.workspace), mcp_servers=list(servers))
    return response.session_id


def audit(data_dir: Path) -> list[dict[str, Any]]:
    path = data_dir / "audit.jsonl"
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def by_title(client: RecordingClient, title: str) -> list[dict[str, Any]]:
    return [c for c in client.tool_calls() if c.get("title") == title]


def final_text(client: RecordingClient, call: dict[str, Any]) -> str:
    content = client.final(call["toolCallId"]).get("content") or []
    return "".join(c.get("content", {}).get("text", "") for c in content)


async def test_tools_are_listed_and_a_call_asks_through_the_pipeline(
    tmp_path: Path, data_dir: Path, workspace: Path
) -> None:
    script = write_script(tmp_path / "s.json", calls(("mcp__srv__echo", {"text": "hi there"})))
    client = RecordingClient(answer=always("allow_once"))
    async with acpd(tmp_path, data_dir=data_dir, workspace=workspace, client=client,
                    script=script) as run:
        init = await run.initialize()
        assert init.agent_capabilities.mcp_capabilities.http is True
        assert init.agent_capabilities.mcp_capabilities.sse is True
        session = (await run.conn.new_session(cwd=str(workspace),
                                              mcp_servers=[stdio()])).session_id
        assert await run.prompt(session, "/tools") == "end_turn"
        listing = client.texts()
        for tool in ("mcp__srv__echo", "mcp__srv__fail", "mcp__srv__crash"):
            assert f"- {tool} ({tool}, external_side_effect)\n" in listing + "\n", listing
        assert await run.prompt(session, "say hi") == "end_turn"

        (asked,) = client.calls("session/request_permission")
        assert asked["toolCall"]["title"] == "srv: echo"
        assert asked["toolCall"]["rawInput"] == {"text": "hi there"}
        (card,) = by_title(client, "srv: echo")
        assert card["kind"] == "other" and card["status"] == "pending"
        assert client.final(card["toolCallId"])["status"] == "completed"
        assert final_text(client, card) == "echo: hi there"
    (line,) = [a for a in audit(data_dir) if a["name"] == "mcp__srv__echo"]
    assert line["approved_by"] == "user" and line["tool"] == "mcp__srv__echo"


async def test_allowlisted_tools_run_without_a_prompt_and_others_ask_even_in_auto_mode(
    tmp_path: Path, data_dir: Path, workspace: Path
) -> None:
    script = write_script(tmp_path / "s.json", calls(
        ("mcp__srv__echo", {"text": "free"}), ("mcp__srv__env", {"name": "HOME"}),
    ))
    client = RecordingClient(answer=always("reject_once"))
    env = config(tmp_path, '[mcp.servers.srv]\nallow = ["echo"]\n')
    async with acpd(tmp_path, data_dir=data_dir, workspace=workspace, client=client,
                    script=script, env=env) as run:
        session = await open_with(run, stdio())
        await run.conn.set_session_mode(session_id=session, mode_id="auto")
        assert await run.prompt(session, "go") == "end_turn"
        asked = client.calls("session/request_permission")
        assert [a["toolCall"]["title"] for a in asked] == ["srv: env"]
        (echo,) = by_title(client, "srv: echo")
        assert client.final(echo["toolCallId"])["status"] == "completed"
        (env_call,) = by_title(client, "srv: env")
        assert client.final(env_call["toolCallId"])["status"] == "failed"
    lines = {a["name"]: a for a in audit(data_dir)}
    assert lines["mcp__srv__echo"]["approved_by"] == "rule"
    assert lines["mcp__srv__env"]["error_category"] == "PolicyBlocked"


async def test_errors_reach_the_model_in_their_categories(
    tmp_path: Path, data_dir: Path, workspace: Path
) -> None:
    script = write_script(tmp_path / "s.json", calls(
        ("mcp__srv__fail", {"reason": "no such city"}),
        ("mcp__srv__echo", {"text": 5}),
        ("mcp__srv__echo", {"text": "a", "extra": True}),
        ("mcp__srv__slow", {"seconds": 120}),
        ("mcp__srv__nope", {}),
        ("mcp__srv__echo", {"text": "still here"}),
    ))
    env = config(tmp_path, '[mcp]\ncall_timeout = 3\n[mcp.servers.srv]\n'
                           'allow = ["fail", "echo", "slow"]\n')
    async with acpd(tmp_path, data_dir=data_dir, workspace=workspace, script=script,
                    env=env) as run:
        session = await open_with(run, stdio())
        assert await run.prompt(session, "go") == "end_turn"
    got = [(a["name"], a["error_category"]) for a in audit(data_dir)]
    assert got == [
        ("mcp__srv__fail", "PermanentFailure"), ("mcp__srv__echo", "TypeMismatch"),
        ("mcp__srv__echo", "InvalidParameters"), ("mcp__srv__slow", "Timeout"),
        ("mcp__srv__nope", "ToolNotFound"), ("mcp__srv__echo", None),
    ]
    assert "no such city" in audit(data_dir)[0]["error"]


async def test_a_server_that_crashes_mid_call_fails_the_call_and_the_session_goes_on(
    tmp_path: Path, data_dir: Path, workspace: Path
) -> None:
    script = write_script(tmp_path / "s.json", calls(
        ("mcp__srv__crash", {}), ("mcp__srv__echo", {"text": "after"}),
    ))
    client = RecordingClient()
    env = config(tmp_path, '[mcp.servers.srv]\nallow = ["crash", "echo"]\n')
    async with acpd(tmp_path, data_dir=data_dir, workspace=workspace, client=client,
                    script=script, env=env) as run:
        session = await open_with(run, stdio())
        assert await run.prompt(session, "go") == "end_turn"
        (crash,) = by_title(client, "srv: crash")
        assert client.final(crash["toolCallId"])["status"] == "failed"
        text = final_text(client, crash)
        assert "closed the connection" in text and "status 3" in text, text
        (echo,) = by_title(client, "srv: echo")
        assert final_text(client, echo) == "echo: after"
    categories = [a["error_category"] for a in audit(data_dir)]
    assert categories == ["ServerError", None]


async def test_a_server_that_fails_to_start_is_reported_once(
    tmp_path: Path, data_dir: Path, workspace: Path
) -> None:
    script = write_script(tmp_path / "s.json", [
        {"text": "first"}, *calls(("mcp__srv__echo", {"text": "ok"})),
    ])
    client = RecordingClient()
    env = config(tmp_path, '[mcp.servers.srv]\nallow = ["echo"]\n')
    async with acpd(tmp_path, data_dir=data_dir, workspace=workspace, client=client,
                    script=script, env=env) as run:
        session = await open_with(run, stdio("bad", "broken"), stdio())
        assert await run.prompt(session, "one") == "end_turn"
        assert await run.prompt(session, "two") == "end_turn"
        told = client.texts()
        assert told.count("could not start") == 1, told
        assert "'bad'" in told and "missing configuration file" in told
        (echo,) = by_title(client, "srv: echo")
        assert final_text(client, echo) == "echo: ok"


async def test_servers_and_their_process_trees_end_with_the_session_and_the_daemon(
    tmp_path: Path, data_dir: Path, workspace: Path
) -> None:
    closed, kept = sleep_marker(), sleep_marker()
    async with acpd(tmp_path, data_dir=data_dir, workspace=workspace) as run:
        await run.initialize()
        first = (await run.conn.new_session(cwd=str(workspace), mcp_servers=[
            stdio("srv", "stdio", "--child", closed)])).session_id
        second = (await run.conn.new_session(cwd=str(workspace), mcp_servers=[
            stdio("srv", "stdio", "--child", kept)])).session_id
        assert marked(closed) == [] and marked(kept) == []  # started lazily
        for session in (first, second):
            assert await run.prompt(session, "/tools") == "end_turn"
        assert len(marked(closed)) >= 2 and len(marked(kept)) >= 2
        await run.raw("session/close", {"sessionId": first})
        assert await wait_unmarked(closed) == []
        assert marked(kept)
    # stdin EOF: the daemon stops, and the other session's servers with it.
    assert await wait_unmarked(kept) == []


async def test_load_starts_the_servers_the_request_names(
    tmp_path: Path, data_dir: Path, workspace: Path
) -> None:
    script = write_script(tmp_path / "s.json", calls(("mcp__again__echo", {"text": "back"})))
    client = RecordingClient()
    env = config(tmp_path, '[mcp.servers.again]\nallow = ["echo"]\n')
    async with acpd(tmp_path, data_dir=data_dir, workspace=workspace, client=client,
                    script=script, env=env) as run:
        session = await open_with(run)
        await run.conn.load_session(cwd=str(workspace), session_id=session,
                                    mcp_servers=[stdio("again")])
        assert await run.prompt(session, "go") == "end_turn"
        (echo,) = by_title(client, "again: echo")
        assert final_text(client, echo) == "echo: back"


async def test_secrets_in_env_never_reach_the_log_the_store_or_the_model(
    tmp_path: Path, data_dir: Path, workspace: Path
) -> None:
    plain = "correct-horse-battery-staple"
    script = write_script(tmp_path / "s.json", calls(
        ("mcp__srv__env", {"name": "GH_TOKEN"}), ("mcp__srv__env", {"name": "PLAIN"}),
    ))
    client = RecordingClient()
    env = config(tmp_path, '[mcp.servers.srv]\nallow = ["env"]\n')
    async with acpd(tmp_path, data_dir=data_dir, workspace=workspace, client=client,
                    script=script, env=env) as run:
        session = await open_with(run, stdio(env={"GH_TOKEN": TOKEN, "PLAIN": plain}))
        assert await run.prompt(session, "go") == "end_turn"
        for card in by_title(client, "srv: env"):
            shown = final_text(client, card)
            assert TOKEN not in shown and plain not in shown and "REDACTED" in shown, shown
        daemon_log = run.daemon_log()
    for secret in (TOKEN, plain):
        assert secret not in daemon_log
        assert holding(data_dir, secret) == []


def holding(root: Path, secret: str) -> list[Path]:
    """The files under `root` that contain `secret`."""
    return [p for p in root.rglob("*") if p.is_file() and secret.encode() in p.read_bytes()]


@pytest.fixture(params=["http", "sse"])
async def http_server(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[str]:
    kind = request.param
    port_file = tmp_path / f"{kind}.port"
    process = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "tests.mcp.server", kind, str(port_file), cwd=REPO,
        stdin=asyncio.subprocess.DEVNULL,
    )
    try:
        for _ in range(1200):  # the server writes the file once it listens
            if port_file.exists():
                break
            await asyncio.sleep(0.05)
        port = int(port_file.read_text())
        yield f"http://127.0.0.1:{port}/{'mcp' if kind == 'http' else 'sse'}#{kind}"
    finally:
        process.terminate()
        await process.wait()


async def test_a_server_over_http_on_loopback(
    tmp_path: Path, data_dir: Path, workspace: Path, http_server: str
) -> None:
    from acp.schema import HttpMcpServer, SseMcpServer

    url, kind = http_server.split("#")
    headers = [HttpHeader(name="Authorization", value=f"Bearer {TOKEN}")]
    server = (HttpMcpServer(name="web", url=url, headers=headers, type="http") if kind == "http"
              else SseMcpServer(name="web", url=url, headers=headers, type="sse"))
    script = write_script(tmp_path / "s.json", calls(("mcp__web__echo", {"text": "over http"})))
    client = RecordingClient(answer=always("allow_once"))
    async with acpd(tmp_path, data_dir=data_dir, workspace=workspace, client=client,
                    script=script) as run:
        session = await open_with(run, server)
        assert await run.prompt(session, "go") == "end_turn"
        (asked,) = client.calls("session/request_permission")
        assert asked["toolCall"]["title"] == "web: echo"
        (card,) = by_title(client, "web: echo")
        assert final_text(client, card) == "echo: over http"
        daemon_log = run.daemon_log()
    assert TOKEN not in daemon_log


async def test_load_over_a_live_session_replaces_its_servers(
    tmp_path: Path, data_dir: Path, workspace: Path
) -> None:
    before, after = sleep_marker(), sleep_marker()
    async with acpd(tmp_path, data_dir=data_dir, workspace=workspace) as run:
        session = await open_with(run, stdio("srv", "stdio", "--child", before))
        assert await run.prompt(session, "/tools") == "end_turn"
        assert marked(before)
        await run.conn.load_session(cwd=str(workspace), session_id=session,
                                    mcp_servers=[stdio("srv", "stdio", "--child", after)])
        assert await wait_unmarked(before) == []
        assert await run.prompt(session, "/tools") == "end_turn"
        assert marked(after)
    assert await wait_unmarked(after) == []


@pytest.mark.parametrize(("entry", "says"), [
    ({"name": "x", "command": "", "args": [], "env": []}, "mcpServers[0] ('x').command"),
    ({"name": "", "command": "srv", "args": [], "env": []}, "mcpServers[0].name"),
    ({"type": "http", "name": "w", "url": "ftp://h/x", "headers": []}, "http:// or https://"),
    ({"name": "x", "command": "srv", "args": [],
      "env": [{"name": "A=B", "value": TOKEN}]}, "must not contain '='"),
    ({"type": "carrier-pigeon", "name": "p"}, "type must be stdio, http or sse"),
])
async def test_a_malformed_server_entry_is_invalid_params_and_echoes_no_secret(
    tmp_path: Path, data_dir: Path, workspace: Path, entry: dict[str, Any], says: str
) -> None:
    from acp import RequestError

    async with acpd(tmp_path, data_dir=data_dir, workspace=workspace) as run:
        await run.initialize()
        with pytest.raises(RequestError) as refused:
            await run.raw("session/new", {"cwd": str(workspace), "mcpServers": [entry]})
        assert refused.value.code == -32602
        assert says in str(refused.value.data or refused.value), refused.value
        assert TOKEN not in str(refused.value.data) + str(refused.value)
        sessions = await run.raw("session/list", {})
        assert sessions["sessions"] == []


async def test_list_changed_shows_new_tools_at_once_and_they_ask_unless_named(
    tmp_path: Path, data_dir: Path, workspace: Path
) -> None:
    script = write_script(tmp_path / "s.json", calls(
        ("mcp__srv__grow", {"name": "newt"}), ("mcp__srv__newt", {"text": "a"}),
        ("mcp__srv__grow", {"name": "late"}), ("mcp__srv__late", {"text": "b"}),
    ))
    client = RecordingClient(answer=always("allow_once"))
    env = config(tmp_path, '[mcp.servers.srv]\nallow = ["grow", "late"]\n')
    async with acpd(tmp_path, data_dir=data_dir, workspace=workspace, client=client,
                    script=script, env=env) as run:
        session = await open_with(run, stdio())
        assert await run.prompt(session, "go") == "end_turn"
        asked = [a["toolCall"]["title"] for a in client.calls("session/request_permission")]
        assert asked == ["srv: newt"]
        (newt,) = by_title(client, "srv: newt")
        (late,) = by_title(client, "srv: late")
        assert final_text(client, newt) == "newt: a" and final_text(client, late) == "late: b"


async def test_cancel_during_a_call_closes_the_card_and_the_server_serves_the_next_turn(
    tmp_path: Path, data_dir: Path, workspace: Path
) -> None:
    script = write_script(tmp_path / "s.json", [
        *calls(("mcp__srv__slow", {"seconds": 120}))[:1],
        *calls(("mcp__srv__echo", {"text": "next"})),
    ])
    client = RecordingClient()
    env = config(tmp_path, '[mcp.servers.srv]\nallow = ["slow", "echo"]\n')
    async with acpd(tmp_path, data_dir=data_dir, workspace=workspace, client=client,
                    script=script, env=env) as run:
        session = await open_with(run, stdio())
        turn = asyncio.ensure_future(run.prompt(session, "wait"))
        await client.wait_for(lambda: any(
            u.get("status") == "in_progress" for u in client.updates), within=60)
        await run.conn.cancel(session_id=session)
        assert await turn == "cancelled"
        (slow,) = by_title(client, "srv: slow")
        assert client.final(slow["toolCallId"])["status"] == "failed"
        assert await run.prompt(session, "again") == "end_turn"
        (echo,) = by_title(client, "srv: echo")
        assert final_text(client, echo) == "echo: next"
