"""`acpd sandbox run|exec|status`: the kernel sandbox from the command line.

`run [--cwd DIR] [--config FILE] -- CMD...` runs CMD in exactly the sandbox a bash tool call in
DIR gets (the same policy file and plugin overlays as the daemon, the same environment filter;
no policy decision), and exits with CMD's exit code. Where no sandbox is available it says why
on stderr and exits 125 without running anything, unless `--allow-unsandboxed` (then it runs
CMD with a warning): a user who asked for a sandbox must not silently get none.
`exec` is the editor-terminal launcher (sandbox/launch.py; cli.main dispatches to it before
building the parser, for start-up). `status` prints what this machine offers.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

from acpd.sandbox.launch import REFUSED, USAGE, Unconfined, confined_argv


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    sandbox = sub.add_parser("sandbox", help="run a command in the kernel sandbox; status")
    actions = sandbox.add_subparsers(dest="sandbox_command", metavar="ACTION", required=True)
    run = actions.add_parser("run", help="run CMD in the sandbox a bash tool call gets")
    run.add_argument("--cwd", help="workspace (default: the current directory)")
    run.add_argument("--config", help="config file (default: $ACPD_CONFIG or the user's)")
    run.add_argument("--allow-unsandboxed", action="store_true",
                     help="run CMD even where no sandbox is available (with a warning)")
    run.add_argument("--explain", action="store_true",
                     help="print the confinement and the sandbox command line to stderr")
    run.add_argument("cmd", nargs=argparse.REMAINDER, help="-- CMD [ARG...]")
    actions.add_parser("exec", help="the editor-terminal launcher (" + USAGE[7:] + ")")
    status = actions.add_parser("status", help="which sandbox this machine offers")
    status.add_argument("--cwd", help="also build the confinement for this workspace")
    status.add_argument("--config", help="config file (default: $ACPD_CONFIG or the user's)")
    status.add_argument("--json", action="store_true", help="machine-readable output")


def run(args: argparse.Namespace) -> int:
    if args.sandbox_command == "exec":
        print(USAGE, file=sys.stderr)  # reached only when `exec` had no arguments
        return 2
    if args.sandbox_command == "status":
        return show_status(args)
    return run_confined(args)


def _workspace(cwd: str | None) -> str | None:
    workspace = os.path.abspath(cwd or os.getcwd())
    if not os.path.isdir(workspace):
        print(f"acpd: --cwd is not a directory: {workspace}", file=sys.stderr)
        return None
    return workspace


def _rules_and_env(config_path: str | None, workspace: str) -> tuple[object, dict[str, str]]:
    """The policy's path rules for `workspace` and the child environment, as the daemon
    computes them. Raises ValueError when the config or the policy cannot be loaded."""
    from acpd.daemon.config import load_config
    from acpd.daemon.errors import ConfigError
    from acpd.daemon.local import child_env, env_matcher
    from acpd.policy.reload import PolicyHandle
    from acpd.sandbox.rules import PathRules
    from acpd.tools.shellpolicy import ShellPolicies, ShellPolicySettings

    try:
        config = load_config(config_path)
    except (ConfigError, OSError) as exc:
        raise ValueError(str(exc)) from None
    sh = config.tools.shell
    policies = ShellPolicies(ShellPolicySettings(
        Path(sh.policy_file) if sh.policy_file else None, sh.trust,
        tuple(sh.trusted_workspaces), tuple(sh.plugin_paths()),
    ))
    handle = PolicyHandle(policies.settings.policy_file, policies.plugin_dirs_for(workspace))
    for error in handle.last_report.errors:
        print(f"acpd: policy: {error}", file=sys.stderr)
    env = child_env({}, env_matcher(sh.env_blocklist))
    return PathRules.of(handle.current), env


def _not_runnable(program: str, env: dict[str, str], cwd: str) -> tuple[int, str] | None:
    """The shell's exit code and words for a program that cannot run here: 127 not found,
    126 not executable. (The sandbox sees less than this process, never more, so a program
    missing here is missing inside too.)"""
    import shutil

    if "/" in program:
        path = os.path.join(cwd, program)
        if not os.path.lexists(path):
            return 127, "No such file or directory"
        if os.path.isdir(path) or not os.access(path, os.X_OK):
            return 126, "Permission denied" if not os.path.isdir(path) else "Is a directory"
        return None
    if shutil.which(program, path=env.get("PATH", os.defpath)) is None:
        return 127, "command not found"
    return None


def run_confined(args: argparse.Namespace) -> int:
    from acpd.daemon.config import default_data_dir
    from acpd.sandbox.build import build_confinement
    from acpd.sandbox.bwrap import open_pins
    from acpd.sandbox.status import sandbox_status

    command = list(args.cmd)
    if command and command[0] == "--":
        command = command[1:]
    if not command:
        print("usage: acpd sandbox run [--cwd DIR] [--config FILE] -- CMD [ARG...]",
              file=sys.stderr)
        return 2
    workspace = _workspace(args.cwd)
    if workspace is None:
        return 2
    try:
        rules, env = _rules_and_env(args.config, workspace)
        conf = build_confinement((workspace,), rules, cwd=workspace,  # type: ignore[arg-type]
                                 hidden=(str(default_data_dir()),))
    except ValueError as exc:
        print(f"acpd: {exc}", file=sys.stderr)
        return 2
    missing = _not_runnable(command[0], env, workspace)
    if missing is not None:  # bubblewrap would say so with exit code 1: keep the shell's
        print(f"acpd sandbox: {command[0]}: {missing[1]}", file=sys.stderr)
        return missing[0]
    status = sandbox_status()
    pins = open_pins(conf) if status.kind == "bwrap" else {}
    for fd in pins.values():
        os.set_inheritable(fd, True)  # for bubblewrap, which this process becomes
    try:
        argv = confined_argv(conf, command, status, pins)
    except Unconfined as exc:
        if not args.allow_unsandboxed:
            print(f"acpd sandbox: NOT RUN: no sandbox here ({exc}); "
                  "--allow-unsandboxed runs it anyway", file=sys.stderr)
            return REFUSED
        print(f"acpd sandbox: WARNING: running UNSANDBOXED ({exc})", file=sys.stderr)
        argv = command
    if args.explain or not conf.complete:
        for note in conf.notes:
            print(f"acpd sandbox: note: {note}", file=sys.stderr)
    if args.explain:
        print(f"acpd sandbox: {conf.to_json()}", file=sys.stderr)
        print("acpd sandbox: " + " ".join(argv), file=sys.stderr)
    sys.stdout.flush()
    os.chdir(workspace)
    try:
        os.execvpe(argv[0], argv, env)
    except OSError as exc:
        print(f"acpd sandbox: cannot run {argv[0]}: {exc}", file=sys.stderr)
    return REFUSED


def show_status(args: argparse.Namespace) -> int:
    from acpd.sandbox.landlock import landlock_abi
    from acpd.sandbox.status import sandbox_status

    status = sandbox_status()
    info: dict[str, object] = {**status.to_meta(), "binary": status.binary,
                               "landlock_abi": landlock_abi()}
    if args.cwd or args.config:
        workspace = _workspace(args.cwd)
        if workspace is None:
            return 2
        info["workspace"] = _describe(args.config, workspace)
    if args.json:
        print(json.dumps(info, indent=2))
    else:
        for key, value in info.items():
            print(f"{key:<13} {value}")
    return 0 if status.available else 1


def _describe(config: str | None, workspace: str) -> dict[str, object]:
    from acpd.sandbox.build import build_confinement

    try:
        rules, _ = _rules_and_env(config, workspace)
    except ValueError as exc:
        return {"error": str(exc)}
    started = time.perf_counter()
    conf = build_confinement((workspace,), rules, cwd=workspace)  # type: ignore[arg-type]
    return {
        "build_ms": round((time.perf_counter() - started) * 1000, 2), "walked": conf.walked,
        "complete": conf.complete, "masked_files": len(conf.mask_files),
        "masked_dirs": list(conf.mask_dirs), "read_only": list(conf.read_only),
        "git_read_only": list(conf.git_read_only), "stub_files": list(conf.stub_files),
        "pinned": list(conf.pinned), "write_paths": list(conf.write_paths),
        "network": conf.network,
        "notes": list(conf.notes),
    }
