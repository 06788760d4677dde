"""The built-in tools (namespace `core__`)."""

from __future__ import annotations

from acpd.tools.registry import ToolRegistry


def core_registry() -> ToolRegistry:
    from acpd.tools.builtin import files, plan, shell

    return ToolRegistry([*files.SPECS, *shell.SPECS, *plan.SPECS])
