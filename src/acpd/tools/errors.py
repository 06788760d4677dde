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
