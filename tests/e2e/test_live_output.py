"""Live output of commands acpd runs itself, through `acpd serve` and the official Python SDK:
the v1 `_meta` terminal convention (offered only when the client asks for it), plain card
text otherwise, replay by snapshot on `session/load`, redaction of secrets split across
reads, and a flooding command that does not stall another session. Every message is checked
against the v1 schema when the run ends (tests/e2e/harness.py)."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from acp.schema import ClientCapabilities, FileSystemCapabilities

from tests.e2e.client import RecordingClient
from tests.e2e.harness import acpd, sleep_marker, text, wait_unmarked, write_script

pytestmark = pytest.mark.anyio


def meta_caps(asked: bool = True) -> ClientCapabilities:
    """No editor terminal (acpd runs commands itself); `_meta.terminal_output` as Zed sends it."""
    return ClientCapabilities(
        fs=FileSystemCapabilities(read_text_file=True, write_text_file=True), terminal=False,
        field_meta={"terminal_output": True, "terminal-auth": True} if asked else None,
    )


def bash_then(command: str, final: str = "done") -> list[dict[str, Any]]:
    return [{"tool_calls": [{"name": "bash", "arguments": {"command": command}}]},
            {"text": final}]


def gated(*lines: str) -> str:
    """Print each line, then wait for the file `gN` before the next one: the test releases
    them one by one after it saw the previous line arrive, so the chunks provably flow
    while the command runs."""
    parts = []
    for n, line in enumerate(lines):
        parts.append(f"echo {line}")
        if n < len(lines) - 1:
            parts.append(f"while [ ! -e g{n} ]; do sleep 0.02; done")
    return "; ".join(parts)


def meta_of(update: dict[str, Any], key: str) -> dict[str, Any] | None:
    meta = update.get("_meta") or {}
    value = meta.get(key)
    return value if isinstance(value, dict) else None


def outputs(client: RecordingClient, call_id: str) -> list[str]:
    return [m["data"] for u in client.tool_updates(call_id)
            if (m := meta_of(u, "terminal_output")) is not None]


def card_text(update: dict[str, Any]) -> str:
    return "".join(c["content"].get("text", "") for c in update.get("content") or []
                   if c.get("type") == "content")


async def released_one_by_one(
    client: RecordingClient, workspace: Path, seen: Callable[[], str], lines: list[str]
) -> None:
    for n, line in enumerate(lines[:-1]):

        def arrived(line: str = line) -> bool:
            return line in seen()

        await client.wait_for(arrived, within=20)
        await asyncio.to_thread((workspace / f"g{n}").touch)


async def test_meta_terminal_streams_chunks_in_order_then_the_exit(
    tmp_path: Path, data_dir: Path, workspace: Path
) -> None:
    lines = ["alpha", "bravo", "charlie", "delta"]
    script = write_script(tmp_path / "s.json", bash_then(gated(*lines) + "; exit 3"))
    client = RecordingClient()
    async with acpd(tmp_path, data_dir=data_dir, workspace=workspace, client=client,
                    script=script) as run:
        session_id = await run.open_session(meta_caps())
        prompt = asyncio.ensure_future(
            run.conn.prompt(session_id=session_id, prompt=text("go")))
        await client.wait_for(lambda: bool(client.tool_calls()))
        call_id = client.tool_calls()[0]["toolCallId"]
        await released_one_by_one(client, workspace,
                                  lambda: "".join(outputs(client, call_id)), lines)
        assert (await asyncio.wait_for(prompt, 30)).stop_reason == "end_turn"

        updates = client.tool_updates(call_id)
        first = updates[0]
        assert first["sessionUpdate"] == "tool_call"
        assert meta_of(first, "terminal_info") == {"terminal_id": call_id,
                                                   "cwd": str(workspace)}
        chunks = outputs(client, call_id)
        assert len(chunks) >= len(lines)  # one per release at least: they came as written
        assert "".join(chunks) == "".join(f"{line}\n" for line in lines)
        final = client.final(call_id)
        assert final["status"] == "failed" and final["rawOutput"]["exit_code"] == 3
        # The final output is the same bytes (the output stage trims the last newline).
        assert "".join(chunks).rstrip("\n") == final["rawOutput"]["stdout"].rstrip("\n")
        assert {"type": "terminal", "terminalId": call_id} in final["content"]
        exits = [(i, m) for i, u in enumerate(updates)
                 if (m := meta_of(u, "terminal_exit")) is not None]
        assert [m for _, m in exits] == [{"terminal_id": call_id, "exit_code": 3,
                                          "signal": None}]
        # Every chunk before the exit, the exit before the final card.
        last_chunk = max(i for i, u in enumerate(updates) if meta_of(u, "terminal_output"))
        assert last_chunk < exits[0][0] < updates.index(final)
        embeds = [u for u in updates if {"type": "terminal", "terminalId": call_id}
                  in (u.get("content") or [])]
        assert embeds[0]["status"] == "in_progress"
        assert client.calls("terminal/create") == []


async def test_no_meta_convention_unless_the_client_asks(
    tmp_path: Path, data_dir: Path, workspace: Path
) -> None:
    """The same command for a client that did not ask: no `_meta` terminal keys, no
    terminal content; the card's text shows the output while it runs."""
    lines = ["one", "two"]
    script = write_script(tmp_path / "s.json", bash_then(gated(*lines)))
    client = RecordingClient()
    async with acpd(tmp_path, data_dir=data_dir, workspace=workspace, client=client,
                    script=script) as run:
        session_id = await run.open_session(meta_caps(asked=False))
        prompt = asyncio.ensure_future(
            run.conn.prompt(session_id=session_id, prompt=text("go")))
        await client.wait_for(lambda: bool(client.tool_calls()))
        call_id = client.tool_calls()[0]["toolCallId"]

        def live_text() -> str:
            return "".join(card_text(u) for u in client.tool_updates(call_id)
                           if u.get("status") == "in_progress")

        await released_one_by_one(client, workspace, live_text, lines)
        assert (await asyncio.wait_for(prompt, 30)).stop_reason == "end_turn"
        final = client.final(call_id)
        assert "one\ntwo\n" in card_text(final)
        wire = run.log.read_text()
    for key in ("terminal_info", "terminal_output", "terminal_exit", '"type":"terminal"'):
        assert key not in wire.replace(" ", ""), key


async def test_load_replays_one_snapshot_per_terminal(
    tmp_path: Path, data_dir: Path, workspace: Path
) -> None:
    command = "for i in 1 2 3 4 5 6 7 8; do echo row$i; done; exit 0"
    script = write_script(tmp_path / "s.json", bash_then(command))
    client = RecordingClient()
    async with acpd(tmp_path, data_dir=data_dir, workspace=workspace, client=client,
                    script=script) as run:
        session_id = await run.open_session(meta_caps())
        assert await run.prompt(session_id, "go") == "end_turn"
        call_id = client.tool_calls()[0]["toolCallId"]
    expected = "".join(f"row{i}\n" for i in range(1, 9))

    for asked in (True, False):
        loader = RecordingClient()
        async with acpd(tmp_path, data_dir=data_dir, workspace=workspace, client=loader,
                        name=f"load-{asked}") as run:
            await run.initialize(meta_caps(asked))
            await run.conn.load_session(session_id=session_id, cwd=str(workspace),
                                        mcp_servers=[])
            updates = loader.tool_updates(call_id)
            first, final = updates[0], loader.final(call_id)
            replayed = outputs(loader, call_id)
            exits = [m for u in updates if (m := meta_of(u, "terminal_exit")) is not None]
            embedded = {"type": "terminal", "terminalId": call_id} in final["content"]
            if asked:
                assert meta_of(first, "terminal_info") == {"terminal_id": call_id,
                                                           "cwd": str(workspace)}
                assert replayed == [expected]  # one snapshot, not every chunk again
                assert exits == [{"terminal_id": call_id, "exit_code": 0, "signal": None}]
                assert embedded
            else:
                assert meta_of(first, "terminal_info") is None
                assert replayed == [] and exits == [] and not embedded
            assert expected in card_text(final)


SPLIT_SECRETS = [
    # (first part, second part, the value that must never show)
    ("token ghp_", "A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8\n",
     "A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8"),
    ("Authorization: Bearer ", "eyZ9k2Lm4Np6Qr8St0Uv2Wx4Yz6Ab8Cd\n",
     "eyZ9k2Lm4Np6Qr8St0Uv2Wx4Yz6Ab8Cd"),
    ("export DEPLOY_TOKEN=", "s3cr3tV4lu3Xy9Zq\n", "s3cr3tV4lu3Xy9Zq"),
]


@pytest.mark.parametrize("asked", [True, False], ids=["meta", "plain"])
@pytest.mark.parametrize(("head", "rest", "value"), SPLIT_SECRETS,
                         ids=["github-token", "bearer", "env-token"])
async def test_a_secret_split_across_two_writes_is_redacted_in_the_chunks(
    head: str, rest: str, value: str, asked: bool, tmp_path: Path, data_dir: Path,
    workspace: Path,
) -> None:
    """The first half is written, then nothing for a while (long enough for a partial line
    to be shown), then the second half: no chunk, and no concatenation of chunks, shows the
    value or a part of it."""
    (workspace / "a.txt").write_text(head)
    (workspace / "b.txt").write_text(rest)
    command = "cat a.txt; while [ ! -e g0 ]; do sleep 0.02; done; cat b.txt; echo after"
    script = write_script(tmp_path / "s.json", bash_then(command))
    client = RecordingClient()
    async with acpd(tmp_path, data_dir=data_dir, workspace=workspace, client=client,
                    script=script) as run:
        session_id = await run.open_session(meta_caps(asked))
        prompt = asyncio.ensure_future(
            run.conn.prompt(session_id=session_id, prompt=text("go")))
        await client.wait_for(lambda: bool(client.tool_calls()))
        call_id = client.tool_calls()[0]["toolCallId"]
        await asyncio.sleep(0.3)  # the idle flush of a partial line has had its chance
        await asyncio.to_thread((workspace / "g0").touch)
        assert (await asyncio.wait_for(prompt, 30)).stop_reason == "end_turn"
        live = outputs(client, call_id) if asked else [
            card_text(u) for u in client.tool_updates(call_id)
            if u.get("status") == "in_progress"]
        wire = run.log.read_text()
    joined = "".join(live) if asked else live[-1]
    assert "[REDACTED:" in joined and joined.endswith("after\n")
    for part in (value, value[: len(value) // 2], value[len(value) // 2 :]):
        assert part not in wire


async def test_a_flood_of_output_does_not_stall_another_session(
    tmp_path: Path, data_dir: Path, workspace: Path
) -> None:
    """Session A floods (until the test says stop); session B, on the same connection,
    runs a command and answers its prompt meanwhile. A's chunks still arrive in order and
    its final output is whole."""
    flood = ("if [ -e started ]; then echo quiet; else touch started; "
             "while [ ! -e stop ]; do seq 1 20000; done; echo end-of-flood; fi")
    script = write_script(tmp_path / "s.json", bash_then(flood))
    config = tmp_path / "acpd.toml"  # a limit the flood does not reach: it streams throughout
    config.write_text(f"[tools.shell]\noutput_byte_limit = {1 << 30}\n")
    client = RecordingClient()
    async with acpd(tmp_path, data_dir=data_dir, workspace=workspace, client=client,
                    script=script, args=("--config", str(config))) as run:
        await run.initialize(meta_caps())
        a = await run.new_session()
        b = await run.new_session()
        prompt_a = asyncio.ensure_future(run.conn.prompt(session_id=a, prompt=text("a")))
        await client.wait_for(lambda: (workspace / "started").exists()
                              and any(meta_of(u, "terminal_output") for u in client.updates
                                      if u["sessionId"] == a), within=20)
        assert await asyncio.wait_for(run.prompt(b, "b"), 60) == "end_turn"
        assert not prompt_a.done()  # A is still flooding
        answered_b = len(client.events)
        await client.wait_for(lambda: any(  # and A's chunks still flow after B's answer
            kind == "update" and meta_of(u, "terminal_output") and u["sessionId"] == a
            for kind, u in client.events[answered_b:]), within=20)
        (call_b,) = [c for c in client.tool_calls() if c["sessionId"] == b]
        assert "quiet" in card_text(client.final(call_b["toolCallId"]))
        await asyncio.to_thread((workspace / "stop").touch)
        assert (await asyncio.wait_for(prompt_a, 60)).stop_reason == "end_turn"
        (call_a,) = [c for c in client.tool_calls() if c["sessionId"] == a]
        chunks = outputs(client, call_a["toolCallId"])
        final = client.final(call_a["toolCallId"])
    joined = "".join(chunks)
    assert joined.endswith("end-of-flood\n")
    numbers = [line for line in joined.splitlines() if line.isdigit()]
    assert numbers[:3] == ["1", "2", "3"]
    assert "end-of-flood" in final["rawOutput"]["stdout"]


async def test_cancel_while_streaming_reports_the_exit_before_the_answer(
    tmp_path: Path, data_dir: Path, workspace: Path
) -> None:
    mark = sleep_marker()
    script = write_script(tmp_path / "s.json", [
        *bash_then(f"echo started; sleep {mark}")[:1], {"text": "after"}])
    client = RecordingClient()
    async with acpd(tmp_path, data_dir=data_dir, workspace=workspace, client=client,
                    script=script) as run:
        session_id = await run.open_session(meta_caps())
        prompt = asyncio.ensure_future(
            run.conn.prompt(session_id=session_id, prompt=text("go")))
        await client.wait_for(lambda: bool(client.tool_calls()))
        call_id = client.tool_calls()[0]["toolCallId"]
        await client.wait_for(lambda: "started\n" in "".join(outputs(client, call_id)), 20)
        await run.conn.cancel(session_id=session_id)
        assert (await asyncio.wait_for(prompt, 15)).stop_reason == "cancelled"
        assert await wait_unmarked(mark) == []
        updates = client.tool_updates(call_id)
        final = client.final(call_id)
        (exit_info,) = [m for u in updates if (m := meta_of(u, "terminal_exit")) is not None]
        assert exit_info["terminal_id"] == call_id and exit_info["exit_code"] is None
        assert exit_info["signal"] in ("SIGTERM", "SIGKILL")
        assert final["status"] == "failed"
        assert await run.prompt(session_id, "again") == "end_turn"
    # (the harness checks that nothing of the turn came after its answer)
