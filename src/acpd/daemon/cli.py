"""The `acpd` command line. Imports stay inside the subcommands: `serve` must start fast."""

from __future__ import annotations

import argparse
import logging
import os
import sys

import acpd


def build_parser() -> argparse.ArgumentParser:
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

    demo = sub.add_parser("demo", help="run a scripted session against acpd serve and show it")
    demo.add_argument("--script", help="scripted session JSON (default: the bundled demo)")
    demo.add_argument("--workspace", help="directory to work in (default: a fresh temp dir)")
    demo.add_argument(
        "--no-terminal", action="store_true",
        help="client offers no terminal/*, so acpd runs bash locally",
    )

    doctor = sub.add_parser("doctor", help="show config, data dir, providers and capabilities")
    _common(doctor)
    return parser


def _common(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--config", help="config file (default: $ACPD_CONFIG or the user's)")
    parser.add_argument("--data-dir", help="where sessions are stored")
    parser.add_argument("--model", help="openai:NAME, anthropic:NAME or scripted:PATH")
    parser.add_argument(
        "--log-level", default=os.environ.get("ACPD_LOG", "WARNING"),
        help="stderr log level (default WARNING, or $ACPD_LOG)",
    )


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    if args.command == "serve":
        return serve(args)
    if args.command == "demo":
        from acpd.daemon.demo import run_demo

        return run_demo(args.script, args.workspace, terminal=not args.no_terminal)
    if args.command == "doctor":
        from acpd.daemon.doctor import run_doctor

        return run_doctor(args.config, args.data_dir, args.model)
    build_parser().print_help()
    return 2


def serve(args: argparse.Namespace) -> int:
    from acpd.daemon.stdio import reserve_stdio

    fds = reserve_stdio()
    logging.basicConfig(
        stream=sys.stderr,
        level=getattr(logging, str(args.log_level).upper(), logging.WARNING),
        format="acpd %(levelname)s %(name)s: %(message)s",
    )
    if args.max_line_bytes is not None and args.max_line_bytes < 1024:
        print("acpd: --max-line-bytes must be at least 1024", file=sys.stderr)
        return 2
    import anyio

    from acpd.daemon.agent import ServeOptions
    from acpd.daemon.server import serve_stdio

    options = ServeOptions(args.config, args.data_dir, args.model, args.max_line_bytes)
    anyio.run(serve_stdio, fds, options)
    return 0
