"""What a session keeps besides its mode and model: boolean switches, extra workspace roots,
the running cost. Stored as one JSON object per session (SessionStore.settings), read when
the session is loaded or resumed, written on every change.

Boolean config options (ACP `type: "boolean"`, sent only to a client that advertises
`session.configOptions.boolean`; others get the same switch as a select of "on"/"off" so
CodeCompanion and friends can still use it):
- `confirm_commands` ("Confirm every command"): every bash call asks the user first, even
  one the policy allows or an earlier "always" answer covers. It never lets a call through
  that would otherwise be refused.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from acpd.daemon.usage import SessionCost
from acpd.protocol.errors import invalid_params

if TYPE_CHECKING:
    from acpd.daemon.store import SessionStore


@dataclass(frozen=True, slots=True)
class Switch:
    id: str
    name: str
    description: str
    default: bool = False


SWITCHES = (
    Switch(
        "confirm_commands", "Confirm every command",
        "Ask before every shell command, even those the policy allows or you allowed always.",
    ),
)
SWITCH_IDS = frozenset(s.id for s in SWITCHES)
SELECT_VALUES = {"on": True, "off": False}


@dataclass(slots=True)
class SessionSettings:
    switches: dict[str, bool] = field(default_factory=dict)
    additional_directories: list[str] = field(default_factory=list)
    cost: SessionCost = field(default_factory=SessionCost)

    def on(self, switch_id: str) -> bool:
        default = next(s.default for s in SWITCHES if s.id == switch_id)
        return self.switches.get(switch_id, default)

    def to_dict(self) -> dict[str, Any]:
        return {
            "switches": dict(self.switches),
            "additionalDirectories": list(self.additional_directories),
            "cost": self.cost.to_dict(),
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> SessionSettings:
        raw = data.get("switches")
        switches = {
            k: v for k, v in (raw.items() if isinstance(raw, dict) else ())
            if k in SWITCH_IDS and isinstance(v, bool)
        }
        dirs = data.get("additionalDirectories")
        extra = [d for d in dirs if isinstance(d, str)] if isinstance(dirs, list) else []
        return cls(switches, extra, SessionCost.from_dict(data.get("cost", {})))


def load(store: SessionStore, session_id: str) -> SessionSettings:
    return SessionSettings.from_dict(store.settings(session_id))


def save(store: SessionStore, session_id: str, settings: SessionSettings) -> None:
    store.save_settings(session_id, settings.to_dict())


def switch_value(switch_id: str, value: Any) -> bool:
    """The boolean a `session/set_config_option` asks for; raises RpcError (-32602)."""
    if isinstance(value, bool):
        return value
    if isinstance(value, str) and value in SELECT_VALUES:
        return SELECT_VALUES[value]
    raise invalid_params(f"{switch_id} is a boolean option: send type \"boolean\" and "
                         "value true or false (or the value \"on\" or \"off\")")


def option_wire(switch: Switch, value: bool, boolean: bool) -> dict[str, Any]:
    """The config option for `switch`: a boolean toggle for a client that advertised them,
    else a select of on/off (a client must never see a kind it did not ask for)."""
    base = {"id": switch.id, "name": switch.name, "description": switch.description}
    if boolean:
        return {**base, "type": "boolean", "currentValue": value}
    return {
        **base, "type": "select", "currentValue": "on" if value else "off",
        "options": [{"value": "on", "name": "On"}, {"value": "off", "name": "Off"}],
    }


def client_takes_booleans(raw_caps: Mapping[str, Any]) -> bool:
    session = raw_caps.get("session")
    options = session.get("configOptions") if isinstance(session, dict) else None
    return isinstance(options, dict) and isinstance(options.get("boolean"), dict)
