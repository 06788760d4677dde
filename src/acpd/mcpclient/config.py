"""`[mcp]` in config.toml: whether the editor's MCP servers are used, their budgets, and which
of their tools run without asking.

    [mcp]
    enabled = true          # false: the servers an editor passes are ignored (and it is told)
    start_timeout = 30      # seconds a server has to start and list its tools
    call_timeout = 120      # seconds one tool call may take

    [mcp.servers.github]    # the server's name as the editor passes it
    allow = ["get_issue", "list_pulls"]   # these tools run without a permission prompt
    command = "github-mcp"  # optional: the allowlist holds only while the command is this
    url = "https://..."     # optional: the same for an http/sse server

Every other tool asks before each call (in `auto` mode too). Names are exact: no globs, so
a tool the server adds later (`notifications/tools/list_changed`) is never allowed by
accident; an allowlisted name that appears later is allowed, because the user named it.
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field, field_validator

NAME_LIMIT = 128


class McpServerConfig(BaseModel):
    model_config = ConfigDict(extra="forbid")

    allow: list[str] = Field(default_factory=list)
    command: str | None = None
    url: str | None = None

    @field_validator("allow")
    @classmethod
    def _exact_names(cls, names: list[str]) -> list[str]:
        for name in names:
            if not name or len(name) > NAME_LIMIT:
                raise ValueError(f"tool names in allow must be 1 to {NAME_LIMIT} characters")
            if any(c in name for c in "*?["):
                raise ValueError(
                    f"{name!r}: allow takes exact tool names, not globs (a tool the server "
                    "adds later must not be allowed without the user naming it)"
                )
        return names


class McpConfig(BaseModel):
    model_config = ConfigDict(extra="forbid")

    enabled: bool = True
    start_timeout: float = Field(30.0, gt=0, le=600)
    call_timeout: float = Field(120.0, gt=0, le=3600)
    servers: dict[str, McpServerConfig] = Field(default_factory=dict)

    @field_validator("servers")
    @classmethod
    def _names(cls, servers: dict[str, McpServerConfig]) -> dict[str, McpServerConfig]:
        for name in servers:
            if not name.strip() or len(name) > NAME_LIMIT:
                raise ValueError(f"server names must be 1 to {NAME_LIMIT} characters")
        return servers
