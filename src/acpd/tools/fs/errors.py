"""Turning sandbox refusals and OS errors into the tool error categories."""

from __future__ import annotations

import errno

from acpd.tools.errors import ErrorCategory, ToolError

_ESCAPE_ERRNOS = frozenset({errno.EXDEV})
_LOOP_ERRNOS = frozenset({errno.ELOOP})


def blocked(message: str) -> ToolError:
    return ToolError(ErrorCategory.POLICY_BLOCKED, message)


def failed(message: str, suggestion: str | None = None) -> ToolError:
    return ToolError(ErrorCategory.PERMANENT_FAILURE, message, suggestion=suggestion)


def invalid(message: str) -> ToolError:
    return ToolError(ErrorCategory.INVALID_PARAMETERS, message)


def from_os_error(exc: OSError, shown: str) -> ToolError:
    """EXDEV (escape) and ELOOP (loop, magic link) are PolicyBlocked; the rest PermanentFailure."""
    if exc.errno in _ESCAPE_ERRNOS:
        return blocked(f"{shown} resolves outside the workspace")
    if exc.errno in _LOOP_ERRNOS:
        return blocked(
            f"{shown}: symlink loop, too many symlinks, or a /proc magic link (refused)"
        )
    # An OSError raised with a message alone (the editor refused an fs/* call) has no
    # strerror: its message is the reason, and dropping it left "path: OSError".
    reason = exc.strerror or str(exc) or type(exc).__name__
    return failed(f"{shown}: {reason}")
