"""What a command that acpd runs itself looks like on the wire, per client, and on replay.

Three renderings of one live terminal (`Mode`):

- "v2": the v2 draft's agent-owned display terminal (schema/v2 `TerminalUpdate`,
  `TerminalOutputChunk`; spec repo docs/rfds/v2/terminal-output.mdx). `terminal_update` is an
  upsert (omitted fields unchanged); its `output` is an authoritative replacement snapshot
  (base64 bytes; `truncated` when the front is missing); `terminal_output_chunk` appends one
  independently base64-encoded byte chunk; `exitStatus` marks the exit.
- "meta": the v1 convention Zed reads from claude-agent-acp and codex-acp, offered only to a
  client whose `clientCapabilities._meta.terminal_output` is true (what Zed sends). Field names
  as Zed parses them in zed-industries/zed `crates/agent_servers/src/acp.rs` (the session
  notification handler): a `tool_call` whose `_meta.terminal_info.terminal_id` (and optional
  `cwd`) creates a display-only terminal labelled with the call's title; a
  `tool_call_update` whose `_meta.terminal_output` `{terminal_id, data}` appends `data` (a
  string, taken as UTF-8 bytes); `_meta.terminal_exit` `{terminal_id, exit_code, signal}`
  ends it (`exit_code` read as an unsigned integer). Both reference agents use the tool call
  id as the terminal id, and so do we, so that the first `tool_call` can announce it.
- "plain": no display terminal; the card's text content shows the live tail (any client).

Replay: the store keeps, for each terminal, one neutral record (a `tool_call_update` whose
only content is `_meta["acpd/terminal"]`, a valid v1 update that a client ignores) with a
bounded snapshot of its output. `replay()` turns it into the loading client's rendering: a
v2 snapshot `terminal_update`, or a meta output + exit, or nothing; the card of that call gets
the terminal again (the stored card has its terminals taken out: see updates.without_terminals).
"""

from __future__ import annotations

import base64
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any, Literal

Mode = Literal["plain", "meta", "v2"]
RECORD_KEY = "acpd/terminal"


def mode_for(protocol_version: int, raw_caps: Mapping[str, Any]) -> Mode:
    """How this client is shown commands acpd runs: v2 always has display terminals; a v1
    client only when it asked for the `_meta` convention."""
    if protocol_version >= 2:
        return "v2"
    meta = raw_caps.get("_meta")
    if isinstance(meta, Mapping) and meta.get("terminal_output") is True:
        return "meta"
    return "plain"


@dataclass(frozen=True, slots=True)
class Exit:
    code: int | None
    signal: str | None


# --- v1 `_meta` convention ---------------------------------------------------------------------


def meta_info(terminal_id: str, cwd: str) -> dict[str, Any]:
    """The `_meta` of the first `tool_call`: Zed creates the display terminal from it."""
    return {"terminal_info": {"terminal_id": terminal_id, "cwd": cwd}}


def meta_output(call_id: str, terminal_id: str, text: str) -> dict[str, Any]:
    return {
        "sessionUpdate": "tool_call_update",
        "toolCallId": call_id,
        "_meta": {"terminal_output": {"terminal_id": terminal_id, "data": text}},
    }


def meta_exit(call_id: str, terminal_id: str, status: Exit) -> dict[str, Any]:
    # Zed reads exit_code with as_u64: a negative or absent code is "unknown" (null).
    code = status.code if status.code is not None and status.code >= 0 else None
    exit_info = {"terminal_id": terminal_id, "exit_code": code, "signal": status.signal}
    return {"sessionUpdate": "tool_call_update", "toolCallId": call_id,
            "_meta": {"terminal_exit": exit_info}}


# --- v2 draft --------------------------------------------------------------------------------


def v2_started(terminal_id: str, command: str, cwd: str) -> dict[str, Any]:
    return {"sessionUpdate": "terminal_update", "terminalId": terminal_id,
            "command": command, "cwd": cwd}


def v2_chunk(terminal_id: str, data: bytes) -> dict[str, Any]:
    return {"sessionUpdate": "terminal_output_chunk", "terminalId": terminal_id,
            "data": _b64(data)}


def v2_snapshot(terminal_id: str, data: bytes, truncated: bool) -> dict[str, Any]:
    return {"sessionUpdate": "terminal_update", "terminalId": terminal_id,
            "output": {"data": _b64(data), "truncated": truncated}}


def v2_exit(terminal_id: str, status: Exit) -> dict[str, Any]:
    exit_status: dict[str, Any] = {"exitCode": status.code, "signal": status.signal}
    return {"sessionUpdate": "terminal_update", "terminalId": terminal_id,
            "exitStatus": exit_status}


def _b64(data: bytes) -> str:
    return base64.b64encode(data).decode("ascii")


# --- the stored record and replay ---------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Snapshot:
    call_id: str
    terminal_id: str
    command: str
    cwd: str
    data: bytes
    """The redacted tail of the output (bounded)."""
    truncated: bool
    exit: Exit

    def record(self) -> dict[str, Any]:
        body = {
            "terminalId": self.terminal_id, "command": self.command, "cwd": self.cwd,
            "data": _b64(self.data), "truncated": self.truncated,
            "exitCode": self.exit.code, "signal": self.exit.signal,
        }
        return {"sessionUpdate": "tool_call_update", "toolCallId": self.call_id,
                "_meta": {RECORD_KEY: body}}

    @classmethod
    def from_record(cls, update: Mapping[str, Any]) -> Snapshot | None:
        meta = update.get("_meta")
        body = meta.get(RECORD_KEY) if isinstance(meta, Mapping) else None
        if not isinstance(body, Mapping):
            return None
        try:
            code, signal = body.get("exitCode"), body.get("signal")
            return cls(
                str(update["toolCallId"]), str(body["terminalId"]), str(body["command"]),
                str(body["cwd"]), base64.b64decode(str(body["data"]), validate=True),
                bool(body.get("truncated")),
                Exit(code if isinstance(code, int) else None,
                     signal if isinstance(signal, str) else None),
            )
        except (KeyError, ValueError):
            return None


def replay(updates: Iterable[dict[str, Any]], mode: Mode) -> Iterator[dict[str, Any]]:
    """The stored updates as this client is shown them (see the module docstring)."""
    stored = list(updates)
    snapshots = {s.call_id: s for s in map(Snapshot.from_record, stored) if s is not None}
    for update in stored:
        snap = Snapshot.from_record(update)
        if snap is not None:
            yield from _replayed_terminal(snap, mode)
            continue
        call_id = update.get("toolCallId")
        snap = snapshots.get(call_id) if isinstance(call_id, str) else None
        kind = update.get("sessionUpdate")
        if kind == "tool_call":
            yield _with_info(update, snap if mode == "meta" else None)
        elif snap is not None and mode != "plain" and update.get("status") in (
            "completed", "failed"
        ):
            embed = {"type": "terminal", "terminalId": snap.terminal_id}
            yield {**update, "content": [embed, *(update.get("content") or [])]}
        else:
            yield update


def _replayed_terminal(snap: Snapshot, mode: Mode) -> Iterator[dict[str, Any]]:
    if mode == "v2":
        yield {**v2_started(snap.terminal_id, snap.command, snap.cwd),
               "output": {"data": _b64(snap.data), "truncated": snap.truncated},
               "exitStatus": {"exitCode": snap.exit.code, "signal": snap.exit.signal}}
    elif mode == "meta":
        text = snap.data.decode("utf-8", "replace")
        if snap.truncated:
            text = "[earlier output not kept]\r\n" + text
        update = meta_output(snap.call_id, snap.terminal_id, text)
        update["_meta"].update(meta_exit(snap.call_id, snap.terminal_id, snap.exit)["_meta"])
        yield update


def _with_info(update: dict[str, Any], snap: Snapshot | None) -> dict[str, Any]:
    """A stored `tool_call` with `_meta.terminal_info` only when this client is shown the
    terminal (a card announcing a terminal that never gets output shows an empty one)."""
    meta = update.get("_meta")
    rest = {k: v for k, v in meta.items() if k != "terminal_info"} if isinstance(
        meta, dict) else {}
    out = {k: v for k, v in update.items() if k != "_meta"}
    if snap is not None:
        rest.update(meta_info(snap.terminal_id, snap.cwd))
    if rest:
        out["_meta"] = rest
    return out
