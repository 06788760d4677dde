"""The v1 additions as the session methods use them: extra roots checked against the live
policy, boolean switches in the config options, and what `session/list` reports.

Kept out of daemon/methods.py so that file only calls in (one line per place).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from acpd.daemon import settings as stored
from acpd.daemon.roots import check_roots
from acpd.daemon.settings import SWITCH_IDS, SWITCHES, client_takes_booleans, option_wire
from acpd.daemon.usage import SessionCost

if TYPE_CHECKING:
    from collections.abc import Mapping

    from acpd.daemon.agent import Runtime
    from acpd.daemon.session import Session


async def accept_roots(rt: Runtime, cwd: str, requested: Any) -> tuple[str, ...]:
    """The checked extra roots (daemon/roots.py). Raises RpcError (-32602) for a bad one."""
    if not requested:
        return ()
    deny_read: list[str] = list(rt.config.tools.file.deny_read)
    shell = rt.pipeline.shell
    if shell is not None:
        handle = await shell.handle_for(cwd)
        deny_read.extend(handle.current.policy.paths.deny_read)
    return check_roots(requested, cwd, deny_read=deny_read, protected=_protected(rt))


def _protected(rt: Runtime) -> list[str]:
    from acpd.daemon.config import default_config_path

    places = [str(default_config_path().parent)]
    places.extend(str(p) for p in rt.config.tools.shell.plugin_paths())
    if rt.store.path is not None:
        places.append(str(rt.store.path.parent))
    return places


def activate(session: Session, rt: Runtime, roots: tuple[str, ...], *, fresh: bool) -> None:
    """Give the session its stored settings (none when `fresh`) and these extra roots."""
    raw = {} if fresh else rt.store.settings(session.id)
    settings = stored.SessionSettings.from_dict(raw)
    if not fresh and not raw and session.history:
        # Made before costs were kept: what its earlier calls cost is not known.
        settings.cost = SessionCost(None, None)
    settings.additional_directories = list(roots)
    session.settings = settings
    stored.save(rt.store, session.id, settings)


def switch_options(session: Session, raw_caps: Mapping[str, Any]) -> list[dict[str, Any]]:
    booleans = client_takes_booleans(raw_caps)
    return [option_wire(s, session.settings.on(s.id), booleans) for s in SWITCHES]


def is_switch(config_id: str) -> bool:
    return config_id in SWITCH_IDS


def set_switch(session: Session, rt: Runtime, config_id: str, value: Any) -> None:
    """Raises RpcError (-32602) for a value that is not a boolean (or "on"/"off")."""
    session.settings.switches[config_id] = stored.switch_value(config_id, value)
    stored.save(rt.store, session.id, session.settings)


def listed_roots(rt: Runtime, session_id: str) -> list[str]:
    return stored.load(rt.store, session_id).additional_directories
