"""Wiring: the stdio transport, the connection and the ACP agent, for one editor."""

from __future__ import annotations

from acpd.daemon.agent import AcpAgent, ServeOptions
from acpd.daemon.handshake import EarlyStart, ProtocolFds
from acpd.daemon.rpc import Connection
from acpd.daemon.stdio import FdReader, FdWriter
from acpd.protocol.framing import DEFAULT_MAX_LINE_BYTES


async def serve_stdio(fds: ProtocolFds, options: ServeOptions, early: EarlyStart) -> None:
    conn = Connection(
        FdReader(fds.read_fd),
        FdWriter(fds.write_fd),
        max_line_bytes=options.max_line_bytes or DEFAULT_MAX_LINE_BYTES,
        initial=early.leftover,
    )
    agent = AcpAgent(conn, options)
    if early.client is not None:
        agent.adopt(early.client)
        conn.start_soon(agent.warm_up)
    await conn.serve()
