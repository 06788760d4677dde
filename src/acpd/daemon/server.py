"""Wiring: the stdio transport, the connection and the ACP agent, for one editor."""

from __future__ import annotations

import logging
import signal

import anyio

from acpd.daemon.agent import AcpAgent, ServeOptions
from acpd.daemon.handshake import EarlyStart
from acpd.daemon.protocolfds import ProtocolFds
from acpd.daemon.rpc import Connection
from acpd.daemon.stdio import FdReader, FdWriter
from acpd.protocol.framing import DEFAULT_MAX_LINE_BYTES

log = logging.getLogger("acpd.server")

STOP_SIGNALS = (signal.SIGTERM, signal.SIGINT, signal.SIGHUP)


async def serve_stdio(fds: ProtocolFds, options: ServeOptions, early: EarlyStart) -> None:
    conn = Connection(
        FdReader(fds.read_fd),
        FdWriter(fds.write_fd),
        max_line_bytes=options.max_line_bytes or DEFAULT_MAX_LINE_BYTES,
        initial=early.leftover,
    )
    agent = AcpAgent(conn, options)

    async def stop_on_signal() -> None:
        # An editor that quits may signal rather than close our stdin: stop the same way
        # (children killed, terminals released, session metadata written), then exit 0.
        with anyio.open_signal_receiver(*STOP_SIGNALS) as signals:
            async for signum in signals:
                log.info("stopping on %s", signal.Signals(signum).name)
                conn.stop()
                return

    conn.start_soon(stop_on_signal)
    if early.client is not None:
        agent.adopt(early.client)
        conn.start_soon(agent.warm_up)
    await conn.serve()
