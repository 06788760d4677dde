"""`acpd daemon`: the per-user daemon that every `acpd serve --remote=auto` forwards to.

Start-up, in order, before the event loop: check the private runtime directory; take the
life lock `NAME.pid` (flock, held until the process ends: two daemons for one socket cannot
run, and only the lock holder may remove a stale socket); bind `NAME.sock` under umask 077
and listen, so that forwarders can connect while the rest loads. Then the runtime loads
once (remote/hub.py) and each accepted connection whose peer runs as this uid
(SO_PEERCRED) is served as one ACP connection (daemon/rpc.py, daemon/agent.py).

It stops on SIGTERM, SIGINT, SIGHUP, `acpd daemon stop` (`_acpd/stop`), or after
`[daemon] idle_exit` seconds with no connection and no running turn: commands killed,
results and metadata written, the store closed, the socket removed.
"""

from __future__ import annotations

import contextlib
import functools
import logging
import os
import signal
import socket
import sys
import time
from typing import TYPE_CHECKING

from acpd.remote.paths import UnsafePath, check_peer, runtime_dir, socket_name

if TYPE_CHECKING:
    from argparse import Namespace

    from anyio import CancelScope

    from acpd.daemon.agent import ServeOptions
    from acpd.remote.hub import Hub

log = logging.getLogger("acpd.remote")

LOCK_WAIT = 15.0
"""Seconds a new daemon waits for a stopping one to let go of the life lock."""
BACKLOG = 64


def run_daemon(args: Namespace) -> int:
    try:
        directory = runtime_dir()
    except UnsafePath as exc:
        print(f"acpd daemon: {exc}", file=sys.stderr)
        return 2
    name = args.name or socket_name(args.config, args.data_dir, args.model)
    lock = take_life_lock(os.path.join(directory, f"{name}.pid"))
    if lock is None:
        print(f"acpd daemon: one already runs for {directory}/{name}.sock", file=sys.stderr)
        return 1
    path = os.path.join(directory, f"{name}.sock")
    try:
        listener = listen(path)
    except OSError as exc:  # a path over the 107-byte limit of Unix sockets, a full disk
        print(f"acpd daemon: cannot listen on {path}: {exc.strerror or exc}", file=sys.stderr)
        os.close(lock)
        return 2
    os.dup2(2, 1)  # a stray print goes to the log
    logging.basicConfig(
        stream=sys.stderr,
        level=getattr(logging, str(args.log_level).upper(), logging.WARNING),
        format="%(asctime)s acpd daemon %(levelname)s %(name)s: %(message)s",
    )
    import anyio

    from acpd.daemon.agent import ServeOptions
    from acpd.daemon.cli import loop_options
    from acpd.daemon.lean import skip_pydantic_plugins

    skip_pydantic_plugins()
    options = ServeOptions(args.config, args.data_dir, args.model)
    log.warning("listening on %s (pid %d)", path, os.getpid())
    try:
        anyio.run(serve_daemon, listener, options, path, backend_options=loop_options())
    finally:
        remove_socket(path, listener)
        os.close(lock)
    log.warning("stopped")
    return 0


def take_life_lock(path: str) -> int | None:
    import fcntl

    fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
    deadline = time.monotonic() + LOCK_WAIT
    while True:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            break
        except BlockingIOError:
            if time.monotonic() > deadline:
                os.close(fd)
                return None
            time.sleep(0.02)
    os.ftruncate(fd, 0)
    os.write(fd, f"{os.getpid()}\n".encode())
    return fd


def listen(path: str) -> socket.socket:
    """Bind under umask 077 (the socket is 0600 from its first instant). A socket left by
    a dead daemon is removed first: holding the life lock, it cannot be a live one's."""
    with contextlib.suppress(FileNotFoundError):
        os.unlink(path)
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    old = os.umask(0o077)
    try:
        listener.bind(path)
    finally:
        os.umask(old)
    listener.listen(BACKLOG)
    listener.setblocking(False)
    return listener


def remove_socket(path: str, listener: socket.socket) -> None:
    """Close and unlink the socket (still ours: the life lock is held until after this)."""
    listener.close()
    with contextlib.suppress(OSError):
        os.unlink(path)


async def serve_daemon(listener: socket.socket, options: ServeOptions, path: str) -> None:
    import anyio

    from acpd.remote.hub import Hub

    hub = Hub(options, path)
    accepting = anyio.CancelScope()

    def stop_listening() -> None:
        # Unlinked now (the next window starts a new daemon); closed when the loop is
        # done with it (closing a descriptor the loop still watches is an error).
        accepting.cancel()
        with contextlib.suppress(OSError):
            os.unlink(path)

    hub.on_stopping = stop_listening
    async with anyio.create_task_group() as tg:
        tg.start_soon(_stop_on_signal, hub)
        tg.start_soon(_accept, listener, hub, accepting)
        try:
            await hub.load(tg)
        except Exception as exc:  # told to each editor at its first session call
            log.error("cannot load the runtime: %s", exc)
        tg.start_soon(hub.idle_exit)
        await hub.stopped.wait()
        tg.cancel_scope.cancel()


async def _stop_on_signal(hub: Hub) -> None:
    import anyio

    with anyio.open_signal_receiver(signal.SIGTERM, signal.SIGINT, signal.SIGHUP) as signals:
        async for signum in signals:
            log.warning("stopping on %s", signal.Signals(signum).name)
            hub.start_soon(hub.stop)
            return


async def _accept(listener: socket.socket, hub: Hub, scope: CancelScope) -> None:
    with scope:
        await _accept_loop(listener, hub)


async def _accept_loop(listener: socket.socket, hub: Hub) -> None:
    import anyio

    while not hub.stopping:
        await anyio.wait_readable(listener)
        try:
            sock, _ = listener.accept()
        except (BlockingIOError, InterruptedError):
            continue
        except OSError as exc:  # out of descriptors: wait, do not spin
            log.error("cannot accept a connection: %s", exc)
            await anyio.sleep(0.1)
            continue
        try:
            pid = check_peer(sock)
        except (UnsafePath, OSError) as exc:
            log.warning("refused a connection: %s", exc)
            sock.close()
            continue
        if hub.stopping:
            sock.close()
            return
        hub.start_soon(functools.partial(_serve_window, sock, pid, hub))


async def _serve_window(sock: socket.socket, peer_pid: int, hub: Hub) -> None:
    from acpd.daemon.agent import AcpAgent
    from acpd.daemon.rpc import Connection
    from acpd.daemon.stdio import FdReader, FdWriter

    fd = sock.detach()
    reader = FdReader(fd)
    conn = Connection(reader, FdWriter(fd))
    agent = AcpAgent(conn, hub.options, hub)
    window = hub.open_window(conn, agent, peer_pid)
    log.info("window %d opened (pid %d)", window.number, peer_pid)
    try:
        await conn.serve()
    finally:
        hub.close_window(window)
        reader.close()
        os.close(fd)
        log.info("window %d closed", window.number)
