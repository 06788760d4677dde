"""`acpd doctor`: what acpd sees (config, data dir, model, libraries) and a live self-check.

Exit code 0 when healthy, 1 when something is broken: a config that does not load, a model
whose provider cannot be built, a data dir that cannot be used, or a daemon that does not
answer. Key values are never printed, only whether their environment variable is set.
"""

from __future__ import annotations

import os
import platform
import sqlite3
import sys
import tempfile
import time
from importlib import metadata
from pathlib import Path
from typing import TYPE_CHECKING, Any

import anyio
from rich.console import Console
from rich.rule import Rule
from rich.table import Table
from rich.text import Text

import acpd

if TYPE_CHECKING:
    from acpd.daemon.config import Config

LIBRARIES = ("anyio", "pydantic", "orjson", "platformdirs", "httpx", "rich")
SELF_CHECK_TIMEOUT = 20.0


class Report:
    """Prints one line per check and counts the failures."""

    def __init__(self, console: Console) -> None:
        self.console = console
        self.failures: list[str] = []

    def section(self, title: str) -> None:
        self.console.print(Rule(title, align="left"))

    def ok(self, what: str, detail: str) -> None:
        self._line("ok", "green", what, detail)

    def info(self, what: str, detail: str) -> None:
        self._line("--", "dim", what, detail)

    def warn(self, what: str, detail: str) -> None:
        self._line("warn", "yellow", what, detail)

    def fail(self, what: str, detail: str) -> None:
        self.failures.append(f"{what}: {detail}")
        self._line("FAIL", "bold red", what, detail)

    def _line(self, mark: str, style: str, what: str, detail: str) -> None:
        self.console.print(
            Text.assemble((f"  {mark:<5}", style), (f"{what:<12}", "bold"), detail),
            soft_wrap=True,
        )


def run_doctor(config: str | None, data_dir: str | None, model: str | None) -> int:
    console = Console(highlight=False)
    report = Report(console)
    console.print(Text(f"acpd doctor · acpd {acpd.__version__}", style="bold"))
    report.section("configuration")
    loaded = check_config(report, config, model)
    check_data_dir(report, data_dir)
    check_audit_log(report, data_dir)
    report.section("model")
    check_model(report, loaded, model)
    report.section("runtime")
    check_versions(report)
    check_sandbox(report)
    report.section("live self-check")
    anyio.run(self_check, report, config, model)
    explain_capabilities(console)
    console.print()
    if report.failures:
        console.print(Text(f"{len(report.failures)} problem(s) found:", style="bold red"))
        for failure in report.failures:
            console.print(f"  - {failure}", soft_wrap=True)
        return 1
    console.print(Text("healthy: acpd is ready for an editor.", style="bold green"))
    return 0


def check_config(report: Report, explicit: str | None, model: str | None) -> Config | None:
    from acpd.daemon.config import config_path, load_config
    from acpd.daemon.errors import ConfigError

    path = config_path(explicit)
    origin = "--config" if explicit else "$ACPD_CONFIG" if os.environ.get("ACPD_CONFIG") else (
        "default location"
    )
    try:
        loaded = load_config(explicit, {"agent.model": model})
    except ConfigError as exc:
        report.fail("config", f"{path} ({origin}) does not load: {exc}")
        return None
    if loaded.source is None:
        report.ok("config", f"{path} ({origin}) does not exist: using the defaults")
    else:
        report.ok("config", f"{path} ({origin}) loads")
    return loaded


def check_data_dir(report: Report, explicit: str | None) -> None:
    from acpd.daemon.config import default_data_dir
    from acpd.daemon.store import data_dir_problem

    directory = Path(explicit) if explicit else default_data_dir()
    database = directory / "sessions.sqlite3"
    problem = data_dir_problem(directory)
    if problem is not None:
        # What `acpd serve` does then: sessions in memory only, tool calls refused.
        report.fail("data dir", f"cannot use {directory}: {problem} (acpd would keep sessions "
                    "in memory only and refuse tool calls it cannot audit)")
        return
    if not directory.exists():
        report.ok("data dir", f"{directory} does not exist yet (created on first session)")
        return
    if not database.exists():
        report.ok("data dir", f"{directory} (no sessions stored yet)")
        return
    try:
        # Read-only: the doctor must not create, migrate or lock anything.
        with sqlite3.connect(f"{database.as_uri()}?mode=ro", uri=True) as db:
            (count,) = db.execute("SELECT count(*) FROM sessions").fetchone()
    except sqlite3.Error as exc:
        report.fail("data dir", f"{database} cannot be read: {exc}")
        return
    report.ok("data dir", f"{directory} holds {count} session(s)")


def check_audit_log(report: Report, explicit: str | None) -> None:
    from acpd.daemon.config import default_data_dir
    from acpd.tools.audit import inspect
    from acpd.tools.setup import AUDIT_FILE

    directory = Path(explicit) if explicit else default_data_dir()
    try:
        health = inspect(directory / AUDIT_FILE)
    except OSError as exc:
        report.fail("audit log", f"{directory / AUDIT_FILE} cannot be read: {exc}")
        return
    if health.torn:
        # Not a failure: acpd keeps the fragment and starts the next record on a new line.
        report.warn("audit log", health.describe())
    elif health.exists:
        report.ok("audit log", health.describe())


def check_model(report: Report, loaded: Config | None, explicit: str | None) -> None:
    from acpd.providers.factory import DEFAULT_KEY_ENV, ProviderSpecError, make_provider, parse_spec

    if loaded is None:
        spec = explicit
        if spec is None:
            report.info("model", "unknown: the config does not load")
            return
    else:
        spec = loaded.agent.model
    source = "--model" if explicit else "config agent.model"
    if spec is None:
        report.ok("model", "none: direct mode (prompts like `/bash ls` run tools; set "
                           "agent.model or --model to talk to a model)")
        return
    try:
        kind, name = parse_spec(spec)
    except ProviderSpecError as exc:
        report.fail("model", str(exc))
        return
    report.info("model", f"{spec} (from {source})")
    if kind in DEFAULT_KEY_ENV:
        settings = getattr(loaded.providers, kind) if loaded is not None else None
        key_env = (settings.api_key_env if settings else None) or DEFAULT_KEY_ENV[kind]
        if os.environ.get(key_env):
            report.ok("api key", f"${key_env} is set")
        elif kind == "openai":
            report.warn("api key", f"${key_env} is not set (fine for a local endpoint such "
                                   "as Ollama or llama.cpp)")
        else:
            report.warn("api key", f"${key_env} is not set")
        if settings is not None and settings.base_url:
            report.info("endpoint", settings.base_url)
    if loaded is None:
        return
    try:
        provider = make_provider(spec, loaded)
    except Exception as exc:  # whatever the provider raises is the diagnosis
        report.fail("provider", f"{kind} provider cannot be built: {type(exc).__name__}: {exc}")
        return
    window = getattr(provider, "context_window", None)
    report.ok("provider", f"{kind} provider builds for {name}"
                          + (f" (context window {window} tokens)" if window else ""))


def check_versions(report: Report) -> None:
    report.info("python", f"{platform.python_version()} ({sys.executable})")
    report.info("platform", platform.platform())
    versions = []
    for name in LIBRARIES:
        try:
            versions.append(f"{name} {metadata.version(name)}")
        except metadata.PackageNotFoundError:
            report.fail("library", f"{name} is not installed (acpd depends on it)")
    report.info("libraries", ", ".join(versions))
    from acpd.daemon.cli import loop_options

    loop = "uvloop" if loop_options().get("use_uvloop") else "asyncio (standard library)"
    report.info("event loop", loop)
    from acpd.policy import _native

    report.info("judge", "policy judge compiled (mypyc, built for these sources)"
                if _native.compiled()
                else "policy judge in pure Python (scripts/build_native.py compiles it: "
                "decisions about twice as fast)")
    from acpd.checkpoint import statdir

    report.info("checkpoints", "directories listed in C (statdir.c, built for this source)"
                if statdir.native_listing() is not None
                else "directories listed in Python (scripts/build_native.py builds the C "
                "listing: full scans about a third faster)")


def check_sandbox(report: Report) -> None:
    """Whether bash commands run in the kernel sandbox here (a warning, not a failure: acpd
    still works, and every bash card says it ran unconfined)."""
    from acpd.sandbox.landlock import landlock_abi
    from acpd.sandbox.status import sandbox_status

    status = sandbox_status()
    if status.available:
        report.ok("sandbox", f"{status.kind}: {status.reason} ({status.binary})")
    else:
        report.warn("sandbox", f"NONE: {status.reason}; bash commands run unconfined")
    if status.available and status.kind == "bwrap":
        from acpd.sandbox import relaybin

        client = relaybin.client()
        report.info("editor path", f"relay client {client} (commands in the editor's "
                    "terminal start in the sandbox parent)" if client is not None else
                    "sh launcher: bubblewrap per command in the editor's terminal (about "
                    "4 ms more each; scripts/build_native.py builds the relay client)")
    report.info("landlock", f"ABI {landlock_abi()} (not used: see docs/sandbox.md)")


async def self_check(report: Report, config: str | None, model: str | None) -> None:
    """Spawn `acpd serve` as an editor would, time `initialize`, then open a session (which
    loads config, store and tools) in a throwaway data dir and workspace."""
    from acpd.daemon.demo_client import AcpClient, AgentError, AgentExited

    with tempfile.TemporaryDirectory(prefix="acpd-doctor-") as temp:
        argv = [sys.executable, "-m", "acpd", "serve", "--data-dir", str(Path(temp) / "data")]
        argv += ["--config", config] if config else []
        argv += ["--model", model] if model else []
        report.info("spawn", "acpd serve (sessions go to a throwaway data dir)")
        started = time.perf_counter()
        async with AcpClient.start(argv, temp) as client:
            try:
                with anyio.fail_after(SELF_CHECK_TIMEOUT):
                    info = await client.initialize()
                    report.ok("initialize", f"answered in {_ms(started)}, protocol version "
                                            f"{info.get('protocolVersion')}")
                    describe_agent(report, info.get("agentCapabilities") or {})
                    started = time.perf_counter()
                    await client.new_session(temp)
                    report.ok("session/new", f"answered in {_ms(started)} (config, store and "
                                             "tools load in the daemon)")
            except (AgentError, AgentExited, TimeoutError, OSError) as exc:
                detail = f"the daemon did not answer within {SELF_CHECK_TIMEOUT:g} s" if (
                    isinstance(exc, TimeoutError)) else str(exc)
                report.fail("self-check", detail)
                failed = True
            else:
                failed = False
        stderr = client.stderr_text().strip()
        if failed and stderr:
            for line in stderr.splitlines()[-10:]:
                report.info("stderr", line)


def describe_agent(report: Report, caps: dict[str, Any]) -> None:
    """What the daemon's `initialize` answer states, said plainly: only what it states."""
    prompt = caps.get("promptCapabilities") or {}
    content = [k for k in ("image", "audio", "embeddedContext") if prompt.get(k)]
    sessions = sorted((caps.get("sessionCapabilities") or {}).keys())
    report.info("agent caps", f"loadSession={bool(caps.get('loadSession'))}; prompt content: "
                              f"text, resource_link{''.join(', ' + c for c in content)}; "
                              f"sessions: {', '.join(['new', 'prompt', *sessions])}")
    report.info("MCP", mcp_statement(caps.get("mcpCapabilities") or {}))


def mcp_statement(mcp: dict[str, Any]) -> str:
    """The MCP transports the daemon takes from the editor (stdio has no capability flag:
    it is always taken; see docs/mcp.md)."""
    extra = [k for k, v in mcp.items() if v]
    return f"servers the editor passes are used over stdio{''.join(', ' + k for k in extra)}"


def explain_capabilities(console: Console) -> None:
    console.print(Rule("editor capabilities", align="left"))
    console.print(
        "Editor capabilities are negotiated per connection: each editor says in `initialize` "
        "what it offers, and acpd adapts for that connection only. The same path sandbox, "
        "shell policy and permission prompts apply on both sides.",
        soft_wrap=True,
    )
    table = Table(show_edge=False, pad_edge=False)
    table.add_column("capability")
    table.add_column("editor offers it")
    table.add_column("editor does not (fallback)")
    table.add_row("fs.readTextFile", "read through the editor: unsaved buffers count",
                  "local file read from disk")
    table.add_row("fs.writeTextFile", "written through the editor (undo, open buffers)",
                  "local atomic write (temp file + rename)")
    table.add_row("terminal", "bash runs in the editor's terminal, embedded in the tool card",
                  "local bash in its own process group; output streamed into the card; "
                  "timeout/cancel kill the group (TERM, then KILL)")
    console.print(table)
    console.print(
        "Zed offers fs and terminal; Neovim's CodeCompanion and avante offer fs only; "
        "`acpd demo --no-terminal` shows the local fallback.",
        soft_wrap=True,
    )


def _ms(started: float) -> str:
    return f"{(time.perf_counter() - started) * 1000:.0f} ms"
