"""What an MCP tool call gives back, for the pipeline: a ToolOutput, or a ToolError in one of
the eleven categories.

  - a result with `isError`: PermanentFailure, with the server's text (credentials replaced):
    the tool ran and said no, so the same call fails again unless the model changes it;
  - JSON-RPC errors: -32602/-32600 InvalidParameters, -32601 ToolNotFound, -32001 (request
    timeout) Timeout, -32000 (connection closed) ServerError, -32700/-32603 and other server
    errors ServerError, anything else PermanentFailure;
  - our own call timeout: Timeout; a server that is gone (crashed, exited): ServerError,
    with its exit status; transport failures (HTTP): NetworkError or Timeout by class,
    an HTTP status by the seeds' table (tools/errors.py).

Content: text as is; images, audio and binary resources as a one-line note (the model is
sent text); embedded text resources with their URI; structured content as JSON when there is
no text. Output filters, secret redaction and overflow are the pipeline's, after this.
"""

from __future__ import annotations

import re
from typing import Any

import mcp_types as types
import orjson
from mcp.shared.exceptions import MCPError

import acpd.tools.filters  # noqa: F401 - loads before acpd.tools.secrets (an import cycle)
from acpd.tools.errors import ErrorCategory, ToolError, classify_exception, classify_http_status
from acpd.tools.secrets import scan_secrets
from acpd.tools.spec import ToolOutput

MAX_MESSAGE = 2000
_CODES = {
    types.INVALID_PARAMS: ErrorCategory.INVALID_PARAMETERS,
    types.INVALID_REQUEST: ErrorCategory.INVALID_PARAMETERS,
    types.METHOD_NOT_FOUND: ErrorCategory.TOOL_NOT_FOUND,
    types.REQUEST_TIMEOUT: ErrorCategory.TIMEOUT,
    types.CONNECTION_CLOSED: ErrorCategory.SERVER_ERROR,
    types.PARSE_ERROR: ErrorCategory.SERVER_ERROR,
    types.INTERNAL_ERROR: ErrorCategory.SERVER_ERROR,
}
_STATUS = re.compile(r"\b(?:HTTP|status(?: code)?|error)[ :']*([1-5]\d\d)\b", re.IGNORECASE)


_URL = re.compile(r"(https?://)(?:[^\s/@'\"]*@)?([^\s/?#'\"]+)([^\s'\"]*)")


def clean(text: str) -> str:
    """A message fit to show: credentials taken out, and URLs cut to their scheme, host and
    port (services put keys in the user info, the query and the path alike)."""
    text = _URL.sub(lambda m: m[1] + m[2] + ("/..." if m[3] else ""), text[:MAX_MESSAGE])
    return scan_secrets(text)[0]


def output_of(server: str, tool: str, result: Any) -> ToolOutput:
    """Raises ToolError for an `isError` result or something that is not a tool result."""
    if not isinstance(result, types.CallToolResult):
        raise ToolError(ErrorCategory.PERMANENT_FAILURE,
                        f"{server}: {tool} answered with {type(result).__name__}, not a result")
    text = "\n".join(_text_of(block) for block in result.content)
    if not text and result.structured_content is not None:
        text = orjson.dumps(result.structured_content).decode()
    if result.is_error:
        raise ToolError(
            ErrorCategory.PERMANENT_FAILURE,
            f"{server}: {tool} failed: {clean(text) or '(no message)'}",
            suggestion="The tool said no: read its message and change the call, or stop.",
        )
    raw: dict[str, Any] = {"server": server, "tool": tool}
    if result.structured_content is not None:
        raw["structuredContent"] = result.structured_content
    return ToolOutput(text, raw)


def _text_of(block: Any) -> str:
    if isinstance(block, types.TextContent):
        return block.text
    if isinstance(block, types.ImageContent | types.AudioContent):
        return f"[{block.mime_type} {block.type}, {len(block.data) * 3 // 4} bytes, not shown]"
    if isinstance(block, types.EmbeddedResource):
        res = block.resource
        if isinstance(res, types.TextResourceContents):
            return f"<resource uri={str(res.uri)!r}>\n{res.text}\n</resource>"
        return f"[binary resource {res.uri}, not shown]"
    if isinstance(block, types.ResourceLink):
        return f"[resource: {block.name} {block.uri}]"
    return f"[{getattr(block, 'type', 'unknown')} content, not shown]"


def error_of(server: str, tool: str, exc: BaseException, exit_note: str = "") -> ToolError:
    """The ToolError for an exception raised by the SDK or the transport during a call."""
    where = f"{server}: {tool}"
    if isinstance(exc, MCPError):
        if exc.code == types.CONNECTION_CLOSED:
            return ToolError(
                ErrorCategory.SERVER_ERROR,
                f"{where}: the MCP server closed the connection during the call{exit_note}",
                suggestion="The server is restarted at the next call; retry once at most.",
            )
        category = _CODES.get(exc.code)
        if category is None:
            category = (ErrorCategory.SERVER_ERROR if -32099 <= exc.code <= -32000
                        else ErrorCategory.PERMANENT_FAILURE)
        return ToolError(category, f"{where}: {clean(exc.error.message)} (code {exc.code})")
    if isinstance(exc, TimeoutError):
        return ToolError(ErrorCategory.TIMEOUT, f"{where} did not answer in time")
    category = None
    status = getattr(getattr(exc, "response", None), "status_code", None)
    if not isinstance(status, int):
        found = _STATUS.search(str(exc))
        status = int(found.group(1)) if found else None
    if status is not None:
        category = classify_http_status(status)
    message = f"{where}: {type(exc).__name__}: {clean(str(exc))}"
    return ToolError(category or classify_exception(exc), message[:MAX_MESSAGE])
