"""The session switch "Confirm every command" (daemon/settings.py): with it on, a bash call
the policy, a rule, the mode or an earlier "always" answer would let run asks the user
first. It only ever turns an allow into an ask: a deny stays a deny, an ask stays an ask.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace

from acpd.tools.permissions import SHELL_TOOL, Decision
from acpd.tools.spec import ToolSpec

REASON = "Confirm every command is on for this session: every shell command asks first."


def confirm_every_command(
    decision: Decision, spec: ToolSpec, confirm: Callable[[], bool] | None
) -> Decision:
    """`confirm`: reads the session's switch now (None: no such switch here)."""
    if spec.id != SHELL_TOOL or decision.verdict != "allow" or confirm is None or not confirm():
        return decision
    return replace(decision, verdict="ask", reason=REASON, approved_by="auto")
