"""JSON-RPC error codes used by ACP v1 and the exception that carries them."""

from __future__ import annotations

from enum import IntEnum
from typing import Any

MAX_PEER_MESSAGE = 2000
"""How much of a peer's error message is kept (it ends up in logs and tool results)."""


class ErrorCode(IntEnum):
    PARSE_ERROR = -32700
    INVALID_REQUEST = -32600
    METHOD_NOT_FOUND = -32601
    INVALID_PARAMS = -32602
    INTERNAL_ERROR = -32603
    REQUEST_CANCELLED = -32800
    AUTH_REQUIRED = -32000
    RESOURCE_NOT_FOUND = -32002


class RpcError(Exception):
    """An error that is sent to the peer as a JSON-RPC error object.

    `message` and `data` go on the wire as they are, so they must never hold a traceback
    or anything the peer should not see.
    """

    def __init__(self, code: int, message: str, data: Any = None) -> None:
        super().__init__(message)
        self.code = int(code)
        self.message = message
        self.data = data

    def to_wire(self) -> dict[str, Any]:
        error: dict[str, Any] = {"code": self.code, "message": self.message}
        if self.data is not None:
            error["data"] = self.data
        return error

    @classmethod
    def from_wire(cls, error: Any) -> RpcError:
        """Build an error from a peer's error object, tolerating malformed ones."""
        if not isinstance(error, dict):
            return cls(ErrorCode.INTERNAL_ERROR, f"malformed error object ({type(error).__name__})")
        code = error.get("code")
        message = error.get("message")
        if not isinstance(code, int) or isinstance(code, bool):
            code = ErrorCode.INTERNAL_ERROR
        return cls(
            code,
            message[:MAX_PEER_MESSAGE] if isinstance(message, str) else "error without a message",
            error.get("data"),
        )


def invalid_params(message: str, data: Any = None) -> RpcError:
    return RpcError(ErrorCode.INVALID_PARAMS, message, data)


def invalid_request(message: str) -> RpcError:
    return RpcError(ErrorCode.INVALID_REQUEST, message)


def method_not_found(method: str) -> RpcError:
    return RpcError(ErrorCode.METHOD_NOT_FOUND, f"method not found: {method}"[:300])


def resource_not_found(message: str) -> RpcError:
    return RpcError(ErrorCode.RESOURCE_NOT_FOUND, message)


def request_cancelled() -> RpcError:
    return RpcError(ErrorCode.REQUEST_CANCELLED, "request cancelled")


def internal_error(message: str = "internal error") -> RpcError:
    return RpcError(ErrorCode.INTERNAL_ERROR, message)
