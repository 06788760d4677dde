"""Spawning `acpd serve` behind the logging tee, with an SDK client, and checking the wire.

Every run's log is validated when the run ends: each message acpd wrote against the ACP v1
schema (tests/e2e/schema.py), plus the ordering rules of DESIGN.md that a schema cannot
express (a session's response before its updates, terminal release exactly once and after
the final update, never naming a released terminal).
"""

from __future__ import annotations

import asyncio
import json
import os
import secrets
import sys
import time
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from acp import RequestError
from acp.client.connection import ClientSideConnection
from acp.schema import (
    AudioContentBlock,
    ClientCapabilities,
    EmbeddedResourceContentBlock,
    FileSystemCapabilities,
    ImageContentBlock,
    ResourceContentBlock,
    TextContentBlock,
)
from acp.stdio import spawn_agent_process

from tests.e2e.client import RecordingClient
from tests.e2e.schema import REPO, WireLine, assert_valid_log, read_log


def caps(*, fs: bool = True, terminal: bool = True) -> ClientCapabilities:
    return ClientCapabilities(
        fs=FileSystemCapabilities(read_text_file=fs, write_text_file=fs), terminal=terminal
    )


Block = (
    TextContentBlock | ImageContentBlock | AudioContentBlock | ResourceContentBlock
    | EmbeddedResourceContentBlock
)


def text(value: str) -> list[Block]:
    return [TextContentBlock(type="text", text=value)]


def write_script(path: Path, turns: list[dict[str, Any]]) -> Path:
    path.write_text(json.dumps({"turns": turns}))
    return path


def daemon_env(home: Path, extra: dict[str, str] | None = None) -> dict[str, str]:
    """An environment that cannot pick up the developer's own acpd config."""
    env = {
        "ACPD_CONFIG": str(home / "no-config.toml"),
        "XDG_CONFIG_HOME": str(home / "config"),
        "XDG_DATA_HOME": str(home / "share"),
        "PYTHONPATH": str(REPO),
        "ACPD_LOG": "INFO",
    }
    env.update(extra or {})
    return env


@dataclass
class Run:
    conn: ClientSideConnection
    process: asyncio.subprocess.Process
    client: RecordingClient
    log: Path
    stderr: Path
    workspace: Path
    checks: list[Callable[[list[WireLine]], None]] = field(default_factory=list)

    async def initialize(self, capabilities: ClientCapabilities | None = None) -> Any:
        return await self.conn.initialize(
            protocol_version=1, client_capabilities=capabilities or caps()
        )

    async def new_session(self, cwd: Path | None = None) -> str:
        response = await self.conn.new_session(cwd=str(cwd or self.workspace), mcp_servers=[])
        return response.session_id

    async def open_session(self, capabilities: ClientCapabilities | None = None) -> str:
        """initialize, then a new session in the workspace: what most tests start with."""
        await self.initialize(capabilities)
        return await self.new_session()

    async def prompt(self, session_id: str, value: str) -> str:
        response = await self.conn.prompt(session_id=session_id, prompt=text(value))
        return response.stop_reason

    async def raw(self, method: str, params: dict[str, Any]) -> Any:
        """A request the SDK has no method for (session/delete) or must not pre-validate."""
        return await self.conn._conn.send_request(method, params)

    def wire(self) -> list[WireLine]:
        return read_log(self.log)

    def daemon_log(self) -> str:
        return self.stderr.read_text(errors="replace") if self.stderr.exists() else ""


@asynccontextmanager
async def acpd(
    tmp: Path, *, data_dir: Path, workspace: Path, args: tuple[str, ...] = (),
    client: RecordingClient | None = None, env: dict[str, str] | None = None,
    name: str = "run", script: Path | None = None, unstable: bool = False,
) -> AsyncIterator[Run]:
    """Spawn tee + `acpd serve` (with `--model scripted:SCRIPT` when given); on exit close
    stdin, then validate everything acpd wrote."""
    if script is not None:
        args = ("--model", f"scripted:{script}", *args)
    log = tmp / f"{name}.wire.log"
    stderr_path = tmp / f"{name}.stderr.log"
    client = client or RecordingClient()
    daemon = [sys.executable, "-m", "acpd", "serve", "--data-dir", str(data_dir), *args]
    run: Run | None = None
    body_done = False
    try:
        with stderr_path.open("ab") as stderr:
            async with spawn_agent_process(
                client, sys.executable, "-m", "tests.e2e.tee", str(log), "--", *daemon,
                env={**os.environ, **daemon_env(tmp, env)}, cwd=REPO,
                transport_kwargs={"stderr": stderr.fileno(), "shutdown_timeout": 5.0},
                use_unstable_protocol=unstable,  # the SDK routes elicitation/* only then
            ) as (conn, process):
                run = Run(conn, process, client, log, stderr_path, workspace)
                try:
                    yield run
                    body_done = True
                finally:
                    await client.close()
    except (ConnectionResetError, BrokenPipeError):
        # The SDK fails its own shutdown when the daemon has already gone (a test that
        # closed stdin itself): that is the test's expected end, not an error.
        if not body_done or run is None or run.process.returncode is None:
            raise
    assert run is not None
    try:
        check_wire(run)
    except AssertionError as exc:
        raise AssertionError(f"{exc}\n--- acpd stderr ---\n{run.daemon_log()[-4000:]}") from None


def check_wire(run: Run) -> None:
    assert_valid_log(run.log)
    lines = run.wire()
    assert_wire_rules(lines)
    for check in run.checks:
        check(lines)


# --- protocol rules a schema cannot state ----------------------------------------------------


def assert_wire_rules(lines: list[WireLine]) -> None:
    _sessions_answered_before_updates(lines)
    _turn_flushed_before_its_response(lines)
    _terminal_lifecycle(lines)


TURN_UPDATES = {
    "user_message_chunk", "agent_message_chunk", "agent_thought_chunk", "tool_call",
    "tool_call_update", "plan", "usage_update",
}


def _turn_flushed_before_its_response(lines: list[WireLine]) -> None:
    """Every update of a turn precedes the `session/prompt` response: after it, nothing of
    the turn's kinds for that session until a new prompt or a load (which replays)."""
    prompts: dict[Any, str] = {}  # client request id -> session
    quiet: dict[str, int] = {}  # session -> line of the prompt response
    for line in lines:
        msg = line.message
        if not isinstance(msg, dict):
            continue
        params = msg.get("params") if isinstance(msg.get("params"), dict) else {}
        if line.direction == "C":
            if msg.get("method") in ("session/prompt", "session/load"):
                quiet.pop(str(params.get("sessionId")), None)
            if msg.get("method") == "session/prompt" and "id" in msg:
                prompts[msg["id"]] = str(params.get("sessionId"))
            continue
        if "method" not in msg and msg.get("id") in prompts and "result" in msg:
            quiet[prompts.pop(msg["id"])] = line.number
            continue
        if msg.get("method") == "session/update":
            session_id = str(params.get("sessionId"))
            kind = (params.get("update") or {}).get("sessionUpdate")
            assert not (session_id in quiet and kind in TURN_UPDATES), (
                f"line {line.number}: {kind} for {session_id} after its prompt was answered "
                f"on line {quiet.get(session_id)}"
            )


def _sessions_answered_before_updates(lines: list[WireLine]) -> None:
    """No update or request for a session before the response that creates it."""
    known: set[str] = set()
    asked: dict[Any, str] = {}
    for line in lines:
        msg = line.message
        if not isinstance(msg, dict):
            continue
        if line.direction == "C":
            if msg.get("method") in ("session/load", "session/resume", "session/prompt",
                                     "session/close", "session/delete", "session/set_mode",
                                     "session/set_config_option", "session/cancel"):
                session_id = (msg.get("params") or {}).get("sessionId")
                if isinstance(session_id, str):
                    known.add(session_id)
            if "id" in msg and "method" in msg:
                asked[msg["id"]] = msg["method"]
            continue
        if "method" not in msg and asked.get(msg.get("id")) == "session/new":
            result = msg.get("result") or {}
            if isinstance(result.get("sessionId"), str):
                known.add(result["sessionId"])
        params = msg.get("params")
        session_id = params.get("sessionId") if isinstance(params, dict) else None
        if isinstance(session_id, str):
            assert session_id in known, (
                f"line {line.number}: acpd sent {msg.get('method')} for session {session_id} "
                "before the response that created it"
            )


def _terminal_lifecycle(lines: list[WireLine]) -> None:
    """`terminal/release` exactly once per terminal, after the final tool_call_update that
    embeds it, and no message from acpd names the terminal after the release."""
    created: dict[Any, int] = {}  # acpd's request id -> line
    terminal_of_call: dict[str, str] = {}
    final_line: dict[str, int] = {}  # tool call id -> line of its final update
    released: dict[str, int] = {}
    terminals: set[str] = set()
    for line in lines:
        msg = line.message
        if not isinstance(msg, dict):
            continue
        if line.direction == "A" and msg.get("method") == "terminal/create":
            created[msg.get("id")] = line.number
            continue
        if line.direction == "C" and "method" not in msg and msg.get("id") in created:
            terminal_id = (msg.get("result") or {}).get("terminalId")
            if isinstance(terminal_id, str):
                terminals.add(terminal_id)
            continue
        if line.direction != "A":
            continue
        if msg.get("method") == "terminal/release":
            terminal_id = str((msg.get("params") or {}).get("terminalId"))
            assert terminal_id not in released, (
                f"line {line.number}: terminal {terminal_id} released twice"
            )
            calls = [c for c, t in terminal_of_call.items() if t == terminal_id]
            assert calls, (
                f"line {line.number}: terminal {terminal_id} released, but no tool call "
                "embedded it first"
            )
            for call in calls:
                assert call in final_line, (
                    f"line {line.number}: terminal {terminal_id} released before the final "
                    f"tool_call_update of {call}"
                )
            released[terminal_id] = line.number
            continue
        raw = line.raw.decode(errors="replace")
        for terminal_id, at in released.items():
            assert f'"{terminal_id}"' not in raw, (
                f"line {line.number}: acpd names terminal {terminal_id}, released on line {at}"
            )
        params = msg.get("params") if msg.get("method") == "session/update" else None
        update = params.get("update") if isinstance(params, dict) else None
        kind = update.get("sessionUpdate") if isinstance(update, dict) else None
        if isinstance(update, dict) and kind in ("tool_call", "tool_call_update"):
            call_id = str(update.get("toolCallId"))
            for content in update.get("content") or []:
                if content.get("type") == "terminal":
                    terminal_of_call[call_id] = str(content.get("terminalId"))
            if update.get("status") in ("completed", "failed"):
                final_line[call_id] = line.number
    never = terminals - set(released)
    assert not never, f"terminals never released: {sorted(never)}"


# --- processes ---------------------------------------------------------------------------------


def alive(pid: int) -> bool:
    """True while the process exists and is not a zombie."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except (FileNotFoundError, ProcessLookupError):
        return False
    return stat.rsplit(")", 1)[1].split()[0] not in ("Z", "X")


def sleep_marker() -> str:
    """A `sleep` duration no other test (or helper's run on this machine) uses: commands run
    in a PID namespace (the kernel sandbox), where `$$` is not a host pid, so tests find
    their processes by this marker in /proc/*/cmdline instead."""
    return f"60.{secrets.randbelow(10**6):06d}"


def marked(marker: str) -> list[int]:
    """Live (not zombie) processes whose command line contains `marker`."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or int(entry.name) == os.getpid():
            continue
        try:
            cmdline = (entry / "cmdline").read_bytes()
        except OSError:
            continue
        if marker.encode() in cmdline and alive(int(entry.name)):
            found.append(int(entry.name))
    return found


async def wait_unmarked(marker: str, within: float = 10.0) -> list[int]:
    """The processes still carrying `marker` after `within` seconds."""
    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        if not await asyncio.to_thread(marked, marker):
            return []
        await asyncio.sleep(0.05)
    return marked(marker)


async def wait_dead(pids: list[int], within: float = 10.0) -> list[int]:
    """The pids still alive after `within` seconds."""
    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        if not any(alive(p) for p in pids):
            return []
        await asyncio.sleep(0.05)
    return [p for p in pids if alive(p)]


async def wait_for_file_lines(path: Path, count: int, within: float = 15.0) -> list[str]:
    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        lines = await asyncio.to_thread(_words, path)
        if len(lines) >= count:
            return lines
        await asyncio.sleep(0.05)
    raise AssertionError(f"{path} did not get {count} lines within {within} s")


def _words(path: Path) -> list[str]:
    try:
        return path.read_text().split()
    except FileNotFoundError:
        return []


def rpc_error(exc: BaseException) -> tuple[int, str]:
    assert isinstance(exc, RequestError), exc
    return exc.code, str(exc)
