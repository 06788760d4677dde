"""The plugin tools in force, and their hot reload.

The registry is immutable once built. A reload (a change under a plugin directory: a
`tool.toml` or an entry added, changed or removed) scans again in a worker thread and, when
the result differs, builds a whole new registry (core tools first, in the configured executor
order, then the plugin tools) and publishes it with one reference assignment
(`pipeline.registry = ...`): a call resolves its tool once, and the next turn's catalog shows
the new set. A registry that cannot be built keeps the old one and says why. Each reload is
announced as `_acpd/policy_reloaded` with `scope: "tools.plugins"`, errors and warnings
included, and a kept-last-good reload is owed to every session at its next prompt.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, Protocol

from acpd.tools.plugins.catalog import PREFIX, PluginScan, PluginSettings, scan
from acpd.tools.registry import RegistrationError, ToolRegistry, ToolSource

if TYPE_CHECKING:
    import anyio

    from acpd.tools.shellpolicy import ShellPolicies

log = logging.getLogger("acpd.tools.plugins")
SCOPE = "tools.plugins"


class HasRegistry(Protocol):
    registry: ToolRegistry


class PluginTools:
    def __init__(self, settings: PluginSettings, shell: ShellPolicies | None,
                 core: Sequence[ToolSource], order: Sequence[str]) -> None:
        self.settings, self.shell = settings, shell
        self.core, self.order = list(core), list(order)
        self.current = scan(settings)
        self._lock = threading.Lock()
        for line in (*self.current.errors, *self.current.warnings):
            log.warning("plugin tools: %s", line)

    def registry(self, found: PluginScan | None = None) -> ToolRegistry:
        """Core and plugin tools; raises RegistrationError."""
        from acpd.tools.plugins.specs import make_spec

        found = found or self.current
        specs = [make_spec(t, self.settings, self.shell) for t in found.tools]
        registry = ToolRegistry.from_sources([*self.core, ToolSource("plugin", specs)],
                                             self.order)
        refused = dict(found.refused)
        refused.update({PREFIX + name: why for name, why in found.refused.items()})
        registry.refused = refused
        return registry

    def rebuild(self, target: HasRegistry) -> dict[str, Any] | None:
        """Scan again and publish a new registry when the tools changed; the notification
        params, or None when nothing changed. Blocking; never raises."""
        with self._lock:
            try:
                found = scan(self.settings)
                if found.digest == self.current.digest:
                    return None
                registry = self.registry(found)
            except (RegistrationError, Exception) as exc:  # a reload never ends the daemon
                log.warning("plugin tools not reloaded: %s", exc)
                return _params([], [f"plugin tools not reloaded: {exc}"], [], False)
            self.current = found
            target.registry = registry  # the one assignment that publishes
            names = [PREFIX + t.name for t in found.tools]
            log.info("plugin tools reloaded: %s", ", ".join(names) or "none")
            return _params(names, found.errors, found.warnings, True)

    async def watch(self, target: HasRegistry, stop: anyio.Event) -> None:
        """Reload after each batch of changes under the plugin directories until `stop`."""
        import anyio.to_thread

        from acpd.policy.watch import watch_paths

        async for _changes in watch_paths(list(self.settings.dirs), stop_event=stop,
                                          ready=True):
            params = await anyio.to_thread.run_sync(self.rebuild, target)
            if params is not None and self.shell is not None:
                notice = None
                if params["keptLastGood"] or params["errors"]:
                    notice = ("Plugin tools: " + "; ".join(params["errors"]))[:2000]
                await self.shell.config_reloaded(params, notice)


def report_lines(found: PluginScan) -> list[str]:
    """What `acpd tools list` says about plugin tools besides the registered ones."""
    lines = [f"plugin tool {name} not registered: {why}" for name, why in found.refused.items()]
    lines += [f"plugin error: {e}" for e in found.errors]
    lines += [f"config warning: {w}" for w in found.warnings]
    return lines


def _params(tools: list[str], errors: list[str], warnings: list[str], changed: bool
            ) -> dict[str, Any]:
    return {"scope": SCOPE, "tools": tools, "errors": errors, "warnings": warnings,
            "changed": changed, "keptLastGood": not changed, "hash": ""}
