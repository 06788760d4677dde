"""Finding plugin tools and deciding which may be registered.

A plugin folder (`<plugins dir>/<name>/`, the folders that carry policy overlays) declares a
tool with a `tool.toml` beside (or instead of) its `plugin.toml`. `scan` reads every folder,
in name order, at most MAX_PLUGINS per directory, and sorts each tool into:
  - `tools`: may be registered (id `plugin__<tool_name>`);
  - `refused`: found but kept out, with the reason (the external filter, the capability
    preset, network or writable mounts the preset does not grant); the runner quotes it
    when such a tool is called;
  - `errors`: manifests that do not load, with their path;
  - `warnings`: configuration entries that are dead or redundant.
Nothing here raises: a bad folder is an error line and the others still load.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from acpd.tools.plugins.config import CapabilitiesConfig, CapabilityPreset, ToolFilterConfig
from acpd.tools.plugins.files import MANIFEST, WORKSPACE, ManifestError, check_owned

if TYPE_CHECKING:
    from acpd.tools.plugins.manifest import PluginTool

MAX_PLUGINS = 200
PREFIX = "plugin__"


@dataclass(frozen=True, slots=True)
class PluginSettings:
    dirs: tuple[Path, ...] = ()
    filter: ToolFilterConfig = field(default_factory=ToolFilterConfig)
    capabilities: CapabilitiesConfig = field(default_factory=CapabilitiesConfig)
    builtin: frozenset[str] = frozenset()
    """The core tools' names and ids (for the redundant-entry warning)."""

    @property
    def preset(self) -> CapabilityPreset | None:
        return self.capabilities.active()


@dataclass(slots=True)
class PluginScan:
    tools: list[PluginTool] = field(default_factory=list)
    refused: dict[str, str] = field(default_factory=dict)
    errors: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    digest: str = ""
    """Changes whenever a manifest or an entry changes (a reload compares it)."""


def scan(settings: PluginSettings) -> PluginScan:
    result = PluginScan()
    digest = hashlib.sha256()
    found: list[PluginTool] = []
    folders = _folders(settings.dirs, result.errors)
    if folders:
        from acpd.tools.plugins.manifest import load_tool
    for folder in folders:
        try:
            tool = load_tool(folder)
        except ManifestError as exc:
            result.errors.append(str(exc))
            digest.update(f"error {exc}\0".encode("utf-8", "surrogateescape"))
            continue
        if any(t.name == tool.name for t in found):
            result.errors.append(f"{tool.path}: tool_name {tool.name!r} is already declared "
                                 "by another plugin folder; this one is ignored")
            continue
        found.append(tool)
        digest.update(_stamp(tool))
    for tool in found:
        reason = refusal(tool, settings)
        if reason is None:
            result.tools.append(tool)
        else:
            result.refused[tool.name] = reason
    result.warnings = config_warnings(settings, {t.name for t in found})
    result.digest = digest.hexdigest() + "/" + ",".join(t.name for t in result.tools)
    return result


def _stamp(tool: PluginTool) -> bytes:
    parts = [tool.path, tool.manifest.model_dump_json(), tool.entry]
    try:
        st = os.stat(tool.entry)
        parts.append(f"{st.st_size}:{st.st_mtime_ns}:{st.st_ino}")
    except OSError:
        parts.append("gone")
    return "\0".join(parts).encode("utf-8", "surrogateescape")


def _folders(dirs: Sequence[Path], errors: list[str]) -> list[Path]:
    folders: list[Path] = []
    for root in dirs:
        try:
            st = root.lstat()
        except FileNotFoundError:
            continue
        except OSError as exc:
            errors.append(f"{root}: {exc.strerror or exc}")
            continue
        try:
            check_owned(root, st, "directory")
            entries = sorted(os.scandir(root), key=lambda e: e.name)
        except (ManifestError, OSError) as exc:
            errors.append(str(exc))
            continue
        for entry in entries[:MAX_PLUGINS]:
            if entry.name.startswith(".") or not entry.is_dir(follow_symlinks=False):
                continue
            if os.path.lexists(os.path.join(entry.path, MANIFEST)):
                folders.append(Path(entry.path))
    return folders


def _listed(name: str, entries: Sequence[str]) -> bool:
    return name in entries or PREFIX + name in entries


def refusal(tool: PluginTool, settings: PluginSettings) -> str | None:
    """Why `tool` may not be registered, or None."""
    filt, preset = settings.filter, settings.preset
    if not filt.allow_external:
        return (f"{tool.name} is an external (plugin) tool and external tools are denied: set "
                "[tools.filter] allow_external = true")
    if filt.external_allow_list and not _listed(tool.name, filt.external_allow_list):
        return f"{tool.name} is not in [tools.filter] external_allow_list"
    name = settings.capabilities.active_preset
    if preset is not None and not _listed(tool.name, preset.tools):
        return f"{tool.name} is not in the tools of the capability preset {name!r}"
    if tool.manifest.requires_network and (preset is None or not preset.allow_network):
        return (f"{tool.name} requires_network and no active capability preset has "
                "allow_network = true")
    for mount in tool.writable_mounts:
        if preset is None or not _write_allowed(mount.host, tool.folder, preset):
            return (f"{tool.name} mounts {mount.host} writable and the active capability "
                    "preset's allow_write_paths does not cover it")
    return None


def _write_allowed(host: str, folder: str, preset: CapabilityPreset) -> bool:
    if host == WORKSPACE or host.startswith(WORKSPACE + "/"):
        return WORKSPACE in preset.allow_write_paths
    real = os.path.realpath(os.path.join(folder, host))
    for allowed in preset.allow_write_paths:
        if allowed == WORKSPACE:
            continue
        base = os.path.realpath(os.path.expanduser(allowed))
        if real == base or real.startswith(base.rstrip("/") + "/"):
            return True
    return False


def config_warnings(settings: PluginSettings, installed: set[str]) -> list[str]:
    """Dead or redundant entries of [tools.filter] and [tools.capabilities]."""
    warnings: list[str] = []
    filt, caps = settings.filter, settings.capabilities
    preset_tools = {t.removeprefix(PREFIX) for p in caps.presets.values() for t in p.tools}
    if filt.external_allow_list and not filt.allow_external:
        warnings.append("[tools.filter] external_allow_list has no effect while "
                        "allow_external = false")
    for entry in filt.external_allow_list:
        name = entry.removeprefix(PREFIX)
        if entry in settings.builtin:
            warnings.append(f"[tools.filter] external_allow_list names the built-in tool "
                            f"{entry!r}: redundant (built-in tools bypass the filter)")
        elif name not in installed:
            warnings.append(f"[tools.filter] external_allow_list names {entry!r}, which no "
                            "plugin folder declares (dead entry)")
        elif caps.presets and name not in preset_tools:
            warnings.append(f"[tools.filter] external_allow_list names {entry!r}, which no "
                            "capability preset lists (dead entry)")
    for preset_name, preset in caps.presets.items():
        for entry in preset.tools:
            if entry.removeprefix(PREFIX) not in installed and entry not in settings.builtin:
                warnings.append(f"capability preset {preset_name!r} lists {entry!r}, which no "
                                "plugin folder declares (dead entry)")
    return warnings
