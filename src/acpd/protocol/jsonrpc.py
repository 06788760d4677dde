"""JSON-RPC 2.0 messages, sans-io.

`parse_line()` turns one frame into exactly one of: a `Request`, a `Notification`, a
`Response`, or an `Invalid` that says which error to answer with and to which id. It never
raises on peer input. Batches are refused: ACP v1 does not use them.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

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


Message = Request | Notification | Response | Invalid


def parse_line(line: bytes) -> Message:
    try:
        obj = orjson.loads(line)
    except orjson.JSONDecodeError as exc:
        return Invalid(RpcError(ErrorCode.PARSE_ERROR, f"parse error: {exc.msg}"))
    return parse_object(obj)


def parse_object(obj: Any) -> Message:
    if isinstance(obj, list):
        return Invalid(RpcError(ErrorCode.INVALID_REQUEST, "batch requests are not supported"))
    if not isinstance(obj, dict):
        return Invalid(RpcError(ErrorCode.INVALID_REQUEST, "a message must be a JSON object"))
    raw_id = obj.get("id")
    has_id = "id" in obj
    msg_id = raw_id if _valid_id(raw_id) else None
    if obj.get("jsonrpc") != JSONRPC:
        return Invalid(RpcError(ErrorCode.INVALID_REQUEST, 'jsonrpc must be "2.0"'), msg_id)
    if has_id and raw_id is not None and msg_id is None:
        return Invalid(RpcError(ErrorCode.INVALID_REQUEST, "id must be an integer or a string"))
    method = obj.get("method")
    if method is None:
        return _parse_response(obj, msg_id, has_id)
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


def _parse_response(obj: dict[str, Any], msg_id: RequestId | None, has_id: bool) -> Message:
    if "result" not in obj and "error" not in obj:
        return Invalid(RpcError(ErrorCode.INVALID_REQUEST, "message has no method"), msg_id)
    if msg_id is None:
        # A response we cannot route. There is no request to answer, so the id stays null.
        reason = "response with a null id" if has_id else "response without an id"
        return Invalid(RpcError(ErrorCode.INVALID_REQUEST, reason))
    if "error" in obj and obj["error"] is not None:
        return Response(msg_id, error=RpcError.from_wire(obj["error"]))
    return Response(msg_id, result=obj.get("result"))


def _valid_id(value: Any) -> bool:
    # bool is an int subclass in Python but not a JSON-RPC id.
    return (isinstance(value, int) and not isinstance(value, bool)) or isinstance(value, str)


_ID_IN_HEAD = re.compile(rb'"id"\s*:\s*(-?\d{1,18}|"(?:[^"\\]|\\.){0,200}")')


def sniff_id(head: bytes) -> RequestId | None:
    """Best-effort id of a line that was too long to parse, from its first bytes."""
    match = _ID_IN_HEAD.search(head)
    if match is None:
        return None
    try:
        value = orjson.loads(match.group(1))
    except orjson.JSONDecodeError:
        return None
    return value if _valid_id(value) else None


def request(msg_id: RequestId, method: str, params: Any) -> dict[str, Any]:
    return {"jsonrpc": JSONRPC, "id": msg_id, "method": method, "params": params}


def notification(method: str, params: Any) -> dict[str, Any]:
    return {"jsonrpc": JSONRPC, "method": method, "params": params}


def result(msg_id: RequestId, value: Any) -> dict[str, Any]:
    return {"jsonrpc": JSONRPC, "id": msg_id, "result": value}


def error(msg_id: RequestId | None, err: RpcError) -> dict[str, Any]:
    return {"jsonrpc": JSONRPC, "id": msg_id, "error": err.to_wire()}
