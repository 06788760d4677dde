"""The `acpd` command line. Imports stay inside the subcommands: `serve` must start fast."""

from __future__ import annotations

import argparse
import os
import sys

import acpd


def build_parser(*, serve_only: bool = False) -> argparse.ArgumentParser:
    """The whole command line; `serve_only` leaves out the subcommands that live in other
    modules (their imports cost `acpd serve` tens of milliseconds before the editor's
    first answer)."""
    parser = argparse.ArgumentParser(
        prog="acpd", description="An Agent Client Protocol agent for your editor."
    )
    parser.add_argument("--version", action="version", version=f"acpd {acpd.__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")

    serve = sub.add_parser("serve", help="speak ACP on stdin/stdout (what an editor runs)")
    _common(serve)
    serve.add_argument(
        "--max-line-bytes", type=int, default=None,
        help="largest message accepted, in bytes (default 64 MiB)",
    )
    serve.add_argument(
        "--remote", choices=("auto", "off"), default=None,
        help="auto: forward to the user's shared daemon, starting it if needed "
             "(default: the config's [serve] remote, else off)",
    )

    lsp = sub.add_parser("lsp", help="speak LSP on stdin/stdout (for LSP-only clients)")
    _common(lsp)
    lsp.add_argument("--mode", choices=MODES, help="session mode (default: the config's)")

    demo = sub.add_parser("demo", help="run a scripted session against acpd serve and show it")
    demo.add_argument("--script", help="scripted session JSON (default: the bundled demo)")
    demo.add_argument("--workspace", help="directory to work in (default: a fresh temp dir)")
    demo.add_argument(
        "--no-terminal", action="store_true",
        help="client offers no terminal/*, so acpd runs bash locally",
    )

    doctor = sub.add_parser("doctor", help="show config, data dir, providers and capabilities")
    _common(doctor)

    tools = sub.add_parser("tools", help="list, describe or run the tools")
    tools_sub = tools.add_subparsers(dest="tools_command", metavar="ACTION", required=True)
    listing = tools_sub.add_parser("list", help="every tool, its executor and effect")
    _paths(listing)
    listing.add_argument("--mode", choices=MODES, help="session mode (default: the config's)")
    describe = tools_sub.add_parser("describe", help="a tool's schema, effect and verdict")
    _paths(describe)
    describe.add_argument("tool", help="name or namespaced id")
    describe.add_argument("--mode", choices=MODES, help="session mode (default: the config's)")
    describe.add_argument("--cwd", help="workspace the verdict is for (default: here)")
    run = tools_sub.add_parser("run", help="run one tool call through the runner")
    _paths(run)
    run.add_argument("tool", help="name or namespaced id")
    run.add_argument("--args", default="{}", help="the arguments as a JSON object")
    run.add_argument("--cwd", help="workspace (default: the current directory)")
    run.add_argument("--mode", choices=MODES, help="session mode (default: the config's)")

    audit = sub.add_parser("audit", help="read the tool audit log")
    audit_sub = audit.add_subparsers(dest="audit_command", metavar="ACTION", required=True)
    tail = audit_sub.add_parser("tail", help="the last lines of audit.jsonl")
    _paths(tail)
    tail.add_argument("-n", "--lines", type=int, default=20, help="how many (default 20)")
    tail.add_argument("--follow", "-f", action="store_true", help="keep printing new lines")

    if serve_only:
        return parser
    from acpd.daemon.sandbox_cli import register as register_sandbox
    from acpd.daemon.undo_cli import register as register_undo
    from acpd.policy.cli_args import register as register_policy

    register_undo(sub)
    register_policy(sub)
    register_sandbox(sub)
    from acpd.remote.cli import register as register_remote

    register_remote(sub)
    return parser


MODES = ("read-only", "ask", "auto")


def _paths(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--config", help="config file (default: $ACPD_CONFIG or the user's)")
    parser.add_argument("--data-dir", help="where sessions, approvals and the audit log are")


def _common(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--config", help="config file (default: $ACPD_CONFIG or the user's)")
    parser.add_argument("--data-dir", help="where sessions are stored")
    parser.add_argument("--model", help="openai:NAME, anthropic:NAME or scripted:PATH")
    parser.add_argument(
        "--log-level", default=os.environ.get("ACPD_LOG", "WARNING"),
        help="stderr log level (default WARNING, or $ACPD_LOG)",
    )


def main(argv: list[str] | None = None) -> int:
    words = sys.argv[1:] if argv is None else argv
    if words[:2] == ["sandbox", "exec"] and len(words) > 2:
        # The editor-terminal launcher: no parser, no other imports (it starts per command).
        from acpd.sandbox.launch import exec_main

        return exec_main(words[2:])
    args = build_parser(serve_only=words[:1] == ["serve"]).parse_args(argv)
    if args.command == "serve":
        return serve(args)
    try:
        return _run_command(args)
    except BrokenPipeError:
        # `acpd policy explain | head`: the reader left; say nothing more, like other tools.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 1


def _run_command(args: argparse.Namespace) -> int:
    if args.command == "lsp":
        from acpd.lsp.server import run as run_lsp

        return run_lsp(args)
    if args.command == "demo":
        from acpd.daemon.demo import run_demo

        return run_demo(args.script, args.workspace, terminal=not args.no_terminal)
    if args.command == "doctor":
        from acpd.daemon.doctor import run_doctor

        return run_doctor(args.config, args.data_dir, args.model)
    if args.command == "policy":
        from acpd.policy.cli import run as run_policy

        return run_policy(args)
    if args.command == "undo":
        from acpd.daemon.undo_cli import run as run_undo

        return run_undo(args)
    if args.command == "sandbox":
        from acpd.daemon.sandbox_cli import run as run_sandbox

        return run_sandbox(args)
    if args.command in ("daemon", "ps", "attach"):
        from acpd.remote.cli import run as run_remote

        return run_remote(args)
    if args.command in ("tools", "audit"):
        from acpd.daemon.tools_cli import run_cli

        return run_cli(args)
    build_parser().print_help()
    return 2


def serve(args: argparse.Namespace) -> int:
    if args.max_line_bytes is not None and args.max_line_bytes < 1024:
        print("acpd: --max-line-bytes must be at least 1024", file=sys.stderr)
        return 2
    if args.remote == "auto" or (args.remote is None and _remote_by_config(args.config)):
        from acpd.remote.forward import run_forwarder

        return run_forwarder(args)  # imports the handshake only when it must answer
    from acpd.daemon.handshake import answer_first_initialize
    from acpd.daemon.protocolfds import reserve_stdio

    fds = reserve_stdio()
    from acpd.sandbox.status import prewarm

    prewarm()  # the sandbox probe runs while the editor's first line is on its way
    # The editor waits for this answer; everything else (anyio, asyncio, pydantic, the
    # config, the store) loads after it is on the wire.
    from acpd.daemon.image_models import image_capability

    early = answer_first_initialize(fds, image=image_capability(args.config, args.model))
    if early.eof and not early.leftover:
        return 0
    import logging

    logging.basicConfig(
        stream=sys.stderr,
        level=getattr(logging, str(args.log_level).upper(), logging.WARNING),
        format="acpd %(levelname)s %(name)s: %(message)s",
    )
    import anyio

    from acpd.daemon.agent import ServeOptions
    from acpd.daemon.lean import skip_pydantic_plugins
    from acpd.daemon.server import serve_stdio

    skip_pydantic_plugins()  # before pydantic loads (with the runtime, right after this)

    options = ServeOptions(args.config, args.data_dir, args.model, args.max_line_bytes)
    backend = loop_options()
    logging.getLogger("acpd").info(
        "serving on %s", "uvloop" if backend.get("use_uvloop") else "the asyncio loop"
    )
    anyio.run(serve_stdio, fds, options, early, backend_options=backend)
    return 0


def _remote_by_config(config: str | None) -> bool:
    from acpd.remote.settings import serve_remote

    return serve_remote(config) == "auto"


def loop_options() -> dict[str, bool]:
    """uvloop where it is installed (a dependency on Linux and macOS): it halves the loop's
    own cost per message. ACPD_LOOP=asyncio picks the standard library's loop."""
    if os.environ.get("ACPD_LOOP", "").lower() == "asyncio":
        return {}
    try:
        import uvloop  # noqa: F401
    except ImportError:
        return {}
    return {"use_uvloop": True}
