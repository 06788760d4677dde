"""v1 additions over the official Python SDK: `usage_update` with cost (the provider's own
figure, a configured price table, absent when unknown), the boolean "Confirm every command"
config option (advertised, set, stored, effective), and `additionalDirectories` (each extra
root judged like the cwd; hostile values refused). Every run is schema-checked (v1)."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest
from acp import RequestError
from acp.schema import (
    BooleanConfigOptionCapabilities,
    ClientCapabilities,
    ClientSessionCapabilities,
    FileSystemCapabilities,
    SessionConfigOptionsCapabilities,
)

from tests.e2e.client import RecordingClient
from tests.e2e.harness import acpd, write_script

pytestmark = pytest.mark.anyio


def boolean_caps(*, booleans: bool = True) -> ClientCapabilities:
    session = ClientSessionCapabilities(config_options=SessionConfigOptionsCapabilities(
        boolean=BooleanConfigOptionCapabilities() if booleans else None))
    return ClientCapabilities(
        fs=FileSystemCapabilities(read_text_file=False, write_text_file=False),
        terminal=False, session=session,
    )


def usages(client: RecordingClient) -> list[dict[str, Any]]:
    return [u for u in client.updates if u["sessionUpdate"] == "usage_update"]


# --- usage_update ------------------------------------------------------------------------------


async def test_usage_reports_the_providers_cost_and_adds_it_up(
    tmp_path: Path, data_dir: Path, workspace: Path
) -> None:
    script = write_script(tmp_path / "s.json", [
        {"text": "one", "usage": {"input_tokens": 100, "output_tokens": 20, "cost": 0.25}},
        {"text": "two", "usage": {"input_tokens": 150, "output_tokens": 30, "cost": 0.5}},
    ])
    later = write_script(tmp_path / "later.json", [
        {"text": "three", "usage": {"input_tokens": 10, "output_tokens": 1, "cost": 0.25}},
        {"text": "four", "usage": {"input_tokens": 10, "output_tokens": 1}},
        {"text": "five", "usage": {"input_tokens": 10, "output_tokens": 1, "cost": 1.0}},
    ])
    client = RecordingClient()
    async with acpd(tmp_path, data_dir=data_dir, workspace=workspace, client=client,
                    script=script, name="first") as run:
        session_id = await run.open_session()
        assert await run.prompt(session_id, "a") == "end_turn"
        assert await run.prompt(session_id, "b") == "end_turn"
    first, second = usages(client)
    assert (first["used"], first["size"]) == (120, 200_000)
    assert first["cost"] == {"amount": 0.25, "currency": "USD"}
    assert second["cost"] == {"amount": 0.75, "currency": "USD"}

    # The total is stored: a loaded session keeps counting, and once a call's cost is
    # unknown the total is never shown again (an undercount is not a total).
    loaded = RecordingClient()
    async with acpd(tmp_path, data_dir=data_dir, workspace=workspace, client=loaded,
                    script=later, name="second") as run:
        await run.initialize()
        await run.conn.load_session(cwd=str(workspace), session_id=session_id, mcp_servers=[])
        assert not usages(loaded), "usage is never replayed"
        await run.conn.set_config_option(
            session_id=session_id, config_id="model", value=f"scripted:{later}")
        for prompt in "cde":
            assert await run.prompt(session_id, prompt) == "end_turn"
    third, fourth, fifth = usages(loaded)
    assert third["used"] == 11 and third["cost"] == {"amount": 1.0, "currency": "USD"}
    assert "cost" not in fourth and "cost" not in fifth


async def test_usage_is_priced_from_the_table_only_when_every_token_has_a_price(
    tmp_path: Path, data_dir: Path, workspace: Path
) -> None:
    script = write_script(tmp_path / "s.json", [
        {"text": "a", "usage": {"input_tokens": 3000, "output_tokens": 500,
                                "cache_read_tokens": 2000}},
        {"text": "b", "usage": {"input_tokens": 1000, "output_tokens": 0}},
    ])
    config = tmp_path / "acpd.toml"
    config.write_text(
        f'[agent.prices."scripted:{script}"]\n'
        "input_per_mtok = 2.0\noutput_per_mtok = 8.0\ncache_read_per_mtok = 0.5\n"
        'currency = "EUR"\n'
    )
    client = RecordingClient()
    async with acpd(tmp_path, data_dir=data_dir, workspace=workspace, client=client,
                    script=script, env={"ACPD_CONFIG": str(config)}) as run:
        session_id = await run.open_session()
        assert await run.prompt(session_id, "go") == "end_turn"
        assert await run.prompt(session_id, "again") == "end_turn"
    first, second = usages(client)
    # 1000 fresh * 2 + 2000 cached * 0.5 + 500 out * 8 = 7000 per million.
    assert first["cost"] == {"amount": 0.007, "currency": "EUR"}
    assert second["cost"] == {"amount": 0.009, "currency": "EUR"}


async def test_no_price_and_no_reported_cost_means_no_cost_field(
    tmp_path: Path, data_dir: Path, workspace: Path
) -> None:
    script = write_script(tmp_path / "s.json", [
        {"text": "a", "usage": {"input_tokens": 10, "output_tokens": 2}},
    ])
    config = tmp_path / "acpd.toml"
    # A price for cached tokens is missing: the call had some, so no cost is made up.
    config.write_text('[agent.prices."other-model"]\ninput_per_mtok = 1\noutput_per_mtok = 1\n')
    client = RecordingClient()
    async with acpd(tmp_path, data_dir=data_dir, workspace=workspace, client=client,
                    script=script, env={"ACPD_CONFIG": str(config)}) as run:
        session_id = await run.open_session()
        assert await run.prompt(session_id, "go") == "end_turn"
    [only] = usages(client)
    assert only["used"] == 12 and "cost" not in only


# --- boolean config option -------------------------------------------------------------------


BASH = "echo confirmed-run"


def bash_script(tmp: Path, turns: int = 1) -> Path:
    rounds: list[dict[str, Any]] = []
    for _ in range(turns):
        rounds += [{"tool_calls": [{"name": "bash", "arguments": {"command": BASH}}]},
                   {"text": "ran"}]
    return write_script(tmp / "bash.json", rounds)


async def test_confirm_every_command_is_a_stored_boolean_that_makes_bash_ask(
    tmp_path: Path, data_dir: Path, workspace: Path
) -> None:
    script = bash_script(tmp_path, turns=3)
    client = RecordingClient()
    async with acpd(tmp_path, data_dir=data_dir, workspace=workspace, client=client,
                    script=script, name="first") as run:
        await run.initialize(boolean_caps())
        new = await run.conn.new_session(cwd=str(workspace), mcp_servers=[])
        session_id = new.session_id
        await run.conn.set_session_mode(session_id=session_id, mode_id="auto")
        options = {o.id: o for o in new.config_options or []}
        switch = options["confirm_commands"]
        assert switch.type == "boolean" and switch.current_value is False
        # Off: an allowed command runs without a question (auto mode, echo is allowed).
        assert await run.prompt(session_id, "run it") == "end_turn"
        assert client.calls("session/request_permission") == []
        answer = await run.raw("session/set_config_option", {
            "sessionId": session_id, "configId": "confirm_commands", "type": "boolean",
            "value": True})
        shown = {o["id"]: o for o in answer["configOptions"]}
        assert shown["confirm_commands"]["currentValue"] is True
        assert await run.prompt(session_id, "run it again") == "end_turn"
        [asked] = client.calls("session/request_permission")
        assert asked["toolCall"]["title"].startswith(f"{BASH} (in ")
        assert asked["toolCall"]["rawInput"]["command"] == BASH
        with pytest.raises(RequestError) as caught:
            await run.raw("session/set_config_option", {
                "sessionId": session_id, "configId": "confirm_commands", "value": "maybe"})
        assert caught.value.code == -32602

    # Stored with the session: a new daemon loading it asks too, and says it is on.
    again = RecordingClient(answer=lambda call, options: "reject_once")
    async with acpd(tmp_path, data_dir=data_dir, workspace=workspace, client=again,
                    script=script, name="second") as run:
        await run.initialize(boolean_caps())
        loaded = await run.conn.load_session(
            cwd=str(workspace), session_id=session_id, mcp_servers=[])
        options = {o.id: o for o in loaded.config_options or []}
        assert options["confirm_commands"].current_value is True
        await run.conn.set_session_mode(session_id=session_id, mode_id="auto")
        assert await run.prompt(session_id, "once more") == "end_turn"
        assert len(again.calls("session/request_permission")) == 1
        [call] = [u for u in again.tool_calls() if u["rawInput"]["command"] == BASH][-1:]
        assert again.final(call["toolCallId"])["status"] == "failed"


async def test_a_client_without_boolean_options_gets_an_on_off_select(
    tmp_path: Path, data_dir: Path, workspace: Path
) -> None:
    script = bash_script(tmp_path)
    client = RecordingClient()
    async with acpd(tmp_path, data_dir=data_dir, workspace=workspace, client=client,
                    script=script) as run:
        await run.initialize(boolean_caps(booleans=False))
        new = await run.conn.new_session(cwd=str(workspace), mcp_servers=[])
        options = {o.id: o for o in new.config_options or []}
        switch = options["confirm_commands"]
        assert switch.type == "select" and switch.current_value == "off"
        await run.conn.set_config_option(
            session_id=new.session_id, config_id="confirm_commands", value="on")
        await run.conn.set_session_mode(session_id=new.session_id, mode_id="auto")
        assert await run.prompt(new.session_id, "run") == "end_turn"
        assert len(client.calls("session/request_permission")) == 1


# --- additionalDirectories ---------------------------------------------------------------------


async def test_an_extra_root_is_readable_and_runnable_like_the_cwd(
    tmp_path: Path, data_dir: Path, workspace: Path
) -> None:
    extra = tmp_path / "lib"
    extra.mkdir()
    (extra / "notes.txt").write_text("from the extra root\n")
    outside = tmp_path / "elsewhere"
    outside.mkdir()
    (outside / "secret.txt").write_text("not yours\n")
    script = write_script(tmp_path / "s.json", [
        {"tool_calls": [
            {"name": "read", "arguments": {"path": str(extra / "notes.txt")}},
            {"name": "read", "arguments": {"path": str(outside / "secret.txt")}},
            {"name": "bash", "arguments": {"command": f"cat {extra}/notes.txt"}},
        ]},
        {"text": "done"},
    ])
    client = RecordingClient()
    async with acpd(tmp_path, data_dir=data_dir, workspace=workspace, client=client,
                    script=script) as run:
        init = await run.initialize(boolean_caps())
        caps = init.agent_capabilities.session_capabilities
        assert caps is not None and caps.additional_directories is not None
        new = await run.conn.new_session(
            cwd=str(workspace), mcp_servers=[],
            additional_directories=[str(extra), str(extra), str(workspace / "src")],
        )
        await run.conn.set_session_mode(session_id=new.session_id, mode_id="auto")
        assert await run.prompt(new.session_id, "read both") == "end_turn"
        listed = (await run.conn.list_sessions()).sessions[0]
        assert listed.additional_directories == [str(extra)]
    inside, foreign, bash = client.tool_calls()
    assert client.final(inside["toolCallId"])["status"] == "completed"
    text = client.final(inside["toolCallId"])["content"][-1]["content"]["text"]
    assert "from the extra root" in text
    # Outside every root the path policy asks (outside_read = "ask"); inside the extra root
    # nothing asks, as inside the cwd. The bash call reads it in the sandbox without asking.
    asked = client.calls("session/request_permission")
    assert [a["toolCall"]["toolCallId"] for a in asked] == [foreign["toolCallId"]]
    ran = client.final(bash["toolCallId"])
    assert ran["status"] == "completed", ran
    assert "from the extra root" in ran["content"][-1]["content"]["text"]


def hostile(tmp: Path, workspace: Path) -> list[tuple[str, str]]:
    home = os.path.expanduser("~")
    link = tmp / "link-to-root"
    link.symlink_to("/")
    ssh = Path(home) / ".ssh"
    cases = [
        ("relative", "lib"),
        ("missing", str(tmp / "nope")),
        ("root", "/"),
        ("root via symlink", str(link)),
        ("home", home),
        ("parent of cwd", str(workspace.parent)),
        ("dotdot to parent", str(workspace / "..")),
        ("system tree", "/etc"),
        ("a file", str(workspace / "hello.txt")),
        ("empty", ""),
        ("tmp itself", "/tmp"),
    ]
    if ssh.is_dir():
        cases.append(("deny_read dir", str(ssh)))
    return cases


async def test_hostile_extra_roots_are_refused_with_a_clear_error(
    tmp_path: Path, data_dir: Path, workspace: Path
) -> None:
    secrets = tmp_path / "vault"
    (secrets / ".aws").mkdir(parents=True)
    config = tmp_path / "acpd.toml"
    config.write_text(f'[tools.file]\ndeny_read = ["{secrets}/.aws/**"]\n')
    cases = [*hostile(tmp_path, workspace), ("configured deny_read", str(secrets / ".aws"))]
    async with acpd(tmp_path, data_dir=data_dir, workspace=workspace,
                    env={"ACPD_CONFIG": str(config)}) as run:
        await run.initialize()
        for label, value in cases:
            with pytest.raises(RequestError) as caught:
                await run.raw("session/new", {
                    "cwd": str(workspace), "mcpServers": [], "additionalDirectories": [value]})
            assert caught.value.code == -32602, label
            assert "additionalDirectories" in str(caught.value), label
        assert (await run.conn.list_sessions()).sessions == [], "a refused session was made"
        with pytest.raises(RequestError):
            await run.raw("session/new", {
                "cwd": str(workspace), "mcpServers": [], "additionalDirectories": "/tmp/x"})
        # Load and resume check them the same way, and the list replaces the stored one.
        made = await run.conn.new_session(cwd=str(workspace), mcp_servers=[])
        for method in ("session/load", "session/resume"):
            with pytest.raises(RequestError) as caught:
                await run.raw(method, {
                    "sessionId": made.session_id, "cwd": str(workspace), "mcpServers": [],
                    "additionalDirectories": ["/"]})
            assert caught.value.code == -32602
