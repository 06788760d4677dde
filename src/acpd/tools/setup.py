"""Building the runner from the configuration: one place, for the daemon and the CLI alike."""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING

from acpd.tools.anomaly import AnomalySettings
from acpd.tools.approvals import ApprovalBook
from acpd.tools.audit import AuditLog
from acpd.tools.builtin import core_sources
from acpd.tools.filters import FilterSettings, load_filter_set
from acpd.tools.fs.hidden import HiddenFiles
from acpd.tools.fs.pathguard import PathSource
from acpd.tools.gates.hub import build_gates
from acpd.tools.output import OutputStage
from acpd.tools.outputreload import OutputReloader, SettingsLoader
from acpd.tools.overflow import OverflowSettings
from acpd.tools.permissions import ToolPolicy
from acpd.tools.pipeline import ToolPipeline
from acpd.tools.plugins.catalog import PluginSettings
from acpd.tools.plugins.live import PluginTools
from acpd.tools.registry import ToolSource
from acpd.tools.retry import RetryPolicy
from acpd.tools.rules import RuleSet
from acpd.tools.rulesreload import RulesReloader, rules_loader
from acpd.tools.shellpolicy import ShellPolicies, ShellPolicySettings
from acpd.tools.state import SessionToolSettings

if TYPE_CHECKING:
    from acpd.checkpoint import Checkpoints
    from acpd.daemon.config import ToolsConfig
    from acpd.tools.native.kit import NativeTools

log = logging.getLogger("acpd.tools")

AUDIT_FILE = "audit.jsonl"
APPROVALS_DIR = "approvals"


@dataclass(slots=True)
class Toolkit:
    pipeline: ToolPipeline
    settings: SessionToolSettings
    approvals: ApprovalBook
    reloader: OutputReloader | None = None
    """Rebuilds `pipeline.output` when config.toml or filters.toml changes; its watcher runs
    with the shell policy's (started by `pipeline.shell.attach`)."""
    plugins: PluginTools | None = None
    """The plugin tools found (errors, warnings, refusals) and their hot reload."""
    native: NativeTools | None = None
    """memory, skills, scheduler, compress_context: their stores and live sessions."""


def build_toolkit(
    tools: ToolsConfig, data_dir: Path | None, *, config_dir: Path | None = None,
    config_file: Path | None = None, reload_tools: Callable[[], ToolsConfig] | None = None,
) -> Toolkit:
    """Registry, policy, audit log, retry policy, output stage and per-session settings.
    `config_file` (the daemon's config.toml, which need not exist) is watched, with the
    filters.toml in `config_dir`, for the output filters' hot reload; `reload_tools` reads
    its `[tools]` again (raising ConfigError when it cannot be used).

    Raises RegistrationError for a bad executor order or tool. An audit log that cannot be
    opened refuses every tool call, saying why (a daemon that cannot audit runs no tools).
    """
    sh = tools.shell
    shell = ShellPolicies(ShellPolicySettings(
        Path(sh.policy_file) if sh.policy_file else None, sh.trust,
        tuple(sh.trusted_workspaces), tuple(sh.plugin_paths()),
    ))
    # The file tools judge paths with the shell's path rules and the permission rules, both
    # as they are at each call (the rules are bound to the pipeline once it exists).
    paths = PathSource(shell)
    files = replace(tools.file.tools_config(), paths=paths)
    native = build_native(tools, data_dir)
    core = [*core_sources(files, tools.web.fetch_settings(), tools.diagnostics), native.source()]
    plugins = PluginTools(plugin_settings(tools, core), shell, core, tools.executor_order)
    registry = plugins.registry()
    policy = ToolPolicy(enabled_with_plugins(tools.enabled), RuleSet(tools.rule_entries()))
    audit = None
    if data_dir is not None and tools.audit.enabled:
        audit = AuditLog(data_dir / AUDIT_FILE, fsync=tools.audit.fsync,
                         max_bytes=tools.audit.max_bytes, keep=tools.audit.keep)
    r = tools.retry
    retry = RetryPolicy(r.max_attempts, r.base_ms, r.max_ms, r.budget_secs)
    a = tools.anomaly
    settings = SessionToolSettings(
        tools.max_tool_calls_per_session,
        tools.result_cache.enabled,
        tools.result_cache.ttl_secs or None,
        AnomalySettings(a.enabled, a.window_size, a.failure_threshold, a.min_calls, a.auto_block),
    )
    book = ApprovalBook(data_dir / APPROVALS_DIR if data_dir is not None else None)
    output = build_output_stage(tools, config_dir)
    checkpoints = build_checkpoints(tools, data_dir)
    if data_dir is not None:  # the kernel sandbox hides acpd's own data from commands
        from acpd.daemon.confine import keep_private

        keep_private(data_dir)
    if checkpoints is not None:  # a card never diffs what the read tool would refuse
        checkpoints.hidden = HiddenFiles(files).at
    pipeline = ToolPipeline(registry, policy, audit, retry, shell, output=output,
                            checkpoints=checkpoints)
    paths.tool_rules = lambda: pipeline.policy.rules
    pipeline.gates = build_gates(tools)  # tools/gates: off unless configured
    reloader = None
    if config_dir is not None or config_file is not None:
        reloader = OutputReloader(
            pipeline, filter_settings(tools), config_dir=config_dir, config_file=config_file,
            load_settings=_settings_loader(reload_tools) if reload_tools is not None else None,
        )
        shell.add_watcher(reloader.watch)
    if plugins.settings.dirs:
        shell.add_watcher(lambda stop: plugins.watch(pipeline, stop))
    if config_file is not None and reload_tools is not None:
        rules = RulesReloader(pipeline, config_file, rules_loader(reload_tools), shell)
        shell.add_watcher(rules.watch)
    shell.add_watcher(native.watch)  # the scheduler's delivery (runs only in the daemon)
    return Toolkit(pipeline, settings, book, reloader, plugins, native)


def build_native(tools: ToolsConfig, data_dir: Path | None) -> NativeTools:
    """`[tools.native]`: stores under the data dir, skills from the config and user dirs."""
    import platformdirs

    from acpd.tools.native.kit import NativeTools

    user = Path(platformdirs.user_config_dir("acpd"))
    return NativeTools(tools.native, data_dir, user)


def plugin_settings(tools: ToolsConfig, core: list[ToolSource]) -> PluginSettings:
    """The plugin folders (the shell policy's plugin directories), the filter and presets."""
    builtin = frozenset(n for src in core for s in src.specs for n in (s.id, s.name))
    return PluginSettings(tuple(tools.shell.plugin_paths()), tools.filter, tools.capabilities,
                          builtin)


def enabled_with_plugins(enabled: list[str]) -> list[str]:
    """`[tools] enabled` plus every plugin tool, unless the list names plugin tools itself:
    the external filter and the capability preset decide which plugin tools exist at all."""
    if any(p.startswith("plugin__") for p in enabled):
        return list(enabled)
    return [*enabled, "plugin__*"]


def build_checkpoints(tools: ToolsConfig, data_dir: Path | None) -> Checkpoints | None:
    """`[tools.checkpoint]`: stores under the data dir (none without one)."""
    c = tools.checkpoint
    if data_dir is None or not c.enabled:
        return None
    from acpd.checkpoint import CardLimits, Checkpoints, CheckpointSettings, Limits

    return Checkpoints(data_dir, CheckpointSettings(
        True, Limits(c.max_file_bytes, c.max_total_bytes, c.max_entries, c.max_read_seconds),
        CardLimits(c.max_diffs, c.max_diff_bytes),
    ))


def filter_settings(tools: ToolsConfig) -> FilterSettings:
    f = tools.filters
    return FilterSettings(
        enabled=f.enabled, filters_path=f.filters_path, disabled=frozenset(f.disabled),
        security_enabled=f.security.enabled, extra_patterns=tuple(f.security.extra_patterns),
    )


def overflow_settings(tools: ToolsConfig) -> OverflowSettings:
    o = tools.overflow
    return OverflowSettings(o.threshold, o.max_overflow_bytes, o.retention_days)


def build_output_stage(tools: ToolsConfig, config_dir: Path | None) -> OutputStage:
    """`[tools.filters]` and `[tools.overflow]`; a user filters.toml is `filters_path`, else
    filters.toml beside the config file. Never raises: problems are in `.warnings`."""
    filters = load_filter_set(
        filter_settings(tools), config_dir=str(config_dir) if config_dir else None
    )
    return OutputStage(filters, overflow_settings(tools))


def _settings_loader(reload_tools: Callable[[], ToolsConfig]) -> SettingsLoader:
    def load() -> tuple[FilterSettings, OverflowSettings]:
        tools = reload_tools()
        return filter_settings(tools), overflow_settings(tools)

    return load
