"""A provider that replays a script: each model call returns the script's next turn.

Script format (JSON):
    {"turns": [{"text": "...", "tool_calls": [{"name": "read", "arguments": {...}}]}, ...]}

A turn may also carry `"chunks": ["...", ...]` (text streamed in pieces), `"thought"`,
`"usage": {"input_tokens": N, "output_tokens": N}` (also `cache_read_tokens`,
`cache_write_tokens`, and `cost`: what a provider reports, in USD),
`"delay": seconds` (before the reply, to test cancellation), `"stall": seconds` (after the
text, before the tool calls and the end: a reply cut off mid-stream), and a tool call may
give `"raw_arguments"` (argument text as a model sent it, to exercise invalid JSON).
A top-level `"record": "FILE"` (relative to the script's folder) appends one JSON line per
model call with what the request carried: `tools` (name, description, parameters), the
number of `messages` and the last user message (`query`), so tests can check the catalog.
Used by the demo and by the end-to-end tests.
"""

from __future__ import annotations

from collections.abc import AsyncGenerator
from pathlib import Path
from typing import Any

import anyio
import orjson

from acpd.providers.base import (
    ModelEvent,
    ModelRequest,
    ProviderError,
    StopEvent,
    TextDelta,
    ThoughtDelta,
    ToolCallEvent,
    ToolCallRequest,
    UsageEvent,
    parse_arguments,
)

MAX_SCRIPT_BYTES = 16 * 1024 * 1024


class ScriptError(ValueError):
    pass


def load_script(path: str | Path) -> list[dict[str, Any]]:
    """Read and check a script file; raises ScriptError saying what is wrong and where."""
    return load_script_file(path)[0]


def load_script_file(path: str | Path) -> tuple[list[dict[str, Any]], Path | None]:
    """The turns and the record file (None: not recorded); raises ScriptError."""
    path = Path(path)
    try:
        if path.stat().st_size > MAX_SCRIPT_BYTES:
            raise ScriptError(f"{path}: larger than {MAX_SCRIPT_BYTES} bytes")
        data = orjson.loads(path.read_bytes())
    except OSError as exc:
        raise ScriptError(f"{path}: {exc.strerror or exc}") from None
    except orjson.JSONDecodeError as exc:
        raise ScriptError(f"{path}: not JSON ({exc.msg})") from None
    turns = data.get("turns") if isinstance(data, dict) else None
    if not isinstance(turns, list):
        raise ScriptError(f'{path}: expected {{"turns": [...]}}')
    for index, turn in enumerate(turns):
        _check_turn(path, index, turn)
    record = data.get("record")
    if record is not None and not isinstance(record, str):
        raise ScriptError(f"{path}: record must be a file name")
    return turns, (path.parent / record if record else None)


def _check_turn(path: Path, index: int, turn: Any) -> None:
    where = f"{path}: turns[{index}]"
    if not isinstance(turn, dict):
        raise ScriptError(f"{where} must be an object")
    if "text" in turn and not isinstance(turn["text"], str):
        raise ScriptError(f"{where}.text must be a string")
    for key in ("delay", "stall"):
        seconds = turn.get(key, 0)
        if isinstance(seconds, bool) or not isinstance(seconds, int | float) or seconds < 0:
            raise ScriptError(f"{where}.{key} must be a number of seconds")
    chunks = turn.get("chunks", [])
    if not isinstance(chunks, list) or not all(isinstance(c, str) for c in chunks):
        raise ScriptError(f"{where}.chunks must be a list of strings")
    calls = turn.get("tool_calls", [])
    if not isinstance(calls, list):
        raise ScriptError(f"{where}.tool_calls must be a list")
    for n, call in enumerate(calls):
        if not isinstance(call, dict) or not isinstance(call.get("name"), str):
            raise ScriptError(f"{where}.tool_calls[{n}] needs a string name")
        if "arguments" in call and not isinstance(call["arguments"], dict):
            raise ScriptError(f"{where}.tool_calls[{n}].arguments must be an object")


class ScriptedProvider:
    context_window = 200_000

    def __init__(self, path: str | Path) -> None:
        self.path = str(path)
        self.name = f"scripted:{self.path}"
        self._turns, self._record = load_script_file(path)
        self._next = 0
        self._call_ids = 0

    @property
    def remaining(self) -> int:
        return len(self._turns) - self._next

    async def stream(self, request: ModelRequest) -> AsyncGenerator[ModelEvent, None]:
        if self._record is not None:
            _record(self._record, request)
        if self._next >= len(self._turns):
            yield TextDelta(f"(the script {Path(self.path).name} has no more turns)")
            yield StopEvent("end_turn")
            return
        turn = self._turns[self._next]
        self._next += 1
        if turn.get("delay"):
            await anyio.sleep(turn["delay"])
        if turn.get("error"):
            raise ProviderError(str(turn["error"]), status=turn.get("status"))
        if isinstance(turn.get("thought"), str):
            yield ThoughtDelta(turn["thought"])
        for chunk in turn.get("chunks", []):
            yield TextDelta(chunk)
        if turn.get("text"):
            yield TextDelta(turn["text"])
        if turn.get("stall"):
            await anyio.sleep(turn["stall"])
        calls = turn.get("tool_calls", [])
        for call in calls:
            yield ToolCallEvent(self._call(call))
        usage = turn.get("usage")
        if isinstance(usage, dict):
            yield _usage(usage)
        yield StopEvent("tool_use" if calls else "end_turn")

    def _call(self, call: dict[str, Any]) -> ToolCallRequest:
        self._call_ids += 1
        call_id = str(call.get("id") or f"call_{self._call_ids}")
        if isinstance(call.get("raw_arguments"), str):
            return parse_arguments(call_id, call["name"], call["raw_arguments"])
        return ToolCallRequest(call_id, call["name"], dict(call.get("arguments", {})))


def _record(path: Path, request: ModelRequest) -> None:
    query = next((m.text for m in reversed(request.messages) if m.role == "user"), "")
    line = {
        "tools": [
            {"name": t.name, "description": t.description, "parameters": t.parameters}
            for t in request.tools
        ],
        "messages": len(request.messages),
        "query": query,
    }
    try:
        with path.open("ab") as handle:
            handle.write(orjson.dumps(line) + b"\n")
    except OSError as exc:
        raise ProviderError(f"cannot record the request to {path}: {exc.strerror or exc}") from None


def _usage(usage: dict[str, Any]) -> UsageEvent:
    cost = usage.get("cost")
    return UsageEvent(
        int(usage.get("input_tokens", 0)), int(usage.get("output_tokens", 0)),
        int(usage.get("cache_read_tokens", 0)), int(usage.get("cache_write_tokens", 0)),
        float(cost) if isinstance(cost, int | float) and not isinstance(cost, bool) else None,
    )
