"""ACP v1 types (schema 1.x) as pydantic models with camelCase aliases.

Incoming params ignore unknown keys (the protocol grows by adding fields) and carry `_meta`
through as `meta`. Outgoing payloads are dumped with `to_wire()`, which drops unset optionals
so that nothing `null` reaches a peer that does not expect it.

This module imports pydantic, which costs tens of milliseconds: the daemon answers
`initialize` without it and imports it on first use.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    SerializationInfo,
    SerializerFunctionWrapHandler,
    field_validator,
    model_serializer,
)
from pydantic.alias_generators import to_camel

PROTOCOL_VERSION = 1

ToolKind = Literal[
    "read", "edit", "delete", "move", "search", "execute", "think", "fetch", "switch_mode", "other"
]
ToolCallStatus = Literal["pending", "in_progress", "completed", "failed"]
StopReason = Literal["end_turn", "max_tokens", "max_turn_requests", "refusal", "cancelled"]
PermissionOptionKind = Literal["allow_once", "allow_always", "reject_once", "reject_always"]


class AcpModel(BaseModel):
    model_config = ConfigDict(
        alias_generator=to_camel, populate_by_name=True, extra="ignore", frozen=False
    )
    meta: dict[str, Any] | None = Field(default=None, alias="_meta")

    def to_wire(self) -> dict[str, Any]:
        return self.model_dump(by_alias=True, exclude_none=True, mode="json")


# --- client -> agent -----------------------------------------------------------------------


class FileSystemCapability(AcpModel):
    read_text_file: bool = False
    write_text_file: bool = False


class ClientCapabilities(AcpModel):
    fs: FileSystemCapability = Field(default_factory=FileSystemCapability)
    terminal: bool = False

    @field_validator("fs", mode="before")
    @classmethod
    def _lenient_fs(cls, value: Any) -> Any:
        # The schema says a malformed capability deserialises to its default.
        return value if isinstance(value, dict) else {}

    @field_validator("terminal", mode="before")
    @classmethod
    def _lenient_terminal(cls, value: Any) -> Any:
        return value if isinstance(value, bool) else False


class Implementation(AcpModel):
    name: str
    version: str
    title: str | None = None


class InitializeRequest(AcpModel):
    protocol_version: Annotated[int, Field(ge=0, le=65535)]
    client_capabilities: ClientCapabilities = Field(default_factory=ClientCapabilities)
    client_info: Implementation | None = None

    @field_validator("client_capabilities", mode="before")
    @classmethod
    def _lenient_caps(cls, value: Any) -> Any:
        return value if isinstance(value, dict) else {}

    @field_validator("client_info", mode="before")
    @classmethod
    def _lenient_info(cls, value: Any) -> Any:
        return value if isinstance(value, dict) and "name" in value and "version" in value else None


class AuthenticateRequest(AcpModel):
    method_id: str


def _absolute(path: str) -> str:
    if not path.startswith("/"):
        raise ValueError("cwd must be an absolute path")
    if "\x00" in path:
        raise ValueError("cwd must not contain NUL")
    return path


class NewSessionRequest(AcpModel):
    cwd: str
    mcp_servers: list[dict[str, Any]] = Field(default_factory=list)
    additional_directories: list[str] | None = None
    """None: omitted or null (ACP: both mean no extra root); checked by daemon/roots.py."""

    _check_cwd = field_validator("cwd")(_absolute)


class LoadSessionRequest(NewSessionRequest):
    session_id: str


class ResumeSessionRequest(NewSessionRequest):
    session_id: str


class ListSessionsRequest(AcpModel):
    cwd: str | None = None
    cursor: str | None = None


class SessionRequest(AcpModel):
    """Params of the methods that only name a session (close, delete, cancel)."""

    session_id: str


class PromptRequest(AcpModel):
    session_id: str
    prompt: list[dict[str, Any]]


class SetSessionModeRequest(AcpModel):
    session_id: str
    mode_id: str


class SetSessionConfigOptionRequest(AcpModel):
    session_id: str
    config_id: str
    value: str | bool


class CancelRequestNotification(AcpModel):
    request_id: int | str


# --- agent -> client -----------------------------------------------------------------------


class TextContent(AcpModel):
    type: Literal["text"] = "text"
    text: str


class ContentToolCallContent(AcpModel):
    type: Literal["content"] = "content"
    content: TextContent


class DiffToolCallContent(AcpModel):
    type: Literal["diff"] = "diff"
    path: str
    old_text: str | None = None
    new_text: str

    @model_serializer(mode="wrap")
    def _new_file_says_null(
        self, handler: SerializerFunctionWrapHandler, info: SerializationInfo
    ) -> dict[str, Any]:
        # ACP lets a new file's oldText be omitted or null; Toad opens its diff view only when
        # the key is there, so a new file is sent as `"oldText": null`.
        data: dict[str, Any] = handler(self)
        data.setdefault("oldText" if info.by_alias else "old_text", None)
        return data


class TerminalToolCallContent(AcpModel):
    type: Literal["terminal"] = "terminal"
    terminal_id: str


ToolCallContent = ContentToolCallContent | DiffToolCallContent | TerminalToolCallContent


def text_content(text: str) -> ContentToolCallContent:
    return ContentToolCallContent(content=TextContent(text=text))


class ToolCallLocation(AcpModel):
    path: str
    line: int | None = None


class ToolCallFields(AcpModel):
    """What `tool_call` and `tool_call_update` share; an update sets only what changed."""

    tool_call_id: str
    title: str | None = None
    kind: ToolKind | None = None
    status: ToolCallStatus | None = None
    content: list[ToolCallContent] | None = None
    locations: list[ToolCallLocation] | None = None
    raw_input: Any = None
    raw_output: Any = None


class PermissionOption(AcpModel):
    option_id: str
    name: str
    kind: PermissionOptionKind


class PlanEntry(AcpModel):
    content: str
    priority: Literal["high", "medium", "low"] = "medium"
    status: Literal["pending", "in_progress", "completed"] = "pending"


class AvailableCommand(AcpModel):
    name: str
    description: str
    input: dict[str, Any] | None = None


class SessionMode(AcpModel):
    id: str
    name: str
    description: str | None = None


class SessionConfigSelectOption(AcpModel):
    value: str
    name: str
    description: str | None = None


class SessionConfigOption(AcpModel):
    id: str
    name: str
    description: str | None = None
    category: str | None = None
    type: Literal["select"] = "select"
    current_value: str
    options: list[SessionConfigSelectOption]
