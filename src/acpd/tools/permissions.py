"""Who may run what without asking: session modes and remembered approvals.

Modes: `read-only` denies anything that changes state or reaches outside; `ask` (default)
asks for those; `auto` allows them. Read-only tools are always allowed. The shell policy
engine adds its rules on top of this (strictest wins); this module is the mode layer.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from typing import Any, Literal

from acpd.tools.spec import Effect, ToolSpec

Verdict = Literal["allow", "ask", "deny"]
MODES = ("read-only", "ask", "auto")
DEFAULT_MODE = "ask"
PermissionAnswer = Literal[
    "allow_once", "allow_always", "reject_once", "reject_always", "cancelled"
]


@dataclass(frozen=True, slots=True)
class Decision:
    verdict: Verdict
    reason: str
    approved_by: Literal["auto", "user", "rule", "mode"] = "auto"


def decide(spec: ToolSpec, mode: str, remembered: dict[str, bool], key: str) -> Decision:
    if spec.effect is Effect.READ_ONLY:
        return Decision("allow", "read-only tool", "auto")
    if mode == "read-only":
        return Decision("deny", f"{spec.name} changes state and the session is read-only", "mode")
    if key in remembered:
        if remembered[key]:
            return Decision("allow", "approved earlier with 'always allow'", "user")
        return Decision("deny", "rejected earlier with 'always reject'", "user")
    if mode == "auto":
        return Decision("allow", "auto mode", "mode")
    return Decision("ask", f"{spec.name} needs approval in ask mode", "user")


def approval_key(spec: ToolSpec, args: dict[str, Any]) -> str:
    """What an "always" answer is bound to.

    For the shell it is a digest of the exact command: until the shell parser can say which
    binary a command really runs, approving `ls` must not approve `ls; rm -rf ~`.
    """
    command = args.get("command")
    if isinstance(command, str):
        digest = hashlib.sha256(command.encode("utf-8", "surrogatepass")).hexdigest()[:32]
        return f"{spec.id}#{digest}"
    return spec.id
