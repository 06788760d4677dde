"""ACP v2 (the 2026 draft) as a rendering of the v1 shapes the core produces. Sans-io.

The core speaks one dialect: the v1 `session/update` payloads of daemon/updates.py, the v1
method results of daemon/methods.py. A connection that negotiated `protocolVersion: 2`
passes every outgoing message through `V2Renderer` and every incoming v2 request through the
`*_to_v1` functions here, so both versions come from the same code path. Rules:

- Updates: `tool_call` becomes the first `tool_call_update` (v2 updates are upserts); `plan`
  becomes `plan_update` with one `planId` per session (each update replaces that plan);
  `current_mode_update` becomes `config_option_update` (v2 has no modes) when the options
  are known, else it is dropped; config options carry `configId` instead of `id`; commands
  carry `type: "command"` and their input `type: "text"`; diffs become `changes` plus a
  `git_patch` (protocol/acp_v2_diff.py); locations drop a line 0 (v2 lines start at 1).
  `terminal_update` and `terminal_output_chunk` are v2-native and pass as they are, as does
  any kind this module does not know.
- Message ids: v2 requires `messageId` on every chunk. One kept by the core is used as is;
  otherwise chunks of one kind share an id until anything other than a chunk (a tool call,
  a plan, a state change) or a chunk of the other speaker (user / agent) is sent for the
  session, which starts a new message.
- Permission requests get the required `title` and one subject: `command` (command, the
  session's absolute cwd, the tool call id) for a shell call, `tool_call` otherwise. While
  one is pending the session reports `requires_action`, and `running` again before the next
  update of the turn (not when the turn ends instead: `idle` says that).
- v2 has no client file system or terminal: `REMOVED_CLIENT_METHODS` are refused before they
  reach the wire, whatever the client claimed in `initialize`.
- v2 takes JSON-RPC batches (`batch_messages`); each request of a batch is answered on its own.

Limits: message ids of stored updates are generated again on replay (the store keeps v1
payloads); a diff's `oldText: null` is an added file, anything else a modification.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

import orjson

from acpd.protocol import jsonrpc
from acpd.protocol.acp_v2_diff import diff_content
from acpd.protocol.errors import ErrorCode, RpcError

PROTOCOL_VERSION = 2
PLAN_ID = "plan"
REMOVED_CLIENT_METHODS = ("fs/", "terminal/")
CHUNK_KINDS = frozenset({"user_message_chunk", "agent_message_chunk", "agent_thought_chunk"})
OTHER_SPEAKER = {
    "user_message_chunk": ("agent_message_chunk", "agent_thought_chunk"),
    "agent_message_chunk": ("user_message_chunk",),
    "agent_thought_chunk": ("user_message_chunk",),
}

Params = dict[str, Any]
Outgoing = list[tuple[str, Any]]


def removed_client_method(method: str) -> bool:
    return method.startswith(REMOVED_CLIENT_METHODS)


def new_message_id() -> str:
    return f"msg_{os.urandom(12).hex()}"


# --- JSON-RPC batches (v2 takes them; v1 does not) ----------------------------------------


def batch_messages(line: bytes) -> list[jsonrpc.Message] | None:
    """The messages of a batch line, in order, or None when the line is not a JSON array (it
    is then parsed as one message). An empty batch is one -32600; an entry that is itself an
    array is a -32600 of its own, as is any invalid entry (with `"id": null` unless its id is
    readable). Each request is answered on its own line, not in a response array (JSON-RPC
    and ACP say SHOULD for the array)."""
    if line[:64].lstrip()[:1] != b"[":  # only the head: lines may be megabytes
        return None
    try:
        entries = orjson.loads(line)
    except orjson.JSONDecodeError:
        return None  # parsed again as one message: a -32700 with `"id": null`
    if not isinstance(entries, list):
        return None
    if not entries:
        error = RpcError(ErrorCode.INVALID_REQUEST, "an empty batch")
        return [jsonrpc.Invalid(error)]
    nested = RpcError(ErrorCode.INVALID_REQUEST, "a batch inside a batch")
    return [
        jsonrpc.Invalid(nested) if isinstance(entry, list) else jsonrpc.parse_object(entry)
        for entry in entries
    ]


# --- initialize ------------------------------------------------------------------------------


def client_capabilities(params: Mapping[str, Any]) -> dict[str, Any]:
    """The client's v2 `capabilities` object (`{}` when absent or malformed)."""
    caps = params.get("capabilities")
    return caps if isinstance(caps, dict) else {}


def initialize_result(v1: Mapping[str, Any]) -> dict[str, Any]:
    """The v2 answer to `initialize`, from the v1 one: `info` and one `capabilities` object,
    session-scoped groups under `session`, `{}` markers instead of booleans."""
    agent = v1.get("agentCapabilities") or {}
    session: dict[str, Any] = {}
    prompt_v1 = agent.get("promptCapabilities") or {}
    session["prompt"] = {k: {} for k, on in prompt_v1.items() if on is True}
    mcp_v1 = agent.get("mcpCapabilities") or {}
    # A v1 agent must run stdio servers; v2 makes that an explicit marker. SSE is gone.
    mcp: dict[str, Any] = {"stdio": {}}
    if mcp_v1.get("http") is True:
        mcp["http"] = {}
    session["mcp"] = mcp
    v1_session = agent.get("sessionCapabilities") or {}
    for marker in ("delete", "additionalDirectories"):
        if isinstance(v1_session.get(marker), dict):
            session[marker] = {}
    result: dict[str, Any] = {
        "protocolVersion": PROTOCOL_VERSION,
        "info": v1.get("agentInfo") or {"name": "acpd", "version": "0"},
        "capabilities": {"session": session},
        "authMethods": list(v1.get("authMethods") or []),
    }
    if "_meta" in v1:
        result["_meta"] = v1["_meta"]
    return result


# --- requests from the client, to the core's v1 shapes ----------------------------------------


def resume_replays(params: Any) -> bool:
    """True for `replayFrom: {type: "start"}` (v1 `session/load`), False when absent or null.
    Raises ValueError for a cursor this agent cannot replay from."""
    replay = params.get("replayFrom") if isinstance(params, dict) else None
    if replay is None:
        return False
    if isinstance(replay, dict) and replay.get("type") == "start":
        return True
    raise ValueError("replayFrom: only {\"type\": \"start\"} is supported")


def session_params_to_v1(params: Any) -> Any:
    """`session/new`/`session/resume` params: v2 may omit `mcpServers` and a server's empty
    lists (`args`, `env`, `headers`), which v1 requires; stdio servers carry `type: "stdio"`,
    which v1 leaves out."""
    if not isinstance(params, dict):
        return params
    servers = params.get("mcpServers")
    if servers is None:
        servers = []
    if isinstance(servers, list):
        servers = [_server_to_v1(s) for s in servers]
    return {**params, "mcpServers": servers}


def _server_to_v1(server: Any) -> Any:
    if not isinstance(server, dict):
        return server
    kind = server.get("type")
    if kind == "stdio":
        rest = {k: v for k, v in server.items() if k != "type"}
        return {"args": [], "env": [], **rest}
    if kind == "http":
        return {"headers": [], **server}
    return server


def config_value_to_v1(params: Any) -> Any:
    """`session/set_config_option`: v2 tags a select value with `type: "id"`; v1 does not."""
    if isinstance(params, dict) and params.get("type") == "id":
        return {k: v for k, v in params.items() if k != "type"}
    return params


# --- results, from the core's v1 shapes -------------------------------------------------------


def session_result(v1: Mapping[str, Any]) -> dict[str, Any]:
    """`session/new`, `session/resume`: no `modes` in v2; options keyed by `configId`."""
    result = {k: v for k, v in v1.items() if k != "modes"}
    if isinstance(result.get("configOptions"), list):
        result["configOptions"] = config_options(result["configOptions"])
    return result


def config_options(options: list[Any]) -> list[Any]:
    return [_config_option(o) for o in options]


def _config_option(option: Any) -> Any:
    if not isinstance(option, dict):
        return option
    converted = {("configId" if k == "id" else k): v for k, v in option.items()}
    choices = converted.get("options")
    if isinstance(choices, list):
        converted["options"] = [
            {("groupId" if k == "group" else k): v for k, v in c.items()}
            if isinstance(c, dict) else c
            for c in choices
        ]
    return converted


def available_commands(commands: list[Any]) -> list[Any]:
    out = []
    for command in commands:
        if not isinstance(command, dict):
            continue
        converted = {"type": "command", **command}
        spec = command.get("input")
        if isinstance(spec, dict) and "type" not in spec:
            converted["input"] = {"type": "text", **spec}
        out.append(converted)
    return out


# --- tool calls -------------------------------------------------------------------------------


def tool_call_fields(update: Mapping[str, Any]) -> dict[str, Any]:
    """A v1 tool call (or its update) as a v2 `ToolCallUpdate` (without `sessionUpdate`)."""
    fields = {k: v for k, v in update.items() if k != "sessionUpdate"}
    if isinstance(fields.get("content"), list):
        fields["content"] = [tool_content(c) for c in fields["content"]]
    if isinstance(fields.get("locations"), list):
        fields["locations"] = [_location(loc) for loc in fields["locations"]]
    return fields


def tool_content(item: Any) -> Any:
    if isinstance(item, dict) and item.get("type") == "diff" and "changes" not in item:
        return diff_content(item)
    return item


def _location(location: Any) -> Any:
    if isinstance(location, dict) and location.get("line") == 0:
        return {k: v for k, v in location.items() if k != "line"}
    return location


# --- the renderer: every outgoing notification and request of a v2 connection -----------------


@dataclass(slots=True)
class _SessionView:
    messages: dict[str, str] = field(default_factory=dict)
    """Chunk kind -> the id of the message its chunks currently extend."""
    waiting: bool = False
    """A permission request was sent: `running` is due before the next update of the turn."""


@dataclass
class V2Renderer:
    """Turns the core's v1-shaped traffic into v2. `cwd_of(session_id)` gives a session's
    working directory (for command subjects), `config_options_of(session_id)` its v1 config
    options (for a mode change); both may return None for an unknown session."""

    cwd_of: Callable[[str], str | None] = lambda _sid: None
    config_options_of: Callable[[str], list[Any] | None] = lambda _sid: None
    _sessions: dict[str, _SessionView] = field(default_factory=dict)

    def forget(self, session_id: str) -> None:
        self._sessions.pop(session_id, None)

    def notification(self, method: str, params: Any) -> Outgoing:
        """What to send for one notification of the core: zero, one or two messages."""
        if method != "session/update" or not isinstance(params, dict):
            return [(method, params)]
        session_id = str(params.get("sessionId", ""))
        update = params.get("update")
        if not isinstance(update, dict):
            return [(method, params)]
        view = self._sessions.setdefault(session_id, _SessionView())
        out: Outgoing = []
        kind = update.get("sessionUpdate")
        if view.waiting:
            view.waiting = False
            if kind != "state_update":
                out.append((method, state_params(session_id, "running")))
        rendered = self._update(session_id, view, update)
        if rendered is not None:
            out.append((method, {**params, "update": rendered}))
        return out

    def request(self, method: str, params: Any) -> tuple[Outgoing, Any]:
        """Notifications to send first, and the v2 params of one request of the core.
        Raises LookupError for a method v2 does not have (`fs/*`, `terminal/*`)."""
        if removed_client_method(method):
            raise LookupError(f"{method} is not part of ACP v2: acpd does this itself")
        if method != "session/request_permission" or not isinstance(params, dict):
            return [], params
        session_id = str(params.get("sessionId", ""))
        view = self._sessions.setdefault(session_id, _SessionView())
        self._end_messages(view)
        view.waiting = True
        first = [("session/update", state_params(session_id, "requires_action"))]
        return first, self.permission_params(params)

    def permission_params(self, params: Mapping[str, Any]) -> dict[str, Any]:
        session_id = str(params.get("sessionId", ""))
        call = params.get("toolCall")
        call = call if isinstance(call, dict) else {}
        title = str(call.get("title") or "this tool call")
        result: dict[str, Any] = {
            "sessionId": session_id,
            "options": params.get("options") or [],
        }
        command = _shell_command(call)
        cwd = self.cwd_of(session_id)
        if command is not None and cwd is not None:
            result["title"] = "Run this command?"
            if title != command:  # the card's own words, when they say more than the command
                result["description"] = title
            result["subject"] = {
                "type": "command", "command": command, "cwd": cwd,
                "toolCallId": call.get("toolCallId"),
            }
        else:
            result["title"] = f"Allow: {title}"
            if call:
                result["subject"] = {"type": "tool_call", "toolCall": tool_call_fields(call)}
        if "_meta" in params:
            result["_meta"] = params["_meta"]
        return result

    # --- one update --------------------------------------------------------------------------

    def _update(
        self, session_id: str, view: _SessionView, update: dict[str, Any]
    ) -> dict[str, Any] | None:
        kind = update.get("sessionUpdate")
        if kind in CHUNK_KINDS:
            return self._chunk(view, str(kind), update)
        if kind in ("user_message", "agent_message", "agent_thought"):
            view.messages.pop(f"{kind}_chunk", None)  # a whole message: chunks start anew
            return update
        self._end_messages(view)
        if kind in ("tool_call", "tool_call_update"):
            return {"sessionUpdate": "tool_call_update", **tool_call_fields(update)}
        if kind == "plan":
            plan = {"type": "items", "planId": PLAN_ID, "entries": update.get("entries") or []}
            return {"sessionUpdate": "plan_update", "plan": plan, **_meta_of(update)}
        if kind == "current_mode_update":
            options = self.config_options_of(session_id)
            if options is None:
                return None
            return {"sessionUpdate": "config_option_update",
                    "configOptions": config_options(options)}
        if kind == "config_option_update":
            return {**update, "configOptions": config_options(update.get("configOptions") or [])}
        if kind == "available_commands_update":
            commands = available_commands(update.get("availableCommands") or [])
            return {**update, "availableCommands": commands}
        return update

    def _chunk(self, view: _SessionView, kind: str, update: dict[str, Any]) -> dict[str, Any]:
        # A user message ends the agent's (a replay puts them back to back), and the other
        # way round; an agent's thoughts may interleave with its message.
        for other in OTHER_SPEAKER[kind]:
            view.messages.pop(other, None)
        given = update.get("messageId")
        if isinstance(given, str) and given:
            view.messages[kind] = given
            return update
        message_id = view.messages.get(kind)
        if message_id is None:
            message_id = view.messages[kind] = new_message_id()
        return {**update, "messageId": message_id}

    @staticmethod
    def _end_messages(view: _SessionView) -> None:
        view.messages.clear()


def state_params(session_id: str, state: str, **extra: Any) -> dict[str, Any]:
    return {"sessionId": session_id,
            "update": {"sessionUpdate": "state_update", "state": state, **extra}}


def _meta_of(update: Mapping[str, Any]) -> dict[str, Any]:
    return {"_meta": update["_meta"]} if "_meta" in update else {}


def _shell_command(call: Mapping[str, Any]) -> str | None:
    """The command of a shell call (kind execute, `rawInput.command`), else None."""
    raw = call.get("rawInput")
    if call.get("kind") == "execute" and isinstance(raw, dict):
        command = raw.get("command")
        if isinstance(command, str) and command:
            return command
    return None
