"""Plugin overlays: `<plugins dir>/<name>/plugin.toml` with a `[shell]` table that can only tighten.

Blocked commands, deny/ask rules, deny lists and network commands are unions; allowed commands
are an intersection; `allow_network` can only be turned off. An overlay that is a symlink, too
big, unreadable (by its mode bits too: root reads anything, so the bits are checked), writable
by others, not TOML or not valid is an error, reported with its path.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from acpd.ownership import ownership_problem
from acpd.policy.rules import Frozen, Policy, PolicyError, Rule
from acpd.readcap import read_upto

MAX_OVERLAY_BYTES = 256 * 1024
MAX_PLUGINS = 200


class ShellOverlay(Frozen):
    blocked_commands: tuple[str, ...] = ()
    allowed_commands: tuple[str, ...] | None = None
    deny_read: tuple[str, ...] = ()
    deny_write: tuple[str, ...] = ()
    blocked_env: tuple[str, ...] = ()
    network_commands: tuple[str, ...] = ()
    allow_network: bool | None = None
    rules: tuple[Rule, ...] = ()

    @field_validator("rules")
    @classmethod
    def _tighten_only(cls, rules: tuple[Rule, ...]) -> tuple[Rule, ...]:
        for rule in rules:
            if rule.verdict == "allow":
                raise ValueError(f"rule {rule.id}: overlays may only deny or ask")
        return rules

    @field_validator("allow_network")
    @classmethod
    def _no_network_grant(cls, value: bool | None) -> bool | None:
        if value:
            raise ValueError("allow_network = true: overlays may only turn the network off")
        return value


class PluginFile(BaseModel):
    model_config = ConfigDict(extra="ignore", frozen=True)
    shell: ShellOverlay | None = None
    name: str | None = Field(None, max_length=100)


@dataclass(frozen=True, slots=True)
class Overlay:
    name: str
    path: str
    shell: ShellOverlay
    folder: str = ""


def _check_mode(path: Path, st: os.stat_result, want: int, kind: str) -> None:
    problem = ownership_problem(path, st, kind, want)
    if problem is not None:
        raise PolicyError(problem)


def load_overlay(folder: Path) -> Overlay:
    """Read and validate one plugin folder. Raises PolicyError."""
    try:
        st = folder.lstat()
    except OSError as exc:
        raise PolicyError(f"{folder}: {exc.strerror or exc}") from exc
    _check_mode(folder, st, 0o500, "directory")
    manifest = folder / "plugin.toml"
    try:
        mst = manifest.lstat()
    except FileNotFoundError as exc:
        if (folder / "tool.toml").exists():  # a tool-only plugin (acpd.tools.plugins)
            return Overlay(folder.name, str(manifest), ShellOverlay(), str(folder))
        raise PolicyError(f"{manifest}: missing") from exc
    except OSError as exc:
        raise PolicyError(f"{manifest}: {exc.strerror or exc}") from exc
    _check_mode(manifest, mst, 0o400, "file")
    if mst.st_size > MAX_OVERLAY_BYTES:
        raise PolicyError(f"{manifest}: {mst.st_size} bytes, over the {MAX_OVERLAY_BYTES} cap")
    try:
        fd = os.open(manifest, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0))
        with os.fdopen(fd, "rb") as fh:
            data = read_upto(fh, MAX_OVERLAY_BYTES)
    except OSError as exc:
        raise PolicyError(f"{manifest}: cannot read ({exc.strerror or exc})") from exc
    if len(data) > MAX_OVERLAY_BYTES:
        raise PolicyError(f"{manifest}: over the {MAX_OVERLAY_BYTES} byte cap")
    import tomllib

    try:
        raw: dict[str, Any] = tomllib.loads(data.decode("utf-8"))
    except (UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
        raise PolicyError(f"{manifest}: not valid TOML ({exc})") from exc
    misplaced = [k for k in ("tool", "tools") if k in raw]
    if misplaced:  # once silently ignored: a tool is declared by its own manifest
        raise PolicyError(f"{manifest}: [{misplaced[0]}]: plugin tools are declared in "
                          "tool.toml beside plugin.toml (see docs/plugins.md)")
    shell = raw.get("shell")
    if isinstance(shell, dict) and isinstance(shell.get("rules"), list):
        raw["shell"] = {**shell, "rules": [
            {**r, "source": str(manifest)} if isinstance(r, dict) else r for r in shell["rules"]
        ]}
    try:
        plugin = PluginFile.model_validate(raw)
    except ValidationError as exc:
        first = exc.errors()[0]
        loc = ".".join(str(x) for x in first["loc"])
        raise PolicyError(f"{manifest}: {loc}: {first['msg']}") from exc
    return Overlay(plugin.name or folder.name, str(manifest), plugin.shell or ShellOverlay(),
                   str(folder))


Failure = tuple[str | None, str]
"""(plugin folder or None for a whole plugins directory, message)"""


def discover(plugin_dirs: Sequence[Path]) -> tuple[list[Overlay], list[Failure]]:
    """Every plugin folder under the given directories; errors are collected, not raised."""
    overlays: list[Overlay] = []
    errors: list[Failure] = []
    for root in plugin_dirs:
        try:
            st = root.lstat()
        except FileNotFoundError:
            continue
        except OSError as exc:
            errors.append((str(root), f"{root}: {exc.strerror or exc}"))
            continue
        try:
            _check_mode(root, st, 0o500, "directory")
            entries = sorted(os.scandir(root), key=lambda e: e.name)
        except (PolicyError, OSError) as exc:
            errors.append((str(root), str(exc)))
            continue
        for entry in entries[:MAX_PLUGINS]:
            if entry.name.startswith("."):
                continue
            path = Path(entry.path)
            if not entry.is_dir(follow_symlinks=False) and not entry.is_symlink():
                continue
            try:
                overlays.append(load_overlay(path))
            except PolicyError as exc:
                errors.append((str(path), str(exc)))
        if len(entries) > MAX_PLUGINS:
            errors.append((None, f"{root}: more than {MAX_PLUGINS} plugins; the rest are ignored"))
    return overlays, errors


def _union(a: tuple[str, ...], b: tuple[str, ...]) -> tuple[str, ...]:
    return tuple(dict.fromkeys((*a, *b)))


def merge(base: Policy, overlays: Sequence[Overlay]) -> Policy:
    """The base policy tightened by every overlay (order does not matter)."""
    rules = list(base.rules)
    blocked, env = base.blocklist.commands, base.blocklist.env
    deny_read, deny_write = base.paths.deny_read, base.paths.deny_write
    network = base.network.commands
    allowed = base.allowed_commands
    allow_network = base.policy.allow_network
    ids = {r.id for r in rules}
    for ov in sorted(overlays, key=lambda o: o.path):
        sh = ov.shell
        prefix = f"plugin.{_slug(ov.name)}."
        for rule in sh.rules:
            new_id, k = prefix + rule.id, 2
            while new_id in ids:
                new_id, k = f"{prefix}{rule.id}-{k}", k + 1
            ids.add(new_id)
            rules.append(rule.model_copy(update={"id": new_id[:80], "source": ov.path}))
        blocked = _union(blocked, sh.blocked_commands)
        env = _union(env, sh.blocked_env)
        deny_read = _union(deny_read, sh.deny_read)
        deny_write = _union(deny_write, sh.deny_write)
        network = _union(network, sh.network_commands)
        if sh.allowed_commands is not None:
            mine = set(sh.allowed_commands)
            allowed = tuple(sorted(mine if allowed is None else set(allowed) & mine))
        if sh.allow_network is False:
            allow_network = False
    try:
        merged = Policy.model_validate({
        **base.model_dump(mode="python", exclude={"rules", "sources"}),
        "policy": {**base.policy.model_dump(), "allow_network": allow_network},
        "paths": {**base.paths.model_dump(), "deny_read": deny_read, "deny_write": deny_write},
        "blocklist": {"commands": blocked, "env": env},
        "network": {"commands": network},
        "allowed_commands": allowed,
        "rules": [r.model_dump() | {"source": r.source} for r in rules],
        })
    except ValidationError as exc:
        raise PolicyError(f"merging overlays: {exc.errors()[0]['msg']}") from exc
    return merged.model_copy(update={"sources": (*base.sources, *(o.path for o in overlays))})


def _slug(name: str) -> str:
    out = "".join(c if c.isalnum() or c in "-_" else "-" for c in name.lower())
    return out.strip("-_")[:40] or "plugin"
