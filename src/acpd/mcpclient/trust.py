"""The pipeline's extra rule for MCP tools: untrusted unless the user allowlisted them.

The tool policy (tools/permissions.py) decides first, as for any tool; then, for a tool of an
MCP server:
  - a deny stays a deny; an allow the user gave (an earlier "always allow", a permission
    rule in config) stays an allow;
  - an allowlisted tool (`[mcp.servers.<server>] allow`) runs without a prompt, unless a
    permission rule asks for it;
  - anything else asks, in `auto` mode too: the server is another program the editor named,
    its tool descriptions and hints are its own claims.
Remembered answers are bound to the server's identity (command and args, or URL), so a
different program that takes the same server name starts with nothing remembered.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from acpd.mcpclient.spec import McpToolSpec
from acpd.tools.permissions import Decision

if TYPE_CHECKING:
    from acpd.tools.rules import RuleSet
    from acpd.tools.spec import ToolSpec


def approval_key(spec: ToolSpec, key: str) -> str:
    return f"{key}@{spec.identity}" if isinstance(spec, McpToolSpec) else key


def judge(
    spec: ToolSpec, decision: Decision, rules: RuleSet, args: dict[str, Any], cwd: str
) -> Decision:
    if not isinstance(spec, McpToolSpec) or decision.verdict == "deny":
        return decision
    if decision.verdict == "allow" and decision.approved_by in ("user", "rule"):
        return decision
    match = rules.match(spec, args, cwd)
    rule_asks = match is not None and match.verdict == "ask"
    if spec.allowed and not rule_asks:
        return Decision("allow", f"allowlisted in [mcp.servers.{spec.server}] allow", "rule")
    if rule_asks:
        return decision
    return Decision(
        "ask", f"{spec.tool} is a tool of the MCP server {spec.server!r}, which is not "
        f"trusted: each call asks unless [mcp.servers.{spec.server}] allow names it", "user",
    )
