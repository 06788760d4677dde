"""The built-in tools (namespace `core__`), as executors in the CompositeExecutor order."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from acpd.tools.registry import ToolRegistry, ToolSource

if TYPE_CHECKING:
    from acpd.net.settings import FetchSettings
    from acpd.tools.diagnostics.config import DiagnosticsConfig
    from acpd.tools.fs import FileToolsConfig

DEFAULT_ORDER = ("file", "shell", "plan")


def core_sources(
    files: FileToolsConfig | None = None, web: FetchSettings | None = None,
    diagnostics: DiagnosticsConfig | None = None,
) -> list[ToolSource]:
    """The executors: the file tools (bound to `files`, or the defaults), bash, update_plan,
    read_overflow and fetch/web_scrape (bound to `web`); the last two come after those the
    order names, as they are not in the default order."""
    from acpd.tools.builtin import ask, overflow, plan, shell
    from acpd.tools.diagnostics.specs import make_diagnostics_specs
    from acpd.tools.fs import FileToolsConfig, make_fs_specs
    from acpd.tools.web.specs import make_web_specs

    return [
        ToolSource("file", make_fs_specs(files or FileToolsConfig())),
        ToolSource("shell", shell.SPECS),
        ToolSource("plan", plan.SPECS),
        ToolSource("overflow", overflow.SPECS),
        ToolSource("web", make_web_specs(web)),
        ToolSource("diagnostics", make_diagnostics_specs(diagnostics)),
        ToolSource("ask", ask.SPECS),
    ]


def core_registry(
    files: FileToolsConfig | None = None, order: Sequence[str] = DEFAULT_ORDER,
    web: FetchSettings | None = None,
) -> ToolRegistry:
    """Raises RegistrationError when `order` names an unknown executor."""
    return ToolRegistry.from_sources(core_sources(files, web), order)
