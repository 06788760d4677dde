"""`acpd ps`, `acpd attach SESSION`, `acpd daemon [stop]`: the shared daemon from a terminal.

Each command talks to every daemon socket of this user's runtime directory (one per
config/data-dir/model choice), through the same checks as the forwarder (remote/paths.py).
A socket nobody answers on is a stale one: it is reported, not an error.
"""

from __future__ import annotations

import itertools
import json
import os
import socket
import sys
import time
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

from acpd.remote.paths import UnsafePath, check_peer, check_socket, daemon_sockets, runtime_dir

if TYPE_CHECKING:
    from argparse import ArgumentParser, Namespace, _SubParsersAction

CALL_TIMEOUT = 10.0
STOP_WAIT = 30.0


def register(sub: _SubParsersAction[ArgumentParser]) -> None:
    daemon = sub.add_parser("daemon", help="run the shared daemon, or stop it (acpd daemon stop)")
    daemon.add_argument("action", nargs="?", choices=("run", "stop"), default="run",
                        help="run (default) or stop every running daemon")
    daemon.add_argument("--name", help=argparse_hidden())
    for flag, text in (("--config", "config file"), ("--data-dir", "where sessions are stored"),
                       ("--model", "openai:NAME, anthropic:NAME or scripted:PATH")):
        daemon.add_argument(flag, help=text)
    daemon.add_argument("--log-level", default=os.environ.get("ACPD_LOG", "WARNING"),
                        help="log level (default WARNING, or $ACPD_LOG)")
    sub.add_parser("ps", help="the shared daemons, their windows and sessions")
    attach = sub.add_parser("attach", help="follow a session of the shared daemon (read-only)")
    attach.add_argument("session", help="session id (see acpd ps)")
    attach.add_argument("--no-follow", action="store_true",
                        help="print what is stored and exit, without waiting for more")


def argparse_hidden() -> str:
    import argparse

    return argparse.SUPPRESS


def run(args: Namespace) -> int:
    try:
        if args.command == "daemon":
            if args.action == "stop":
                return stop()
            from acpd.remote.daemon import run_daemon

            return run_daemon(args)
        if args.command == "ps":
            return ps()
        return attach(args.session, follow=not args.no_follow)
    except UnsafePath as exc:
        print(f"acpd: refusing the shared daemon: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        return 130


class Control:
    """A blocking JSON-RPC client over one daemon socket (initialized on connect)."""

    def __init__(self, path: str) -> None:
        self.path = path
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.sock.settimeout(CALL_TIMEOUT)
        self.sock.connect(path)
        self.pid = check_peer(self.sock)
        self._buffer = b""
        self._ids = 0
        self.notes: list[dict[str, Any]] = []
        self.call("initialize", {"protocolVersion": 1, "clientCapabilities": {},
                                 "clientInfo": {"name": "acpd-cli", "version": "1"}})

    def call(self, method: str, params: Any) -> Any:
        """Raises RuntimeError with the daemon's error, OSError when it goes away."""
        self._ids += 1
        message = {"jsonrpc": "2.0", "id": self._ids, "method": method, "params": params}
        self.sock.sendall(json.dumps(message).encode() + b"\n")
        for reply in self.messages():
            if reply.get("id") == self._ids and "method" not in reply:
                if "error" in reply:
                    raise RuntimeError(str(reply["error"].get("message")))
                return reply.get("result")
            self.notes.append(reply)
        raise ConnectionResetError("the daemon closed the connection")

    def messages(self, *, idle: bool = False) -> Iterator[dict[str, Any]]:
        """The daemon's messages; with `idle`, also an empty dict each time nothing more
        has arrived yet (before waiting)."""
        while True:
            while b"\n" in self._buffer:
                line, self._buffer = self._buffer.split(b"\n", 1)
                try:
                    message = json.loads(line)
                except ValueError:
                    continue
                if isinstance(message, dict):
                    yield message
            if idle:
                yield {}
            data = self.sock.recv(1 << 16)
            if not data:
                return
            self._buffer += data

    def close(self) -> None:
        self.sock.close()


def _controls() -> Iterator[Control | str]:
    """A connected client per live daemon; the path of each socket nobody answers on."""
    for path in daemon_sockets(runtime_dir(create=False)):
        try:
            if not check_socket(path):
                continue
            yield Control(path)
        except (ConnectionRefusedError, FileNotFoundError, TimeoutError):
            yield path


def ps() -> int:
    found = False
    for control in _controls():
        if isinstance(control, str):
            print(f"stale socket (no daemon): {control}")
            continue
        found = True
        try:
            status = control.call("_acpd/ps", {})
        finally:
            control.close()
        _print_status(status)
    if not found:
        print("no acpd daemon is running")
    return 0


def _print_status(status: dict[str, Any]) -> None:
    up = time.time() - float(status.get("started", time.time()))
    print(f"daemon pid {status.get('pid')} · {status.get('socket')} · up {up:.0f} s")
    windows = status.get("windows") or []
    print(f"  windows: {len(windows)}")
    for window in windows:
        print(f"    #{window.get('number')}  editor pid {window.get('peerPid')}  "
              f"{window.get('client') or ''}")
    sessions = status.get("sessions") or []
    print(f"  sessions: {len(sessions)}")
    for row in sessions:
        where = f"window #{row['window']}" if row.get("window") else "no window"
        tools = ", ".join(row.get("running") or []) or "-"
        title = row.get("title") or ""
        print(f"    {row.get('sessionId')}  {row.get('state'):8} {where:12} tool: {tools}  "
              f"{title}  ({row.get('cwd')})")


def stop() -> int:
    stopped = 0
    for control in _controls():
        if isinstance(control, str):
            continue
        try:
            control.call("_acpd/stop", {})
            # The daemon closes the connection once it has stopped.
            control.sock.settimeout(30)
            for _ in control.messages():
                pass
        except OSError:
            pass
        finally:
            control.close()
        if not _wait_gone(control.pid, STOP_WAIT):
            print(f"acpd: the daemon (pid {control.pid}) is still stopping after "
                  f"{STOP_WAIT:g} s", file=sys.stderr)
            return 1
        print(f"stopped the acpd daemon (pid {control.pid})")
        stopped += 1
    if not stopped:
        print("no acpd daemon is running")
    return 0


def _wait_gone(pid: int, within: float) -> bool:
    """Whether the process ended within `within` seconds (a zombie has ended: where no
    init reaps it, a container's, it would otherwise look alive for ever)."""
    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        try:
            with open(f"/proc/{pid}/stat") as handle:
                state = handle.read().rsplit(")", 1)[1].split()[0]
        except (OSError, IndexError):
            return True
        if state in ("Z", "X"):
            return True
        time.sleep(0.02)
    return False


def attach(session_id: str, *, follow: bool) -> int:
    from rich.console import Console
    from rich.text import Text

    from acpd.daemon.demo import SessionView

    console = Console()
    for control in _controls():
        if isinstance(control, str):
            continue
        try:
            reply = control.call("_acpd/attach", {"sessionId": session_id})
        except RuntimeError:
            control.close()
            continue
        view = SessionView(console)
        state = "live" if reply.get("live") else "not running"
        console.print(Text(f"following {session_id} (daemon pid {control.pid}, {state}); "
                           "read-only, Ctrl-C to stop", style="dim"))
        control.sock.settimeout(None if follow else 1.0)
        _follow(control, view, console)
        return 0
    print(f"acpd: no running daemon knows session {session_id}", file=sys.stderr)
    return 1


def _follow(control: Control, view: Any, console: Any) -> None:
    from rich.text import Text

    try:
        for message in itertools.chain(list(control.notes), control.messages(idle=True)):
            if not message:  # all caught up: show the message so far
                view.flush_message()
                continue
            params = message.get("params") or {}
            if message.get("method") != "session/update":
                continue
            update = params.get("update") or {}
            if update.get("sessionUpdate") == "user_message_chunk":
                view.flush_message()
                text = (update.get("content") or {}).get("text", "")
                console.print(Text.assemble(("you > ", "bold cyan"), str(text)))
                continue
            view.on_update(str(params.get("sessionId")), update)
    except TimeoutError:
        pass
    finally:
        view.flush_message()
        control.close()
