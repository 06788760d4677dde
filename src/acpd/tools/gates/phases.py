"""The phase taxonomy: when in the agent's reasoning cycle a call was made.

The phase is decided where the call is made (the caller passes it), never inferred from the
tool's name. A caller that passes none gets the phase of its kind of caller:

  planner     before the turn's first model inference: the calls the user asked for himself
              (slash commands, `acpd tools run`, the LSP face's commands);
  executor    the model asked for it (a native tool_use, or a legacy text block);
  verifier    a post-execution check the agent runs on a result;
  autonomous  the agent's own housekeeping (compress_context and the like).
"""

from __future__ import annotations

from typing import get_args

from acpd.tools.gates.config import PhaseName

PHASES: tuple[PhaseName, ...] = get_args(PhaseName)
USER_CALLERS = frozenset({"slash", "cli", "lsp"})


def phase_for(caller: str, given: str | None = None) -> PhaseName:
    """The call's phase: `given` when it is one of the four, else the caller's default."""
    for phase in PHASES:
        if given == phase:
            return phase
    return "planner" if caller in USER_CALLERS else "executor"


def user_requested(caller: str) -> bool:
    """The user asked for this exact call (not the model)."""
    return caller in USER_CALLERS
