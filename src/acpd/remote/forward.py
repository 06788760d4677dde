"""`acpd serve --remote=auto`: the process an editor spawns, forwarding to the shared daemon.

In order:

1. Find the daemon's socket (remote/paths.py: private directory, socket and peer uid
   checked). When a daemon answers, everything the editor sends goes to it as it is, its
   `initialize` included, and the daemon answers: the forwarder then imports nothing of
   the handshake (standard library and remote/paths.py only), which is what makes a new
   window fast.
2. When none answers, answer the editor's first `initialize` here, exactly as `acpd serve`
   does (daemon/handshake.py), so that the editor is not kept waiting while a daemon
   starts; take the start lock (`NAME.lock`, flock) so that windows opened at once start
   one daemon, look again, start `acpd daemon` if still none, and hold the lock until it
   listens (never while waiting for an editor). The same `initialize` line then goes to
   the daemon, which negotiates the connection's capabilities from it; its answer to that
   id is not passed on.
3. Forward bytes both ways, with a bounded buffer per direction (a side that stops reading
   stops the other side being read).
4. End of the editor's input: half-close the socket and pass on what the daemon still
   sends; exit 0 when it closes. The daemon closing first (stopped, crashed, killed):
   say so on stderr, naming its log, and exit 1: the sessions are in the store, and the
   next window starts a new daemon.

No event loop, no pydantic: the standard library's poll, plus (only when it answers
`initialize` itself) what `acpd serve` imports for its own early answer.
"""

from __future__ import annotations

import contextlib
import os
import select
import socket
import sys
import time

from acpd.remote.paths import UnsafePath, check_peer, check_socket, runtime_dir, socket_name

# Not typing.TYPE_CHECKING: importing typing costs every new window a few milliseconds, and
# mypy treats any name TYPE_CHECKING as true.
TYPE_CHECKING = False
if TYPE_CHECKING:
    import subprocess
    from argparse import Namespace
    from typing import Any

    from acpd.daemon.protocolfds import ProtocolFds

START_TIMEOUT = 20.0
LOCK_TIMEOUT = 25.0
BUFFER_CAP = 1 << 20
"""Bytes buffered per direction before its source stops being read."""
CHUNK = 1 << 16


class DaemonGone(Exception):
    pass


def run_forwarder(args: Namespace) -> int:
    import signal

    from acpd.daemon.protocolfds import reserve_stdio

    # Interrupted, the forwarder just ends (no traceback): the daemon sees the window go.
    signal.signal(signal.SIGINT, signal.SIG_DFL)
    fds = reserve_stdio()
    try:
        directory = runtime_dir()
        name = socket_name(args.config, args.data_dir, args.model)
        sock = connect_or_start(directory, name, args, fds)
    except UnsafePath as exc:
        print(f"acpd: refusing the shared daemon: {exc}", file=sys.stderr)
        return 2
    except DaemonGone as exc:
        print(f"acpd: {exc}", file=sys.stderr)
        return 1
    except OSError as exc:
        print(f"acpd: cannot reach the shared daemon: {exc.strerror or exc}", file=sys.stderr)
        return 1
    if sock is None:
        return 0  # the editor left before saying anything
    return Pump(fds, sock.socket, sock.drop_id, sock.first, sock.log_path).run()


class Connected:
    def __init__(self, socket: socket.socket, first: bytes, drop_id: Any, log_path: str):
        self.socket = socket
        self.first = first
        """What the editor sent before the daemon answered (its initialize and more)."""
        self.drop_id = drop_id
        """The id of the initialize answered here (the daemon's answer is not passed on)."""
        self.log_path = log_path


def connect_or_start(
    directory: str, name: str, args: Namespace, fds: ProtocolFds
) -> Connected | None:
    """Connect to the daemon; when none listens, answer the editor's initialize, then start
    one and connect. The start lock is never held while waiting for the editor: only while
    a daemon starts. Raises UnsafePath, DaemonGone (it could not be started)."""
    path = os.path.join(directory, f"{name}.sock")
    log_path = os.path.join(directory, f"{name}.log")
    sock = try_connect(path)  # refuses an unsafe socket before anything is answered
    if sock is not None:  # the daemon answers the editor's initialize itself
        return Connected(sock, b"", None, log_path)
    from acpd.sandbox.status import prewarm

    prewarm()  # the sandbox probe (part of the initialize answer) runs while it is read
    first, drop_id, eof = answer_initialize(fds, args)
    if eof and not first:
        return None
    sock = try_connect(path)
    if sock is None:
        lock = _lock(os.path.join(directory, f"{name}.lock"))
        try:
            sock = try_connect(path)
            if sock is None:
                sock = wait_for_daemon(path, start_daemon(name, args, log_path), log_path)
        finally:
            os.close(lock)
    return Connected(sock, first, drop_id, log_path)


def try_connect(path: str) -> socket.socket | None:
    """A checked connection to the daemon, or None when none listens (no socket, or a
    stale one). Raises UnsafePath."""
    if not check_socket(path):
        return None
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        sock.connect(path)
    except (ConnectionRefusedError, FileNotFoundError):
        sock.close()
        return None
    except OSError:
        sock.close()
        raise
    try:
        check_peer(sock)
    except UnsafePath:
        sock.close()
        raise
    return sock


def _lock(path: str) -> int:
    import fcntl

    fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
    deadline = time.monotonic() + LOCK_TIMEOUT
    while True:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            return fd
        except BlockingIOError:
            if time.monotonic() > deadline:
                os.close(fd)
                raise DaemonGone(f"another acpd holds {path} and does not let go") from None
            time.sleep(0.005)


def daemon_argv(name: str, args: Namespace) -> list[str]:
    argv = [sys.executable, "-m", "acpd", "daemon", "--name", name]
    model = args.model
    if model and model.startswith("scripted:"):  # the daemon runs in /
        model = "scripted:" + os.path.abspath(model.removeprefix("scripted:"))
    for flag, value in (("--config", args.config), ("--data-dir", args.data_dir),
                        ("--model", model), ("--log-level", args.log_level)):
        if value:
            argv += [flag, os.path.abspath(value) if flag in ("--config", "--data-dir")
                     else value]
    return argv


def start_daemon(name: str, args: Namespace, log_path: str) -> subprocess.Popen[bytes]:
    import subprocess

    log = os.open(log_path, os.O_WRONLY | os.O_CREAT | os.O_APPEND | os.O_CLOEXEC, 0o600)
    try:
        # Its own session: the editor's signals to its process group do not reach it.
        return subprocess.Popen(
            daemon_argv(name, args), stdin=subprocess.DEVNULL, stdout=log, stderr=log,
            cwd="/", start_new_session=True,
        )
    finally:
        os.close(log)


def wait_for_daemon(
    path: str, process: subprocess.Popen[bytes] | None, log_path: str
) -> socket.socket:
    """Raises DaemonGone when it exits or does not listen within START_TIMEOUT."""
    deadline = time.monotonic() + START_TIMEOUT
    while time.monotonic() < deadline:
        sock = try_connect(path)
        if sock is not None:
            return sock
        if process is not None and process.poll() is not None:
            raise DaemonGone(
                f"the shared daemon could not start (exit {process.returncode}): "
                f"{_log_tail(log_path)}"
            )
        time.sleep(0.003)
    raise DaemonGone(f"the shared daemon did not listen on {path} within {START_TIMEOUT:g} s")


def _log_tail(log_path: str) -> str:
    try:
        with open(log_path, "rb") as handle:
            handle.seek(0, os.SEEK_END)
            handle.seek(max(0, handle.tell() - 2000))
            tail = handle.read().decode(errors="replace").strip().splitlines()
    except OSError:
        return f"see {log_path}"
    return (" | ".join(tail[-5:]) or "no output") + f" (log: {log_path})"


def answer_initialize(fds: ProtocolFds, args: Namespace) -> tuple[bytes, Any, bool]:
    """Answer the editor's first initialize here. Returns every byte read (to forward),
    the id answered (None when the first message was not a good initialize), and EOF."""
    from acpd.daemon.handshake import answer_first_initialize
    from acpd.daemon.image_models import image_capability
    from acpd.protocol import jsonrpc

    early = answer_first_initialize(fds, image=image_capability(args.config, args.model))
    if early.client is None:
        return early.leftover, None, early.eof
    # Answered: early.leftover is what followed the line; find the line again for the daemon.
    line = early.first_line
    message = jsonrpc.parse_line(line)
    drop_id = message.id if isinstance(message, jsonrpc.Request) else None
    return line + b"\n" + early.leftover, drop_id, early.eof


class Pump:
    """Bytes both ways between the editor (protocol fds) and the daemon's socket."""

    def __init__(
        self, fds: ProtocolFds, sock: socket.socket, drop_id: Any, first: bytes, log_path: str
    ) -> None:
        self.read_fd, self.write_fd = fds.read_fd, fds.write_fd
        self.sock = sock
        self.log_path = log_path
        self.to_daemon = bytearray(first)
        self.to_editor = bytearray()
        self.drop_id = drop_id
        self.scan = bytearray()
        """Daemon output not yet passed on, while its answer to `drop_id` is awaited."""
        self.editor_eof = False
        self.daemon_pid = check_peer(sock)

    def run(self) -> int:
        os.set_blocking(self.read_fd, False)
        os.set_blocking(self.write_fd, False)
        self.sock.setblocking(False)
        poller = select.poll()
        while True:
            self._register(poller)
            for fd, events in poller.poll():
                try:
                    outcome = self._ready(fd, events)
                except DaemonGone as exc:
                    self._flush_editor()
                    print(f"acpd: {exc}", file=sys.stderr)
                    return 1
                if outcome is not None:
                    return outcome

    def _register(self, poller: select.poll) -> None:
        sock_events = 0
        if len(self.to_editor) < BUFFER_CAP:
            sock_events |= select.POLLIN
        if self.to_daemon:
            sock_events |= select.POLLOUT
        poller.register(self.sock.fileno(), sock_events)
        if not self.editor_eof and len(self.to_daemon) < BUFFER_CAP:
            poller.register(self.read_fd, select.POLLIN)
        else:
            _unregister(poller, self.read_fd)
        if self.to_editor:
            poller.register(self.write_fd, select.POLLOUT)
        else:
            _unregister(poller, self.write_fd)

    def _ready(self, fd: int, events: int) -> int | None:
        if fd == self.read_fd:
            self._from_editor()
        elif fd == self.write_fd:
            if events & (select.POLLERR | select.POLLHUP) and not events & select.POLLOUT:
                return 0  # the editor is gone: nobody to forward to
            if not self._write_editor():
                return 0
        else:
            if events & select.POLLOUT and self.to_daemon:
                self._write_daemon()
            if events & (select.POLLIN | select.POLLHUP | select.POLLERR):
                return self._from_daemon()
        return None

    def _from_editor(self) -> None:
        try:
            data = os.read(self.read_fd, CHUNK)
        except BlockingIOError:
            return
        except OSError:
            data = b""
        if data:
            self.to_daemon += data
            self._write_daemon()
            return
        self.editor_eof = True
        if not self.to_daemon:
            self._half_close()

    def _write_daemon(self) -> None:
        try:
            sent = self.sock.send(self.to_daemon)
        except BlockingIOError:
            return
        except OSError as exc:
            raise DaemonGone(self._gone(str(exc))) from None
        del self.to_daemon[:sent]
        if not self.to_daemon and self.editor_eof:
            self._half_close()

    def _half_close(self) -> None:
        with contextlib.suppress(OSError):
            self.sock.shutdown(socket.SHUT_WR)

    def _from_daemon(self) -> int | None:
        try:
            data = self.sock.recv(CHUNK)
        except BlockingIOError:
            return None
        except OSError as exc:
            raise DaemonGone(self._gone(str(exc))) from None
        if not data:
            if self.editor_eof:
                self._flush_editor()
                return 0
            raise DaemonGone(self._gone("it closed the connection"))
        self.to_editor += self._filtered(data)
        self._write_editor()
        return None

    def _filtered(self, data: bytes) -> bytes:
        """Drop the daemon's answer to the initialize answered here; pass the rest."""
        if self.drop_id is None:
            return data
        from acpd.protocol import jsonrpc

        self.scan += data
        passed = bytearray()
        while self.drop_id is not None and b"\n" in self.scan:
            line, _, rest = bytes(self.scan).partition(b"\n")
            self.scan = bytearray(rest)
            message = jsonrpc.parse_line(line)
            if isinstance(message, jsonrpc.Response) and message.id == self.drop_id:
                self.drop_id = None
                continue
            passed += line + b"\n"
        if self.drop_id is None:
            passed += self.scan
            self.scan = bytearray()
        return bytes(passed)

    def _write_editor(self) -> bool:
        """False when the editor cannot be written to any more."""
        try:
            written = os.write(self.write_fd, self.to_editor)
        except BlockingIOError:
            return True
        except OSError:
            return False
        del self.to_editor[:written]
        return True

    def _flush_editor(self) -> None:
        os.set_blocking(self.write_fd, True)
        try:
            while self.to_editor:
                del self.to_editor[: os.write(self.write_fd, self.to_editor)]
        except OSError:
            pass

    def _gone(self, how: str) -> str:
        return (
            f"the shared acpd daemon (pid {self.daemon_pid}) went away: {how}. It stopped or "
            "crashed; your sessions are kept in its store, and the next window starts a new "
            f"daemon (its log: {self.log_path})"
        )


def _unregister(poller: select.poll, fd: int) -> None:
    with contextlib.suppress(KeyError):
        poller.unregister(fd)
