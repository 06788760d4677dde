"""The built-in tools (namespace `core__`)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from acpd.tools.registry import ToolRegistry

if TYPE_CHECKING:
    from acpd.tools.fs import FileToolsConfig


def core_registry(files: FileToolsConfig | None = None) -> ToolRegistry:
    """The file tools (bound to `files`, or the defaults), bash and update_plan."""
    from acpd.tools.builtin import plan, shell
    from acpd.tools.fs import FileToolsConfig, make_fs_specs

    return ToolRegistry([*make_fs_specs(files or FileToolsConfig()), *shell.SPECS, *plan.SPECS])
