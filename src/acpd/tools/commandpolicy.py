"""The shell policy's verdict on a tool that runs commands of its own (`ToolSpec.commands`).

Each command line the call will run is judged exactly as a bash call's would be (same
handle, trust and sandbox state); the strictest verdict wins (deny > ask > allow), its
reasons and rules kept, and the reasons of the others added. No command: no shell verdict
(the mode and the permission rules decide). A policy that cannot judge denies.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from acpd.policy.decision import Decision
    from acpd.tools.shellpolicy import ShellPolicies
    from acpd.tools.spec import ToolSpec

log = logging.getLogger("acpd.shellpolicy")
RANK = {"allow": 0, "ask": 1, "deny": 2}


class _Env(Protocol):
    cwd: str
    roots: tuple[str, ...]
    session_id: str


async def judge_commands(shell: ShellPolicies, spec: ToolSpec, args: dict[str, Any],
                         env: _Env) -> Decision | None:
    from acpd.policy.decision import Decision

    assert spec.commands is not None
    try:
        lines = spec.commands(args, env.cwd)
    except Exception as exc:  # fail closed: a call whose commands are unknown does not run
        log.exception("could not list the commands of %s", spec.id)
        return Decision("deny", (f"the commands of this call could not be listed ({exc})"[:500],),
                        ("policy.error",), "")
    worst: Decision | None = None
    reasons: list[str] = []
    lifted = False
    for line in lines:
        decision = await shell.judge(line, cwd=env.cwd, roots=env.roots,
                                     session_id=env.session_id)
        lifted |= decision.sandbox_lifted
        reasons += [f"{line}: {r}" for r in decision.reasons]
        if worst is None or RANK[decision.verdict] > RANK[worst.verdict]:
            worst = decision
    if worst is None:
        return None
    return Decision(worst.verdict, tuple(reasons[:20]) or worst.reasons, worst.rules,
                    worst.policy_hash, sandbox_lifted=lifted)
