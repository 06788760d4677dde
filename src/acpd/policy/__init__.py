"""Policy: the path sandbox and the shell policy engine.

Public API (tree-sitter is imported lazily, on the first judged command):

    from acpd.policy import PolicyHandle, Decision
    handle = PolicyHandle(config_path, plugin_dirs, on_reload=callback)
    decision = handle.judge("git status && ls", cwd=cwd, roots=roots, trust="trusted")
    await handle.watch(stop_event=event)       # hot reload (watchfiles)

`compile_policy(policy)` / `load_base(path)` build a CompiledPolicy without a handle.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from acpd.policy import _native

if TYPE_CHECKING:
    from acpd.policy.decision import Decision, Verdict
    from acpd.policy.engine import CompiledPolicy, compile_policy
    from acpd.policy.reload import PolicyHandle, ReloadReport
    from acpd.policy.rules import Policy, PolicyError, load_base

_native.activate(__path__)  # the compiled judge, when it is exactly these sources (_native.py)

__all__ = ["CompiledPolicy", "Decision", "Policy", "PolicyError", "PolicyHandle",
           "ReloadReport", "Verdict", "compile_policy", "load_base"]

_WHERE = {
    "Decision": "acpd.policy.decision", "Verdict": "acpd.policy.decision",
    "CompiledPolicy": "acpd.policy.engine", "compile_policy": "acpd.policy.engine",
    "PolicyHandle": "acpd.policy.reload", "ReloadReport": "acpd.policy.reload",
    "Policy": "acpd.policy.rules", "PolicyError": "acpd.policy.rules",
    "load_base": "acpd.policy.rules",
}


def __getattr__(name: str) -> Any:
    if name in _WHERE:
        import importlib

        return getattr(importlib.import_module(_WHERE[name]), name)
    raise AttributeError(name)
