"""`[tools.filter]` and `[tools.capabilities]`: which plugin tools may run, and with what.

Every plugin tool is *external* (acpd's built-in tools are the `core__` ones): it is denied
unless `[tools.filter] allow_external = true`, and then only those named in
`external_allow_list` when that list is not empty. A capability preset, when one is active,
narrows further: only the tools it lists, network only when it says `allow_network`, and
writable mounts only under its `allow_write_paths`. Filter and preset must both allow a tool
for it to be registered (and so shown to the model); the shell policy's `allow_network` and
the permission rules still judge every call.
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field, model_validator


class _Section(BaseModel):
    model_config = ConfigDict(extra="forbid")


class ToolFilterConfig(_Section):
    allow_external: bool = False
    external_allow_list: list[str] = Field(default_factory=list)
    """Tool names (`tool_name`) or ids (`plugin__<name>`); empty: every external tool."""


class CapabilityPreset(_Section):
    tools: list[str] = Field(default_factory=list)
    allow_network: bool = False
    allow_write_paths: list[str] = Field(default_factory=list)
    """Absolute paths (~ allowed) under which a plugin's mount may be writable."""


class CapabilitiesConfig(_Section):
    active_preset: str | None = None
    presets: dict[str, CapabilityPreset] = Field(default_factory=dict)

    @model_validator(mode="after")
    def _known_preset(self) -> CapabilitiesConfig:
        if self.active_preset is not None and self.active_preset not in self.presets:
            known = ", ".join(sorted(self.presets)) or "none defined"
            raise ValueError(f"active_preset {self.active_preset!r} is not a preset ({known})")
        return self

    def active(self) -> CapabilityPreset | None:
        return self.presets.get(self.active_preset) if self.active_preset else None
