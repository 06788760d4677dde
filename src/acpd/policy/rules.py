"""The policy file format: TOML parsed into frozen, validated pydantic objects with a stable hash.

See docs/policy.md for the format. A user file is layered over the embedded default
(`[policy] inherit_default = false` starts from nothing instead): scalars override, deny lists
and blocklists are unions, rules with the same id replace the default's.
"""

from __future__ import annotations

import hashlib
import json
import re
import tomllib
from importlib import resources
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from acpd.policy.decision import Verdict

Trust = Literal["untrusted", "provisional", "trusted"]
TRUST_LEVELS: tuple[Trust, ...] = ("untrusted", "provisional", "trusted")
MAX_POLICY_BYTES = 1 << 20
CHECKS = frozenset({"script-in-workspace", "sed-exec", "awk-exec", "push-origin",
                    "push-not-origin", "git-config-write", "git-destructive", "push-deletes",
                    "system-state", "tar-extract-git", "tar-extract-unlisted"})
_ID = re.compile(r"^[a-z0-9][a-z0-9._-]{0,79}$")


class PolicyError(Exception):
    """The policy (or an overlay) is invalid; the message says where and why."""


class Frozen(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class Rule(Frozen):
    id: str
    verdict: Verdict
    commands: tuple[str, ...] = Field(min_length=1)
    subcommands: tuple[str, ...] = ()
    options: tuple[str, ...] = ()
    unless_options: tuple[str, ...] = ()
    args: tuple[str, ...] = ()
    any_arg: tuple[str, ...] = ()
    argv: tuple[str, ...] = ()
    no_args: bool = False
    global_only: bool = False
    """`options` count only before the first positional (git -c, not git commit -c)."""
    check: str | None = None
    modeled: bool = False
    """An allow that holds only when the program's argument spec models every option and
    argument given (or the command runs sandboxed)."""
    trust: Literal["any", "trusted"] = "any"
    reason: str = ""
    match: tuple[str, ...] = ()
    not_match: tuple[str, ...] = ()
    source: str = Field("", exclude=True)

    @field_validator("id")
    @classmethod
    def _id(cls, value: str) -> str:
        if not _ID.match(value):
            raise ValueError(f"rule id {value!r} must match {_ID.pattern}")
        return value

    @field_validator("check")
    @classmethod
    def _check(cls, value: str | None) -> str | None:
        if value is not None and value not in CHECKS:
            raise ValueError(f"unknown check {value!r} (known: {', '.join(sorted(CHECKS))})")
        return value

    @field_validator("options", "unless_options")
    @classmethod
    def _opts(cls, value: tuple[str, ...]) -> tuple[str, ...]:
        for opt in value:
            if not opt.startswith("-") or len(opt) < 2:
                raise ValueError(f"option {opt!r} must start with - or --")
        return value

    @property
    def conditioned(self) -> bool:
        return bool(self.options or self.args or self.any_arg or self.argv or self.check)


class GlobRule(Frozen):
    """`[[tools.permissions.bash]]` of the seeds: a glob over the command text."""

    pattern: str = Field(min_length=1, max_length=1000)
    action: Verdict
    source: str = Field("", exclude=True)


class Settings(Frozen):
    name: str = "policy"
    inherit_default: bool = True
    trust: Trust = "provisional"
    allow_network: bool = False
    default: Literal["ask", "deny"] = "ask"
    parse_error: Literal["ask", "deny"] = "ask"
    max_command_bytes: int = Field(65536, ge=256, le=1 << 20)
    budget_ms: int = Field(50, ge=1, le=60_000)
    """Hard time budget of one shell decision; past it the decision is ask."""
    max_delete_files: int = Field(50, ge=0, le=1_000_000)
    """A deletion that removes more entries than this asks first, whatever allows it."""


class PathsPolicy(Frozen):
    outside_read: Verdict = "deny"
    outside_write: Verdict = "deny"
    read_roots: tuple[str, ...] = ()
    write_roots: tuple[str, ...] = ()
    deny_read: tuple[str, ...] = ()
    deny_write: tuple[str, ...] = ()


class BlocklistExtra(Frozen):
    commands: tuple[str, ...] = ()
    env: tuple[str, ...] = ()


class Network(Frozen):
    commands: tuple[str, ...] = ()


class Grammar(Frozen):
    value_options: tuple[str, ...] = ()


class ShellLegacy(Frozen):
    blocked_commands: tuple[str, ...] = ()
    confirm_patterns: tuple[str, ...] = ()


class Permissions(Frozen):
    bash: tuple[GlobRule, ...] = ()


class Tools(Frozen):
    model_config = ConfigDict(extra="ignore", frozen=True)
    permissions: Permissions = Permissions()
    shell: ShellLegacy = ShellLegacy()

    @model_validator(mode="before")
    @classmethod
    def _only_ours(cls, data: Any) -> Any:
        if isinstance(data, dict):
            shell = data.get("shell")
            if isinstance(shell, dict):
                data = {**data, "shell": {k: v for k, v in shell.items()
                                          if k in ("blocked_commands", "confirm_patterns")}}
            perms = data.get("permissions")
            if isinstance(perms, dict):
                data = {**data, "permissions": {k: v for k, v in perms.items() if k == "bash"}}
        return data


class Policy(Frozen):
    model_config = ConfigDict(extra="ignore", frozen=True)
    policy: Settings = Settings()
    paths: PathsPolicy = PathsPolicy()
    blocklist: BlocklistExtra = BlocklistExtra()
    network: Network = Network()
    commands: dict[str, Grammar] = Field(default_factory=dict)
    rules: tuple[Rule, ...] = ()
    tools: Tools = Tools()
    allowed_commands: tuple[str, ...] | None = None
    """Set by plugin overlays only: the intersection of their allowed commands."""
    sources: tuple[str, ...] = Field((), exclude=True)

    @model_validator(mode="after")
    def _unique_ids(self) -> Policy:
        seen: set[str] = set()
        for rule in self.rules:
            if rule.id in seen:
                raise ValueError(f"duplicate rule id {rule.id!r}")
            seen.add(rule.id)
        return self

    def content_hash(self) -> str:
        data = self.model_dump(mode="json")
        blob = json.dumps(data, sort_keys=True, separators=(",", ":"), ensure_ascii=True)
        return hashlib.sha256(blob.encode()).hexdigest()[:16]

    def glob_rules(self) -> tuple[GlobRule, ...]:
        """Per-tool permission rules plus the legacy lists converted (deny and ask)."""
        legacy = self.tools.shell
        converted = [GlobRule(pattern=f"*{b}*", action="deny", source="tools.shell")
                     for b in legacy.blocked_commands]
        converted += [GlobRule(pattern=f"*{p}*", action="ask", source="tools.shell")
                      for p in legacy.confirm_patterns]
        return (*self.tools.permissions.bash, *converted)


def default_policy_text() -> str:
    return resources.files("acpd").joinpath("data", "default-policy.toml").read_text("utf-8")


def read_toml(path: Path, limit: int = MAX_POLICY_BYTES) -> dict[str, Any]:
    """Read a TOML file with a size cap; symlinks are followed only for the main config."""
    try:
        with path.open("rb") as fh:
            data = fh.read(limit + 1)
    except OSError as exc:
        raise PolicyError(f"{path}: cannot read ({exc.strerror or exc})") from exc
    if len(data) > limit:
        raise PolicyError(f"{path}: larger than {limit} bytes")
    try:
        return tomllib.loads(data.decode("utf-8"))
    except (UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
        raise PolicyError(f"{path}: not valid TOML ({exc})") from exc


_UNION_LISTS = {("paths", "deny_read"), ("paths", "deny_write"), ("blocklist", "commands"),
                ("blocklist", "env"), ("network", "commands")}


def layer(base: dict[str, Any], top: dict[str, Any]) -> dict[str, Any]:
    """Layer a user policy dict over a base one (see the module docstring)."""
    out: dict[str, Any] = {k: v for k, v in base.items()}
    for key, value in top.items():
        if key == "rules" and isinstance(value, list):
            ids = {r.get("id") for r in value if isinstance(r, dict)}
            kept = [r for r in out.get("rules", []) if r.get("id") not in ids]
            out["rules"] = kept + value
        elif isinstance(value, dict) and isinstance(out.get(key), dict):
            merged = dict(out[key])
            for sub, subval in value.items():
                if (key, sub) in _UNION_LISTS and isinstance(subval, list):
                    merged[sub] = list(dict.fromkeys([*merged.get(sub, []), *subval]))
                elif key == "commands" and isinstance(subval, dict):
                    merged[sub] = subval
                else:
                    merged[sub] = subval
            out[key] = merged
        else:
            out[key] = value
    return out


def build(data: dict[str, Any], source: str) -> Policy:
    rules = data.get("rules", [])
    if isinstance(rules, list):
        data = {**data, "rules": [
            {**r, "source": r.get("source") or source} if isinstance(r, dict) else r
            for r in rules
        ]}
    try:
        return Policy.model_validate(data)
    except ValidationError as exc:
        raise PolicyError(f"{source}: {_short(exc)}") from exc


def _short(exc: ValidationError) -> str:
    parts = []
    for err in exc.errors()[:5]:
        loc = ".".join(str(x) for x in err["loc"])
        parts.append(f"{loc}: {err['msg']}")
    return "; ".join(parts)


def load_base(config: Path | None) -> tuple[Policy, list[str]]:
    """The embedded default, layered with the user's file when given. Raises PolicyError."""
    default = tomllib.loads(default_policy_text())
    sources = ["default-policy.toml"]
    data: dict[str, Any] = {**default, "rules": [
        {**r, "source": "default-policy.toml"} for r in default.get("rules", [])]}
    if config is not None:
        user = read_toml(config)
        settings = user.get("policy", {})
        inherit = not isinstance(settings, dict) or settings.get("inherit_default", True)
        user_rules = [{**r, "source": str(config)} if isinstance(r, dict) else r
                      for r in user.get("rules", [])]
        user = {**user, "rules": user_rules} if "rules" in user else user
        data = layer(data, user) if inherit else user
        sources = [*sources, str(config)] if inherit else [str(config)]
    policy = build(data, sources[-1])
    return policy.model_copy(update={"sources": tuple(sources)}), sources
