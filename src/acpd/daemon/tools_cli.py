"""`acpd tools list|describe|run` and `acpd audit tail`: the runner from a terminal.

`tools run` goes through the same runner as the editor and the model (policy, approvals,
audit with caller "cli"), with local capabilities: files on disk, bash in a process group.
An "ask" decision is put to the user on stdin when it is a terminal; otherwise the call is
refused (ConfirmationRequired) with a message saying how to allow it.

Exit status: 0 the call succeeded, 1 it failed (or was refused), 2 bad usage.
"""

from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any, TextIO

import orjson

if TYPE_CHECKING:
    from acpd.daemon.config import Config
    from acpd.tools.permissions import PermissionAnswer
    from acpd.tools.setup import Toolkit
    from acpd.tools.shellpolicy import ShellPolicies
    from acpd.tools.spec import ToolCallView

ANSWERS: dict[str, PermissionAnswer] = {
    "y": "allow_once", "yes": "allow_once", "a": "allow_always", "always": "allow_always",
    "n": "reject_once", "no": "reject_once", "never": "reject_always", "": "reject_once",
}


def _load(config_path: str | None, data_dir: str | None) -> tuple[Config, Path, Toolkit]:
    from acpd.daemon.config import default_data_dir, load_config
    from acpd.tools.setup import build_toolkit

    config = load_config(config_path)
    directory = Path(data_dir) if data_dir else default_data_dir()
    return config, directory, build_toolkit(config.tools, directory)


def tools_list(config_path: str | None, data_dir: str | None, mode: str | None) -> int:
    config, _, kit = _load(config_path, data_dir)
    mode = mode or config.agent.default_mode
    shown = {spec.id for _, spec in kit.pipeline.catalog(mode)}
    registry = kit.pipeline.registry
    for spec in registry:
        note = "" if spec.id in shown else "  (not shown in this mode)"
        print(
            f"{registry.name_of(spec):<18} {spec.id:<24} {registry.source_of(spec):<6} "
            f"{spec.effect.value:<21}{note}"
        )
    if kit.plugins is not None:
        from acpd.tools.plugins.live import report_lines

        for line in report_lines(kit.plugins.current):
            print(line, file=sys.stderr)
    return 0


def tools_describe(
    config_path: str | None, data_dir: str | None, name: str, mode: str | None, cwd: str | None
) -> int:
    from acpd.tools.permissions import approval_key

    config, _, kit = _load(config_path, data_dir)
    mode = mode or config.agent.default_mode
    pipeline = kit.pipeline
    spec = pipeline.registry.resolve(name)
    if spec is None:
        refused = pipeline.registry.refused.get(name)
        print(f"acpd: {refused}" if refused else
              f"acpd: no tool named {name!r}; see `acpd tools list`", file=sys.stderr)
        return 2
    workspace = os.path.abspath(cwd or os.getcwd())
    approvals = kit.approvals.for_workspace(workspace)
    decision = pipeline.policy.decide(
        spec, mode, {}, workspace, approvals, approval_key(spec, {})
    )
    rules = pipeline.policy.rules.for_tool(spec)
    description = {
        "id": spec.id,
        "name": pipeline.registry.name_of(spec),
        "executor": pipeline.registry.source_of(spec),
        "description": spec.description,
        "effect": spec.effect.value,
        "kind": spec.kind,
        "enabled": pipeline.policy.is_enabled(spec),
        "shown_to_the_model": pipeline.policy.visible(spec, mode),
        "mode": mode,
        "verdict": {"decision": decision.verdict, "reason": decision.reason},
        "rules": [{"pattern": r.pattern, "action": r.action} for r in rules],
        "policy_hash": pipeline.policy.policy_hash(mode),
        "input_schema": spec.input_schema(),
    }
    if spec.kind == "execute" and pipeline.shell is not None:
        description["shell_policy"] = shell_policy_summary(pipeline.shell, workspace)
    print(json.dumps(description, indent=2))
    return 0


def shell_policy_summary(shell: ShellPolicies, workspace: str) -> dict[str, Any]:
    """What judges each command on top of the verdict above (which has no command to judge)."""
    from acpd.policy.reload import PolicyHandle

    handle = PolicyHandle(shell.settings.policy_file, shell.plugin_dirs_for(workspace))
    report = handle.last_report
    return {
        "trust": shell.trust_for(workspace),
        "policy_hash": report.policy_hash,
        "sources": list(report.sources),
        "errors": list(report.errors),
        "each_command": "judged by the shell policy: `acpd policy check -- COMMAND` shows how",
    }


class TerminalObserver:
    """The CLI's editor: cards are not drawn, questions go to the terminal if there is one."""

    def __init__(self, stdin: TextIO, stderr: TextIO) -> None:
        self.stdin, self.stderr = stdin, stderr

    async def publish(self, view: ToolCallView, *, first: bool) -> None:
        return None

    async def ask(self, view: ToolCallView) -> PermissionAnswer:
        if not self.stdin.isatty():
            return "unavailable"
        import anyio.to_thread

        prompt = (
            f"acpd: allow {view.title!r}? [y]es once, [a]lways, [n]o, never (reject always): "
        )

        def read() -> str:
            self.stderr.write(prompt)
            self.stderr.flush()
            return self.stdin.readline()

        line = await anyio.to_thread.run_sync(read)
        if not line:
            return "cancelled"
        return ANSWERS.get(line.strip().lower(), "reject_once")


def tools_run(
    config_path: str | None, data_dir: str | None, name: str, args_json: str,
    cwd: str | None, mode: str | None,
) -> int:
    import anyio

    from acpd.daemon.local import LocalCommandRunner, LocalFileSystem
    from acpd.tools.pipeline import CallEnv

    try:
        # orjson, as on the wire: it refuses what JSON cannot carry (a lone surrogate such
        # as "\ud800"), which Python's json module would let through to the tools.
        arguments = orjson.loads(args_json)
    except orjson.JSONDecodeError as exc:
        print(f"acpd: --args is not valid JSON: {exc}", file=sys.stderr)
        return 2
    if not isinstance(arguments, dict):
        print("acpd: --args must be a JSON object", file=sys.stderr)
        return 2
    workspace = os.path.abspath(cwd or os.getcwd())
    if not os.path.isdir(workspace):
        print(f"acpd: --cwd is not a directory: {workspace}", file=sys.stderr)
        return 2
    config, _, kit = _load(config_path, data_dir)
    mode = mode or config.agent.default_mode
    shell = config.tools.shell
    env = CallEnv(
        workspace, (workspace,), mode, LocalFileSystem(),
        LocalCommandRunner(rules=_sandbox_rules(kit)),
        TerminalObserver(sys.stdin, sys.stderr), kit.approvals.for_workspace(workspace),
        kit.settings.new_state(), "cli", shell.timeout, shell.output_byte_limit,
    )
    call_id = f"cli_{os.getpid()}_{time.time_ns()}"

    async def main() -> int:
        result = await kit.pipeline.run(call_id, name, arguments, env, caller="cli")
        out = sys.stderr if result.error is not None else sys.stdout
        text = result.text
        print(text, end="" if text.endswith("\n") else "\n", file=out)
        return 1 if result.failed else 0

    try:
        return anyio.run(main)
    finally:
        if kit.pipeline.audit is not None:
            kit.pipeline.audit.close()


def audit_tail(
    config_path: str | None, data_dir: str | None, count: int, follow: bool,
    poll: float = 0.25,
) -> int:
    from acpd.daemon.config import default_data_dir
    from acpd.tools.audit import inspect, tail_lines
    from acpd.tools.setup import AUDIT_FILE

    path = (Path(data_dir) if data_dir else default_data_dir()) / AUDIT_FILE
    health = inspect(path)
    if not health.exists:
        print(f"acpd: no audit log at {path}", file=sys.stderr)
        if not follow:
            return 1
    elif health.torn:
        print(f"acpd: warning: {health.describe()}", file=sys.stderr)
    out = sys.stdout.buffer
    for line in tail_lines(path, count) if health.exists else []:
        out.write(line if line.endswith(b"\n") else line + b"\n")
    out.flush()
    if not follow:
        return 0
    return _follow(path, health.size, poll)


def _follow(path: Path, offset: int, poll: float) -> int:
    pending = b""
    out = sys.stdout.buffer
    try:
        while True:
            try:
                with path.open("rb") as handle:
                    size = os.fstat(handle.fileno()).st_size
                    if size < offset:  # replaced by someone: start over
                        offset = 0
                    handle.seek(offset)
                    chunk = handle.read()
            except FileNotFoundError:
                chunk = b""
            offset += len(chunk)
            pending += chunk
            *whole, pending = pending.split(b"\n")
            for line in whole:
                out.write(line + b"\n")
            if whole:
                out.flush()
            time.sleep(poll)
    except KeyboardInterrupt:
        return 0


def run_cli(args: Any) -> int:
    """Dispatch `acpd tools ...` / `acpd audit ...`; ConfigError and RegistrationError end
    with status 2 and the message."""
    from acpd.daemon.errors import ConfigError
    from acpd.tools.registry import RegistrationError

    try:
        if args.command == "audit":
            return audit_tail(args.config, args.data_dir, args.lines, args.follow)
        if args.tools_command == "list":
            return tools_list(args.config, args.data_dir, args.mode)
        if args.tools_command == "describe":
            return tools_describe(args.config, args.data_dir, args.tool, args.mode, args.cwd)
        if args.tools_command == "run":
            return tools_run(
                args.config, args.data_dir, args.tool, args.args, args.cwd, args.mode
            )
    except (ConfigError, RegistrationError, OSError) as exc:
        print(f"acpd: {exc}", file=sys.stderr)
        return 2
    return 2


def _sandbox_rules(kit: Any) -> Any:
    """The kernel sandbox's rules: the same live policy the decision uses."""
    from acpd.daemon.confine import policy_rules

    shell = kit.pipeline.shell
    return policy_rules(shell) if shell is not None else None
