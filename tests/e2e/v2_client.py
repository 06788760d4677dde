"""A raw JSON-RPC ACP client for the v2 draft (the Python SDK speaks v1 only).

It spawns the logging tee in front of `acpd serve`, writes one JSON object per line, answers
`session/request_permission` with a configurable option, answers any other request from acpd
(`fs/*`, `terminal/*` included, which a v2 agent must never send) with -32601 and records
it, and records every notification in arrival order. On exit it closes stdin, waits for the
daemon, and validates the wire log against the schema of the negotiated version.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import sys
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tests.e2e.harness import _sessions_answered_before_updates, daemon_env
from tests.e2e.schema import REPO, WireLine, assert_valid_log, read_log

Chooser = Callable[[dict[str, Any]], str | None]
"""Permission params -> optionId to select, or None to answer "cancelled"."""


class RpcFailure(Exception):
    def __init__(self, error: dict[str, Any]) -> None:
        self.code = int(error.get("code", 0))
        self.error = error
        super().__init__(f"{self.code} {error.get('message')}")


@dataclass
class RawClient:
    process: asyncio.subprocess.Process
    log: Path
    choose: Chooser = lambda _params: "allow_once"
    events: list[tuple[str, Any]] = field(default_factory=list)
    """("update", update) | ("request", {method, params}) | ("response", {id, ...}) in order."""
    _next_id: int = 0
    _waiting: dict[int, asyncio.Future[Any]] = field(default_factory=dict)
    _changed: asyncio.Event = field(default_factory=asyncio.Event)
    _reader: asyncio.Task[None] | None = None

    # --- what the tests read ---------------------------------------------------------------

    @property
    def updates(self) -> list[dict[str, Any]]:
        return [v for k, v in self.events if k == "update"]

    def requests(self, method: str | None = None) -> list[dict[str, Any]]:
        return [v for k, v in self.events if k == "request" and method in (None, v["method"])]

    def kinds(self, *kinds: str) -> list[dict[str, Any]]:
        return [u for u in self.updates if u.get("sessionUpdate") in kinds]

    async def wait_for(self, predicate: Callable[[], bool], within: float = 20.0) -> None:
        async with asyncio.timeout(within):
            while not predicate():
                self._changed.clear()
                await self._changed.wait()

    async def wait_idle(self, session_id: str, count: int = 1) -> dict[str, Any]:
        """The `count`-th idle state update of the session (what ends a v2 turn)."""

        def idles() -> list[dict[str, Any]]:
            return [u for u in self.kinds("state_update")
                    if u["state"] == "idle" and u["sessionId"] == session_id]

        await self.wait_for(lambda: len(idles()) >= count)
        return idles()[count - 1]

    # --- the wire --------------------------------------------------------------------------

    async def request(self, method: str, params: Any) -> Any:
        """Send a request; its result, or RpcFailure with its error."""
        self._next_id += 1
        future: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
        self._waiting[self._next_id] = future
        await self.send({"jsonrpc": "2.0", "id": self._next_id, "method": method,
                         "params": params})
        return await asyncio.wait_for(future, 60)

    async def notify(self, method: str, params: Any) -> None:
        await self.send({"jsonrpc": "2.0", "method": method, "params": params})

    async def send(self, message: Any) -> None:
        await self.send_raw(json.dumps(message).encode() + b"\n")

    async def send_raw(self, line: bytes) -> None:
        assert self.process.stdin is not None
        self.process.stdin.write(line)
        await self.process.stdin.drain()

    def responses(self) -> list[dict[str, Any]]:
        return [v for k, v in self.events if k == "response"]

    async def read_loop(self) -> None:
        assert self.process.stdout is not None
        while line := await self.process.stdout.readline():
            await self._dispatch(json.loads(line))
            self._changed.set()

    async def _dispatch(self, message: dict[str, Any]) -> None:
        if "method" not in message:
            self.events.append(("response", message))
            future = self._waiting.pop(message.get("id"), None)
            if future is not None and not future.done():
                if "error" in message:
                    future.set_exception(RpcFailure(message["error"]))
                else:
                    future.set_result(message.get("result"))
            return
        method, params = message["method"], message.get("params")
        if "id" not in message:
            if method == "session/update":
                self.events.append(("update", {"sessionId": params["sessionId"],
                                               **params["update"]}))
            else:
                self.events.append(("notification", {"method": method, "params": params}))
            return
        self.events.append(("request", {"method": method, "params": params}))
        if method == "session/request_permission":
            choice = self.choose(params)
            outcome = ({"outcome": "cancelled"} if choice is None
                       else {"outcome": "selected", "optionId": choice})
            await self.send({"jsonrpc": "2.0", "id": message["id"],
                             "result": {"outcome": outcome}})
            return
        await self.send({"jsonrpc": "2.0", "id": message["id"],
                         "error": {"code": -32601, "message": f"no {method} here"}})


V2_CLIENT_INFO = {"name": "acpd-tests", "title": "acpd tests", "version": "0.0.0"}


@asynccontextmanager
async def raw_acpd(
    tmp: Path, *, data_dir: Path, script: Path | None = None, name: str = "v2",
    choose: Chooser | None = None, version: int | None = 2,
) -> AsyncIterator[RawClient]:
    """Spawn tee + `acpd serve`; on exit close stdin, wait, and validate the wire log (against
    `version`'s schema, or the negotiated one when None)."""
    log = tmp / f"{name}.wire.log"
    stderr_path = tmp / f"{name}.stderr.log"
    args = ["--model", f"scripted:{script}"] if script is not None else []
    daemon = [sys.executable, "-m", "acpd", "serve", "--data-dir", str(data_dir), *args]
    with stderr_path.open("ab") as stderr:
        process = await asyncio.create_subprocess_exec(
            sys.executable, "-m", "tests.e2e.tee", str(log), "--", *daemon,
            stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE, stderr=stderr,
            env={**os.environ, **daemon_env(tmp)}, cwd=REPO, limit=1 << 24,
        )
    client = RawClient(process, log)
    if choose is not None:
        client.choose = choose
    client._reader = asyncio.create_task(client.read_loop())
    try:
        yield client
    finally:
        assert process.stdin is not None
        with contextlib.suppress(BrokenPipeError, ConnectionResetError):
            process.stdin.close()
        try:
            await asyncio.wait_for(process.wait(), 10)
        except TimeoutError:
            process.kill()
            await process.wait()
        with contextlib.suppress(Exception):
            await asyncio.wait_for(client._reader, 5)
    try:
        assert_valid_log(log, version)
        lines = read_log(log)
        _sessions_answered_before_updates(lines)
        _prompts_echoed_with_their_message_id(lines)
    except AssertionError as exc:
        daemon_log = stderr_path.read_text(errors="replace")[-4000:]
        raise AssertionError(f"{exc}\n--- acpd stderr ---\n{daemon_log}") from None


def _prompts_echoed_with_their_message_id(lines: list[WireLine]) -> None:
    """v2: each accepted prompt's `messageId` is the id of a `user_message` acpd sent."""
    prompts: set[Any] = set()
    answered: list[tuple[int, str]] = []
    echoed: set[str] = set()
    for line in lines:
        message = line.message
        if not isinstance(message, dict):
            continue
        if line.direction == "C" and message.get("method") == "session/prompt":
            prompts.add(message.get("id"))
        elif line.direction == "A" and message.get("method") == "session/update":
            update = message["params"]["update"]
            if update.get("sessionUpdate") in ("user_message", "user_message_chunk"):
                echoed.add(str(update.get("messageId")))
        elif line.direction == "A" and message.get("id") in prompts and "result" in message:
            result = message["result"]
            if isinstance(result, dict) and "messageId" in result:
                answered.append((line.number, str(result["messageId"])))
    for number, message_id in answered:
        assert message_id in echoed, f"line {number}: prompt answer {message_id} never echoed"
