"""JSON-RPC 2.0 messages, sans-io.

`parse_line()` turns one frame into exactly one of: a `Request`, a `Notification`, a
`Response`, an `Invalid` that says which error to answer with and to which id, or an
`Ignored` that must not be answered. It never raises on peer input. Batches are refused:
ACP v1 does not use them.

Rules beyond the letter of JSON-RPC 2.0, each to keep two peers from talking past each other:

- A message without `method` that carries `result` or `error` is a response, even when it is
  malformed (null or missing id, wrong `jsonrpc`). It is never answered: answering a
  response invites an endless error ping-pong with a peer that does the same.
- A frame that is not valid UTF-8 is a parse error, but when the rest of it is a JSON object
  with a readable id, the error carries that id, so the editor's request fails instead of
  waiting for ever. Everything else that cannot be read answers with `"id": null`.
- `"params": null` is taken as absent params.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, TypeGuard

import orjson

from acpd.protocol.errors import ErrorCode, RpcError

RequestId = int | str
JSONRPC = "2.0"


@dataclass(frozen=True, slots=True)
class Request:
    id: RequestId
    method: str
    params: Any


@dataclass(frozen=True, slots=True)
class Notification:
    method: str
    params: Any


@dataclass(frozen=True, slots=True)
class Response:
    id: RequestId
    result: Any = None
    error: RpcError | None = None


@dataclass(frozen=True, slots=True)
class Invalid:
    """A frame that gets an error answer (or, when `id` is absent, `"id": null`)."""

    error: RpcError
    id: RequestId | None = None


@dataclass(frozen=True, slots=True)
class Ignored:
    """A malformed response: logged, never answered."""

    reason: str


Message = Request | Notification | Response | Invalid | Ignored


def parse_line(line: bytes) -> Message:
    try:
        obj = orjson.loads(line)
    except orjson.JSONDecodeError as exc:
        error = RpcError(ErrorCode.PARSE_ERROR, f"parse error: {exc.msg}"[:200])
        return Invalid(error, _recover_id(line))
    return parse_object(obj)


def _recover_id(line: bytes) -> RequestId | None:
    """The id of a frame whose only fault is invalid UTF-8, or None."""
    try:
        line.decode("utf-8")
    except UnicodeDecodeError:
        pass
    else:
        return None  # valid UTF-8, so the JSON itself is broken: the id cannot be trusted
    try:
        obj = orjson.loads(line.decode("utf-8", "replace"))
    except orjson.JSONDecodeError:
        return None
    if not isinstance(obj, dict):
        return None
    value = obj.get("id")
    return value if valid_id(value) else None


def parse_object(obj: Any) -> Message:
    if isinstance(obj, list):
        return Invalid(RpcError(ErrorCode.INVALID_REQUEST, "batch requests are not supported"))
    if not isinstance(obj, dict):
        return Invalid(RpcError(ErrorCode.INVALID_REQUEST, "a message must be a JSON object"))
    if "method" not in obj and ("result" in obj or "error" in obj):
        return _parse_response(obj)
    raw_id = obj.get("id")
    has_id = "id" in obj
    msg_id = raw_id if valid_id(raw_id) else None
    if obj.get("jsonrpc") != JSONRPC:
        return Invalid(RpcError(ErrorCode.INVALID_REQUEST, 'jsonrpc must be "2.0"'), msg_id)
    if has_id and raw_id is not None and msg_id is None:
        return Invalid(RpcError(ErrorCode.INVALID_REQUEST, "id must be an integer or a string"))
    method = obj.get("method")
    if method is None:
        return Invalid(RpcError(ErrorCode.INVALID_REQUEST, "message has no method"), msg_id)
    if not isinstance(method, str):
        return Invalid(RpcError(ErrorCode.INVALID_REQUEST, "method must be a string"), msg_id)
    params = obj.get("params")
    if params is not None and not isinstance(params, dict | list):
        return Invalid(
            RpcError(ErrorCode.INVALID_REQUEST, "params must be an object or an array"), msg_id
        )
    if not has_id:
        return Notification(method, params)
    if msg_id is None:
        return Invalid(RpcError(ErrorCode.INVALID_REQUEST, "request id must not be null"))
    return Request(msg_id, method, params)


def _parse_response(obj: dict[str, Any]) -> Message:
    if obj.get("jsonrpc") != JSONRPC:
        return Ignored('response whose jsonrpc is not "2.0"')
    if "id" not in obj:
        return Ignored("response without an id")
    msg_id = obj["id"]
    if msg_id is None:
        # How a peer reports that it could not read something we sent.
        return Ignored(f"error report from the peer: {_describe(obj.get('error'))}")
    if not valid_id(msg_id):
        return Ignored("response with an id that is neither an integer nor a string")
    if obj.get("error") is not None:
        return Response(msg_id, error=RpcError.from_wire(obj["error"]))
    return Response(msg_id, result=obj.get("result"))


def _describe(error: Any) -> str:
    err = RpcError.from_wire(error)
    return f"{err.code} {err.message}"[:200]


def valid_id(value: Any) -> TypeGuard[RequestId]:
    """Whether `value` can be a request id: an integer (not a bool) or a string."""
    # bool is an int subclass in Python but not a JSON-RPC id.
    return (isinstance(value, int) and not isinstance(value, bool)) or isinstance(value, str)


_ID_VALUE = re.compile(rb'\s*:\s*(-?\d{1,20}(?=\s*[,}])|"(?:[^"\\]|\\.){0,200}")')


def sniff_id(head: bytes) -> RequestId | None:
    """Best-effort id of a line that was too long to parse, from its first bytes.

    Only an `"id"` member of the top-level object counts (not one inside `params`), and only
    when its value is a whole integer or string within the head.
    """
    depth = 0
    in_string = False
    escaped = False
    string_start = 0
    for index, byte in enumerate(head):
        if in_string:
            if escaped:
                escaped = False
            elif byte == 0x5C:  # backslash
                escaped = True
            elif byte == 0x22:  # closing quote
                in_string = False
                if depth == 1 and head[string_start : index + 1] == b'"id"':
                    value = _ID_VALUE.match(head, index + 1)
                    if value is not None:
                        return _load_id(value.group(1))
                    if re.match(rb"\s*:", head[index + 1 :]):
                        return None  # the id member, with a value we cannot use
        elif byte == 0x22:
            in_string = True
            string_start = index
        elif byte in b"{[":
            depth += 1
        elif byte in b"}]":
            depth -= 1
    return None


def _load_id(text: bytes) -> RequestId | None:
    try:
        value = orjson.loads(text)
    except orjson.JSONDecodeError:
        return None
    return value if valid_id(value) else None


def request(msg_id: RequestId, method: str, params: Any) -> dict[str, Any]:
    return {"jsonrpc": JSONRPC, "id": msg_id, "method": method, "params": params}


def notification(method: str, params: Any) -> dict[str, Any]:
    return {"jsonrpc": JSONRPC, "method": method, "params": params}


def result(msg_id: RequestId, value: Any) -> dict[str, Any]:
    return {"jsonrpc": JSONRPC, "id": msg_id, "result": value}


def error(msg_id: RequestId | None, err: RpcError) -> dict[str, Any]:
    return {"jsonrpc": JSONRPC, "id": msg_id, "error": err.to_wire()}
