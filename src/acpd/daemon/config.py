"""Configuration: a TOML file validated by pydantic, overridden by flags and environment.

Unknown keys are errors (a typo must not silently fall back to a default). The file is
looked up at `--config`, then `$ACPD_CONFIG`, then `<user config dir>/acpd/config.toml`.
"""

from __future__ import annotations

import os
import re
import tomllib
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from acpd.daemon.errors import ConfigError
from acpd.daemon.image_models import DEFAULT_IMAGE_MODELS
from acpd.mcpclient.config import McpConfig
from acpd.protocol.framing import DEFAULT_MAX_LINE_BYTES
from acpd.tools.catalog.config import CatalogConfig
from acpd.tools.diagnostics.config import DiagnosticsConfig
from acpd.tools.gates.config import (
    AdversarialPolicyConfig,
    AuthorizationConfig,
    HallucinationConfig,
    LegacyConfig,
    UtilityConfig,
)
from acpd.tools.native.config import NativeConfig
from acpd.tools.plugins.config import CapabilitiesConfig, ToolFilterConfig

if TYPE_CHECKING:
    from acpd.net.settings import FetchSettings
    from acpd.tools.fs import FileToolsConfig

MAX_CONFIG_BYTES = 1 << 20


class Section(BaseModel):
    model_config = ConfigDict(extra="forbid")


class PriceConfig(Section):
    """What a model costs, per million tokens (docs/v1-additions.md). A call whose cached
    tokens have no price here gets no cost: acpd never guesses one."""

    input_per_mtok: float = Field(ge=0)
    output_per_mtok: float = Field(ge=0)
    cache_read_per_mtok: float | None = Field(None, ge=0)
    cache_write_per_mtok: float | None = Field(None, ge=0)
    currency: str = Field("USD", min_length=1, max_length=16)


class AgentConfig(Section):
    model: str | None = None
    """`openai:NAME`, `anthropic:NAME` or `scripted:PATH`; none means direct mode."""
    models: list[str] = Field(default_factory=list)
    """Extra choices offered in the editor's model picker."""
    max_tool_iterations: int = Field(10, ge=1, le=1000)
    max_tool_calls_per_reply: int = Field(64, ge=1, le=100_000)
    """Tool calls run from one model reply; the rest are dropped and the model told so."""
    context_budget_tokens: int = Field(0, ge=0)
    """0 uses the provider's context window."""
    max_tokens: int = Field(4096, ge=1)
    system_prompt: str | None = None
    default_mode: str = Field("ask", pattern="^(read-only|ask|auto)$")
    prices: dict[str, PriceConfig] = Field(default_factory=dict)
    """`kind:model` (or the bare model name) -> its price: the cost in `usage_update` when
    the provider does not report one."""
    image_models: list[str] = Field(default_factory=lambda: list(DEFAULT_IMAGE_MODELS))
    """Globs on `kind:model`: the models that take images in prompts."""
    max_image_bytes: int = Field(5 * 1024 * 1024, ge=1024, le=64 * 1024 * 1024)
    """Largest image (decoded) a prompt may carry; a larger one is refused, saying so."""
    catalog: CatalogConfig = Field(default_factory=CatalogConfig)
    """`[agent.catalog]`: schema filtering, dependency gates, TAFC (docs/catalog.md)."""


class ProviderConfig(Section):
    base_url: str | None = None
    api_key_env: str | None = None
    timeout: float = Field(120.0, gt=0)
    max_retries: int = Field(2, ge=0, le=10)


class ProvidersConfig(Section):
    openai: ProviderConfig = Field(default_factory=ProviderConfig)
    anthropic: ProviderConfig = Field(default_factory=ProviderConfig)


# Variables that must not reach a command the model wrote: credentials of the daemon's own
# providers and of common services. Globs on the name, case-insensitive.
DEFAULT_ENV_BLOCKLIST = (
    "*API_KEY*", "*APIKEY*", "*ACCESS_KEY*", "*ACCESSKEY*", "*SECRET*", "*TOKEN*", "*PASSWORD*",
    "*PASSWD*", "*CREDENTIAL*", "*PRIVATE_KEY*", "*PRIVATEKEY*", "*AUTH*",
    # Where `cd -` and a relative `cd` go (the judge asks for both; without them bash
    # has no OLDPWD to go back to and no CDPATH to search).
    "OLDPWD", "CDPATH",
)


class ShellConfig(Section):
    timeout: float = Field(120.0, gt=0, le=3600)
    output_byte_limit: int = Field(1 << 20, ge=1024, le=1 << 30)
    policy_file: str | None = None
    """A shell policy TOML layered over the embedded default (docs/policy.md)."""
    trust: Literal["untrusted", "provisional", "trusted"] = "provisional"
    """Trust of a workspace not listed in trusted_workspaces."""
    trusted_workspaces: list[str] = Field(default_factory=list)
    """A session whose cwd is under one of these is trusted (and loads <cwd>/.acpd/plugins)."""
    plugin_dirs: list[str] | None = None
    """Plugin directories; None: <user config dir>/acpd/plugins."""
    env_blocklist: list[str] = Field(default_factory=lambda: list(DEFAULT_ENV_BLOCKLIST))
    """Names or globs (case-insensitive) unset for every command: local ones and those run
    in the editor's terminal (daemon/envscrub.py)."""
    transactional: bool = False
    """Snapshot the files a write command targets; roll back on auto_rollback_exit_codes."""
    auto_rollback_exit_codes: list[int] = Field(default_factory=lambda: [1, 2])
    snapshot_required: bool = False
    """Refuse to run a write command whose targets could not be snapshotted."""
    max_snapshot_bytes: int = Field(0, ge=0)
    """0: unlimited; otherwise a snapshot larger than this fails."""

    @field_validator("policy_file")
    @classmethod
    def _policy_file(cls, value: str | None) -> str | None:
        if value is None:
            return None
        path = Path(value).expanduser()
        if not path.is_absolute():
            raise ValueError(f"must be an absolute path, not {value!r}")
        from acpd.policy.rules import PolicyError, load_base

        try:
            load_base(path)
        except PolicyError as exc:
            raise ValueError(f"not a valid shell policy: {exc}") from None
        return str(path)

    @field_validator("trusted_workspaces", "plugin_dirs")
    @classmethod
    def _absolute(cls, value: list[str] | None) -> list[str] | None:
        if value is None:
            return None
        paths = [os.path.expanduser(v) for v in value]
        bad = [v for v, p in zip(value, paths, strict=True) if not v or not os.path.isabs(p)]
        if bad:
            raise ValueError(f"paths must be absolute (~ allowed): {bad}")
        return [os.path.normpath(p) for p in paths]

    @field_validator("env_blocklist")
    @classmethod
    def _env_names(cls, value: list[str]) -> list[str]:
        bad = [v for v in value if not _ENV_GLOB.fullmatch(v)]
        if bad:
            raise ValueError(f"not variable names or globs (letters, digits, _ * ? [ ] !): {bad}")
        return value

    @field_validator("auto_rollback_exit_codes")
    @classmethod
    def _exit_codes(cls, value: list[int]) -> list[int]:
        bad = [v for v in value if not 1 <= v <= 255]
        if bad:
            raise ValueError(f"exit codes are 1..255 (0 never rolls back): {bad}")
        return value

    def plugin_paths(self) -> list[Path]:
        if self.plugin_dirs is not None:
            return [Path(p) for p in self.plugin_dirs]
        return [default_config_path().parent / "plugins"]


_ENV_GLOB = re.compile(r"[A-Za-z0-9_*?\[\]!-]+")


# Secrets a model has no business reading. A pattern without a slash matches at any depth;
# override with `[tools.file] deny_read = [...]`.
DEFAULT_DENY_READ = (".env", ".env.*", "*.pem", "*.key", "id_rsa", "id_ed25519", "id_ecdsa")


class FileConfig(Section):
    allowed_paths: list[str] = Field(default_factory=list)
    """Roots the file tools may touch; empty means the session's working directory."""
    deny_read: list[str] = Field(default_factory=lambda: list(DEFAULT_DENY_READ))
    """Globs never read (matched on the real path; checked before allow_read)."""
    allow_read: list[str] = Field(default_factory=list)
    """When set, only files matching one of these globs may be read."""
    resolver: Literal["auto", "openat2", "walk"] = "auto"

    def tools_config(self) -> FileToolsConfig:
        from acpd.tools.fs import FileToolsConfig

        return FileToolsConfig(
            allowed_paths=tuple(self.allowed_paths),
            deny_read=tuple(self.deny_read),
            allow_read=tuple(self.allow_read),
            resolver=self.resolver,
        )

class PermissionRule(Section):
    pattern: str = Field(min_length=1)
    """Glob, matched case-insensitively on the command (bash) or each path (file tools)."""
    action: Literal["allow", "ask", "deny"]


class PermissionTable(Section):
    """`[tools.permissions.bash] allow = ["git status*"] deny = ["*sudo*"]`, the short form."""

    allow: list[str] = Field(default_factory=list)
    ask: list[str] = Field(default_factory=list)
    deny: list[str] = Field(default_factory=list)


class RetryConfig(Section):
    max_attempts: int = Field(2, ge=1, le=10)
    """Attempts in all, the first included (2 = one retry)."""
    base_ms: int = Field(500, ge=0, le=60_000)
    max_ms: int = Field(5000, ge=0, le=600_000)
    budget_secs: float = Field(30.0, ge=0, le=3600)


class ResultCacheConfig(Section):
    enabled: bool = True
    ttl_secs: float = Field(300.0, ge=0)
    """0: entries never expire (they are still dropped when files may have changed)."""


class AnomalyConfig(Section):
    enabled: bool = True
    window_size: int = Field(20, ge=1, le=10_000)
    failure_threshold: float = Field(0.7, ge=0, le=1)
    min_calls: int = Field(10, ge=1)
    auto_block: bool = True


class AuditConfig(Section):
    enabled: bool = True
    fsync: bool = False
    """fdatasync every line: survives a machine crash, costs a disk flush per call."""
    max_bytes: int = Field(64 << 20, ge=0)
    """Past this size audit.jsonl is renamed audit.jsonl.1 and a new one starts; 0: never."""
    keep: int = Field(5, ge=1, le=1000)
    """Rotated files kept (audit.jsonl.1 ... .KEEP); the oldest is removed."""


class FilterSecurityConfig(Section):
    enabled: bool = True
    """Redact credentials in tool output (model, editor, audit, session storage)."""
    extra_patterns: list[str] = Field(default_factory=list)
    """More regexes to redact (a capture group redacts only the group)."""


class FiltersConfig(Section):
    """`[tools.filters]`: the declarative output filters (tools/filters)."""

    enabled: bool = True
    filters_path: str | None = None
    """A filters.toml overriding the built-in rules; default: filters.toml beside the config."""
    disabled: list[str] = Field(default_factory=list)
    """Rule names switched off."""
    security: FilterSecurityConfig = Field(default_factory=FilterSecurityConfig)


class OverflowConfig(Section):
    """`[tools.overflow]`: outputs longer than `threshold` characters are stored whole."""

    threshold: int = Field(50_000, ge=1000, le=10_000_000)
    max_overflow_bytes: int = Field(10 * 1024 * 1024, ge=0)
    """Largest stored entry (0: unlimited)."""
    retention_days: float = Field(7.0, gt=0, le=36_500)


class WebConfig(Section):
    """`[tools.web]`: fetch and web_scrape (the SSRF rules are fixed: see acpd.net)."""

    timeout_secs: float = Field(30.0, gt=0, le=600)
    """For the whole fetch, redirects included."""
    max_body_bytes: int = Field(2 * 1024 * 1024, ge=1024, le=64 * 1024 * 1024)
    """Bodies are cut here (after decompression); the tool says so."""
    allowed_ports: list[int] = Field(default_factory=lambda: [443], min_length=1)
    max_redirects: int = Field(3, ge=0, le=3)
    ca_file: str | None = None
    """Extra trusted CA certificates (PEM), e.g. a company's TLS inspection root."""
    user_agent: str = Field("acpd-fetch/0.1", min_length=1, max_length=200,
                            pattern=r"^[\x20-\x7e]+$")

    @field_validator("allowed_ports")
    @classmethod
    def _ports(cls, value: list[int]) -> list[int]:
        bad = [p for p in value if not 0 < p < 65536]
        if bad:
            raise ValueError(f"not TCP ports: {bad}")
        return value

    def fetch_settings(self) -> FetchSettings:
        from acpd.net.settings import FetchSettings

        return FetchSettings(
            self.timeout_secs, self.max_body_bytes, frozenset(self.allowed_ports),
            self.max_redirects, self.user_agent, self.ca_file,
        )


class CheckpointConfig(Section):
    """`[tools.checkpoint]`: the workspace checkpoints taken around calls that may change
    files, for /undo and `acpd undo` (acpd/checkpoint)."""

    enabled: bool = True
    max_file_bytes: int = Field(16 << 20, ge=0)
    """Files larger than this are listed but not saved (their changes cannot be undone)."""
    max_total_bytes: int = Field(2 << 30, ge=0)
    """All saved bytes of one workspace; past it the oldest call records are dropped."""
    max_entries: int = Field(200_000, ge=1)
    """A checkpoint stops after this many paths (and says so)."""
    max_read_seconds: float = Field(5.0, ge=0)
    """A checkpoint reads files for at most this long; the rest are read by the next ones
    (0: no limit)."""
    max_diffs: int = Field(20, ge=0, le=1000)
    max_diff_bytes: int = Field(256 * 1024, ge=0)


class ToolsConfig(Section):
    enabled: list[str] = Field(default_factory=lambda: ["core__*", "mcp__*"])
    """Globs on tool ids (or names); anything not matched is denied and never shown. `mcp__*`:
    the tools of the MCP servers the editor passes (untrusted: they ask, see docs/mcp.md)."""
    executor_order: list[str] = Field(default_factory=lambda: ["file", "shell", "plan"])
    max_tool_calls_per_session: int | None = Field(None, ge=1)
    permissions: dict[str, list[PermissionRule] | PermissionTable] = Field(default_factory=dict)
    shell: ShellConfig = Field(default_factory=ShellConfig)
    file: FileConfig = Field(default_factory=FileConfig)
    retry: RetryConfig = Field(default_factory=RetryConfig)
    result_cache: ResultCacheConfig = Field(default_factory=ResultCacheConfig)
    anomaly: AnomalyConfig = Field(default_factory=AnomalyConfig)
    audit: AuditConfig = Field(default_factory=AuditConfig)
    filters: FiltersConfig = Field(default_factory=FiltersConfig)
    overflow: OverflowConfig = Field(default_factory=OverflowConfig)
    web: WebConfig = Field(default_factory=WebConfig)
    checkpoint: CheckpointConfig = Field(default_factory=CheckpointConfig)
    filter: ToolFilterConfig = Field(default_factory=ToolFilterConfig)
    """Plugin (external) tools: denied unless allow_external (tools/plugins/config.py)."""
    capabilities: CapabilitiesConfig = Field(default_factory=CapabilitiesConfig)
    diagnostics: DiagnosticsConfig = Field(default_factory=DiagnosticsConfig)
    native: NativeConfig = Field(default_factory=NativeConfig)
    """memory_save/memory_search, load_skill, scheduler, compress_context (docs/native-tools.md)."""
    # The gates (tools/gates, docs/gates.md): all off by default.
    utility: UtilityConfig = Field(default_factory=UtilityConfig)
    adversarial_policy: AdversarialPolicyConfig = Field(default_factory=AdversarialPolicyConfig)
    authorization: AuthorizationConfig = Field(default_factory=AuthorizationConfig)
    hallucination: HallucinationConfig = Field(default_factory=HallucinationConfig)
    legacy: LegacyConfig = Field(default_factory=LegacyConfig)

    def rule_entries(self) -> dict[str, list[tuple[str, Literal["allow", "ask", "deny"]]]]:
        """Every rule as (pattern, action), by tool, whichever form the file used."""
        entries: dict[str, list[tuple[str, Literal["allow", "ask", "deny"]]]] = {}
        for tool, value in self.permissions.items():
            if isinstance(value, PermissionTable):
                entries[tool] = [
                    *((p, "allow") for p in value.allow),
                    *((p, "ask") for p in value.ask),
                    *((p, "deny") for p in value.deny),
                ]
            else:
                entries[tool] = [(r.pattern, r.action) for r in value]
        return entries


class ProtocolConfig(Section):
    max_line_bytes: int = Field(DEFAULT_MAX_LINE_BYTES, ge=1024)
    request_timeout: float = Field(30.0, gt=0)
    linger_us: int = Field(100, ge=0, le=10_000)
    """After writing to the editor, keep polling this long before sleeping (0: never)."""


class ServeConfig(Section):
    """`acpd serve` (issue 12): `remote = "auto"` makes every `acpd serve` a forwarder to the
    user's shared daemon, as `--remote=auto` does (`--remote=off` overrides it)."""

    remote: Literal["off", "auto"] = "off"


class DaemonConfig(Section):
    """The shared daemon (`acpd daemon`, acpd/remote)."""

    idle_exit: float = Field(300.0, ge=0)
    """Seconds with no connection and no running turn before the daemon exits (0: never)."""
    detach_grace: float | None = Field(None, ge=0)
    """Seconds a turn goes on after its editor window went away before it is cancelled.
    None: it goes on until it needs the editor (a permission prompt, an editor file or
    terminal call), then pauses until a window re-attaches."""


class Config(Section):
    agent: AgentConfig = Field(default_factory=AgentConfig)
    providers: ProvidersConfig = Field(default_factory=ProvidersConfig)
    tools: ToolsConfig = Field(default_factory=ToolsConfig)
    protocol: ProtocolConfig = Field(default_factory=ProtocolConfig)
    mcp: McpConfig = Field(default_factory=McpConfig)
    serve: ServeConfig = Field(default_factory=ServeConfig)
    daemon: DaemonConfig = Field(default_factory=DaemonConfig)
    source: str | None = Field(None, exclude=True)


def default_config_path() -> Path:
    import platformdirs

    return Path(platformdirs.user_config_dir("acpd")) / "config.toml"


def default_data_dir() -> Path:
    import platformdirs

    return Path(platformdirs.user_data_dir("acpd"))


def config_path(explicit: str | None) -> Path:
    return Path(explicit or os.environ.get("ACPD_CONFIG") or default_config_path())


def load_config(explicit: str | None = None, overrides: dict[str, Any] | None = None) -> Config:
    """Load, validate and override; raises ConfigError with the file and the field at fault."""
    path = config_path(explicit)
    data: dict[str, Any] = {}
    source: str | None = None
    if path.exists() or explicit:
        data = _read_toml(path)
        source = str(path)
    env_iterations = os.environ.get("ACPD_MAX_TOOL_ITERATIONS")
    if env_iterations:
        data.setdefault("agent", {})["max_tool_iterations"] = env_iterations
    for dotted, value in (overrides or {}).items():
        if value is not None:
            section, key = dotted.split(".")
            data.setdefault(section, {})[key] = value
    try:
        config = Config.model_validate(data)
    except ValidationError as exc:
        raise ConfigError(_describe(source or "configuration", exc)) from None
    config.source = source
    return config


def _read_toml(path: Path) -> dict[str, Any]:
    try:
        if path.stat().st_size > MAX_CONFIG_BYTES:
            raise ConfigError(f"{path}: larger than {MAX_CONFIG_BYTES} bytes")
        with path.open("rb") as handle:
            return tomllib.load(handle)
    except OSError as exc:
        raise ConfigError(f"{path}: {exc.strerror or exc}") from None
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
        raise ConfigError(f"{path}: not valid TOML ({exc})") from None


def _describe(source: str, exc: ValidationError) -> str:
    problems = [
        f"{'.'.join(str(p) for p in err['loc'])}: {err['msg']}"
        for err in exc.errors(include_url=False, include_input=False)
    ]
    return f"{source}: " + "; ".join(problems)
