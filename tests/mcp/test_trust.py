"""The trust rule for MCP tools on top of the real tool policy: untrusted asks in every mode,
the allowlist skips the prompt, the user's rules and remembered answers still come first."""

from __future__ import annotations

from typing import Any

import pytest

from acpd.mcpclient import trust
from acpd.mcpclient.spec import McpArguments, McpToolSpec
from acpd.tools.permissions import ToolPolicy
from acpd.tools.rules import RuleSet
from acpd.tools.spec import Effect, ToolOutput, redaction


async def _never(_args: Any, _ctx: Any) -> ToolOutput:
    raise AssertionError("not run here")


def spec(allowed: bool = False) -> McpToolSpec:
    return McpToolSpec(
        id="mcp__srv__echo", name="mcp__srv__echo", description="", params=McpArguments,
        effect=Effect.EXTERNAL_SIDE_EFFECT, kind="other", execute=_never,
        title=lambda _a: "srv: echo", redaction=redaction(), server="srv", tool="echo",
        allowed=allowed, identity="abc",
    )


def decide(s: McpToolSpec, mode: str, rules: dict[str, list[tuple[str, Any]]] | None = None,
           remembered: dict[str, bool] | None = None) -> tuple[str, str]:
    policy = ToolPolicy(("core__*", "mcp__*"), RuleSet(rules or {}))
    key = trust.approval_key(s, "mcp__srv__echo")
    found = policy.decide(s, mode, {"text": "x"}, "/tmp", remembered or {}, key)
    judged = trust.judge(s, found, policy.rules, {"text": "x"}, "/tmp")
    return judged.verdict, judged.approved_by


@pytest.mark.parametrize("mode", ["ask", "auto"])
def test_untrusted_asks_in_every_mode_and_the_allowlist_does_not(mode: str) -> None:
    assert decide(spec(), mode)[0] == "ask"
    assert decide(spec(allowed=True), mode) == ("allow", "rule")


def test_read_only_mode_denies_them() -> None:
    assert decide(spec(allowed=True), "read-only")[0] == "deny"
    assert not ToolPolicy(("mcp__*",)).visible(spec(), "read-only")


def test_rules_and_remembered_answers_come_first() -> None:
    ask = {"mcp__srv__echo": [("*", "ask")]}
    deny = {"mcp__srv__echo": [("*", "deny")]}
    allow = {"mcp__srv__echo": [("*", "allow")]}
    assert decide(spec(allowed=True), "auto", ask)[0] == "ask"
    assert decide(spec(allowed=True), "auto", deny)[0] == "deny"
    assert decide(spec(), "ask", allow) == ("allow", "rule")
    key = trust.approval_key(spec(), "mcp__srv__echo")
    assert key == "mcp__srv__echo@abc"
    assert decide(spec(), "ask", remembered={key: True}) == ("allow", "user")
    assert decide(spec(allowed=True), "ask", remembered={key: False})[0] == "deny"
    # An answer remembered for another program under the same name does not count.
    assert decide(spec(), "ask", remembered={"mcp__srv__echo": True})[0] == "ask"


def test_not_enabled_is_denied_and_hidden() -> None:
    policy = ToolPolicy(("core__*",))
    assert not policy.visible(spec(allowed=True), "auto")
