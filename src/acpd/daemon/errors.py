"""The one place where exceptions become JSON-RPC errors.

Handlers raise `RpcError` for protocol-level failures and the domain errors below for
everything else; `to_rpc_error()` maps them. Anything unexpected becomes -32603 with a
generic message: the traceback goes to the log, never to the peer.
"""

from __future__ import annotations

import logging
import sys
from typing import Any

from acpd.protocol.errors import ErrorCode, RpcError

log = logging.getLogger("acpd")


class SessionNotFound(Exception):
    def __init__(self, session_id: str) -> None:
        super().__init__(f"session not found: {session_id[:120]}")


class SessionBusy(Exception):
    """A second prompt while a turn runs, or a change that needs an idle session."""


class ConfigError(Exception):
    """The configuration is invalid; the message says where and why."""


class PeerError(Exception):
    """The editor answered one of our requests with an error, or did not answer in time."""

    def __init__(self, method: str, error: RpcError | None, reason: str = "") -> None:
        self.method = method
        self.error = error
        detail = f"{error.code} {error.message}" if error is not None else reason
        super().__init__(f"{method} failed: {detail}")


def to_rpc_error(exc: BaseException) -> RpcError:
    if isinstance(exc, RpcError):
        return exc
    if isinstance(exc, SessionNotFound):
        return RpcError(ErrorCode.RESOURCE_NOT_FOUND, str(exc))
    if isinstance(exc, SessionBusy):
        return RpcError(ErrorCode.INVALID_REQUEST, str(exc))
    if isinstance(exc, ConfigError):
        return RpcError(ErrorCode.INTERNAL_ERROR, f"configuration error: {exc}")
    if _is_validation_error(exc):
        return RpcError(ErrorCode.INVALID_PARAMS, "invalid params", _validation_data(exc))
    log.error("internal error", exc_info=exc)
    return RpcError(ErrorCode.INTERNAL_ERROR, "internal error (see the acpd log on stderr)")


def _is_validation_error(exc: BaseException) -> bool:
    # pydantic is imported lazily; if it is not loaded, nothing can have raised its error.
    pydantic = sys.modules.get("pydantic")
    return pydantic is not None and isinstance(exc, pydantic.ValidationError)


def _validation_data(exc: Any) -> list[dict[str, Any]]:
    """The field paths and messages of a ValidationError, without input values or URLs."""
    return [
        {"loc": [str(part) for part in err.get("loc", ())], "msg": str(err.get("msg", ""))[:300]}
        for err in exc.errors(include_url=False, include_input=False)[:20]
    ]
