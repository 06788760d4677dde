"""The eleven tool error categories of the seeds and the `[tool_error]` block the model sees."""

from __future__ import annotations

from enum import Enum


class ErrorCategory(Enum):
    TOOL_NOT_FOUND = "ToolNotFound"
    INVALID_PARAMETERS = "InvalidParameters"
    TYPE_MISMATCH = "TypeMismatch"
    POLICY_BLOCKED = "PolicyBlocked"
    CONFIRMATION_REQUIRED = "ConfirmationRequired"
    PERMANENT_FAILURE = "PermanentFailure"
    CANCELLED = "Cancelled"
    RATE_LIMITED = "RateLimited"
    SERVER_ERROR = "ServerError"
    NETWORK_ERROR = "NetworkError"
    TIMEOUT = "Timeout"

    @property
    def retryable(self) -> bool:
        return self in _RETRYABLE


_RETRYABLE = frozenset(
    {
        ErrorCategory.INVALID_PARAMETERS,
        ErrorCategory.TYPE_MISMATCH,
        ErrorCategory.RATE_LIMITED,
        ErrorCategory.SERVER_ERROR,
        ErrorCategory.NETWORK_ERROR,
        ErrorCategory.TIMEOUT,
    }
)

_SUGGESTIONS = {
    ErrorCategory.TOOL_NOT_FOUND: "Use one of the tools listed in the tool catalog.",
    ErrorCategory.INVALID_PARAMETERS: "Fix the arguments to match the tool's input schema.",
    ErrorCategory.TYPE_MISMATCH: "Send each argument with the type the schema gives.",
    ErrorCategory.POLICY_BLOCKED: "The policy forbids this; do not retry it in another form.",
    ErrorCategory.CONFIRMATION_REQUIRED: "The user has to approve this call.",
    ErrorCategory.PERMANENT_FAILURE: "Retrying the same call will fail again; change the approach.",
    ErrorCategory.CANCELLED: "The user cancelled this call.",
    ErrorCategory.RATE_LIMITED: "Wait before retrying.",
    ErrorCategory.SERVER_ERROR: "The service failed; a retry may succeed.",
    ErrorCategory.NETWORK_ERROR: "The network failed; a retry may succeed.",
    ErrorCategory.TIMEOUT: "The call took too long; narrow it down or raise the timeout.",
}


class ToolError(Exception):
    def __init__(
        self, category: ErrorCategory, message: str, *, suggestion: str | None = None
    ) -> None:
        super().__init__(message)
        self.category = category
        self.message = message
        self.suggestion = suggestion or _SUGGESTIONS[category]

    @property
    def retryable(self) -> bool:
        return self.category.retryable

    def format_for_model(self) -> str:
        return (
            "[tool_error]\n"
            f"category: {self.category.value}\n"
            f"message: {self.message}\n"
            f"suggestion: {self.suggestion}\n"
            f"retryable: {'true' if self.retryable else 'false'}"
        )


def classify_exit(exit_code: int | None, stderr: str) -> ErrorCategory | None:
    """The seeds' shell exit-code classification; None means the exit is not an error class."""
    if exit_code == 126:
        return ErrorCategory.POLICY_BLOCKED
    if exit_code == 127:
        return ErrorCategory.PERMANENT_FAILURE
    lowered = stderr.lower()
    if exit_code not in (0, None) and (
        "permission denied" in lowered or "no such file or directory" in lowered
    ):
        return ErrorCategory.PERMANENT_FAILURE
    return None


TRANSIENT = frozenset(
    {
        ErrorCategory.RATE_LIMITED,
        ErrorCategory.SERVER_ERROR,
        ErrorCategory.NETWORK_ERROR,
        ErrorCategory.TIMEOUT,
    }
)
"""The categories retried automatically (with backoff). The parameter errors are retryable by
the model (it reformats), never by the runner: the same arguments would fail the same way."""


def classify_http_status(status: int) -> ErrorCategory | None:
    """The seeds' HTTP status classification; None for a success (1xx-3xx).

    For fetch and MCP over HTTP: 429 RateLimited, 408 Timeout, 5xx ServerError, 400/422
    InvalidParameters, 401/403 PolicyBlocked, any other 4xx PermanentFailure.
    """
    if status < 400:
        return None
    if status == 429:
        return ErrorCategory.RATE_LIMITED
    if status == 408:
        return ErrorCategory.TIMEOUT
    if status >= 500:
        return ErrorCategory.SERVER_ERROR
    if status in (400, 422):
        return ErrorCategory.INVALID_PARAMETERS
    if status in (401, 403):
        return ErrorCategory.POLICY_BLOCKED
    return ErrorCategory.PERMANENT_FAILURE


# Exception class names of the HTTP clients we may use (httpx, aiohttp, anyio), matched by
# name so this module imports none of them.
_TIMEOUT_NAMES = ("Timeout", "TimedOut")
_NETWORK_NAMES = (
    "ConnectError", "ConnectionError", "NetworkError", "RemoteProtocolError", "ReadError",
    "WriteError", "ClientConnectorError", "ServerDisconnectedError", "BrokenResourceError",
    "EndOfStream",
)


def classify_exception(exc: BaseException) -> ErrorCategory:
    """Classify a transport failure: timeouts -> Timeout, connection failures -> NetworkError,
    anything else -> PermanentFailure. Looks at the class and its bases by name."""
    if isinstance(exc, TimeoutError):
        return ErrorCategory.TIMEOUT
    names = [cls.__name__ for cls in type(exc).__mro__]
    if any(part in name for name in names for part in _TIMEOUT_NAMES):
        return ErrorCategory.TIMEOUT
    if isinstance(exc, ConnectionError) or any(n in _NETWORK_NAMES for n in names):
        return ErrorCategory.NETWORK_ERROR
    if isinstance(exc, OSError) and exc.errno in _NETWORK_ERRNOS:
        return ErrorCategory.NETWORK_ERROR
    return ErrorCategory.PERMANENT_FAILURE


def http_error(status: int, message: str) -> ToolError:
    """A ToolError for a failed HTTP response; raises ValueError for a success status."""
    category = classify_http_status(status)
    if category is None:
        raise ValueError(f"HTTP {status} is not an error")
    return ToolError(category, f"HTTP {status}: {message}"[:500])


def _network_errnos() -> frozenset[int]:
    import errno

    names = ("ECONNREFUSED", "ECONNRESET", "ECONNABORTED", "EHOSTUNREACH", "ENETUNREACH",
             "ENETDOWN", "EPIPE", "ETIMEDOUT")
    return frozenset(getattr(errno, n) for n in names if hasattr(errno, n))


_NETWORK_ERRNOS = _network_errnos()
