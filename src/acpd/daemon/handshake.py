"""Start-up before the event loop: the protocol descriptors and the first `initialize`.

`reserve_stdio()` (daemon/protocolfds.py) moves the protocol to private descriptors and
points fd 1 at stderr and fd 0 at /dev/null, so a stray `print()`, a library that writes to
stdout, or a child process that inherits the standard streams can neither corrupt the stream
nor swallow the editor's next request.

An editor always sends `initialize` first and waits for it. `answer_first_initialize()` reads
that first line with a plain blocking read and answers it straight away, before anyio,
asyncio, pydantic, the config or the store are imported; the daemon then starts its event loop
with whatever bytes followed. Anything unexpected (a first message that is not a well-formed
initialize, a line over the cap) is left untouched for the full dispatcher, which answers it
exactly as it would have.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import acpd
from acpd.daemon.protocolfds import ProtocolFds
from acpd.protocol import jsonrpc
from acpd.protocol.errors import RpcError, invalid_params
from acpd.protocol.framing import encode
from acpd.sandbox.status import sandbox_status

PROTOCOL_VERSION = 1
DRAFT_VERSION = 2
"""The v2 draft: spoken only to a client that asks for it (protocol/acp_v2.py, imported
then: a v1 start-up does not pay for it)."""
FIRST_LINE_CAP = 1 << 20


@dataclass(frozen=True, slots=True)
class ClientCaps:
    read_text_file: bool = False
    write_text_file: bool = False
    terminal: bool = False
    protocol_version: int = PROTOCOL_VERSION
    """The version both sides speak (what `initialize` answered)."""
    raw: Mapping[str, Any] = field(default_factory=dict)
    """The client's `clientCapabilities` as sent (for `_meta` conventions and new fields)."""


def initialize_result(params: Any, *, image: bool = False) -> tuple[dict[str, Any], ClientCaps]:
    """Negotiate: the answer to send and what the client can do. Raises RpcError (-32602).
    `image`: the default model takes images (daemon/images.py)."""
    if not isinstance(params, dict):
        raise invalid_params("initialize needs params with protocolVersion")
    version = params.get("protocolVersion")
    if not isinstance(version, int) or isinstance(version, bool) or version < 0:
        raise invalid_params("protocolVersion must be a non-negative integer")
    if version == DRAFT_VERSION:
        return _initialize_v2(params, image=image)
    raw_caps = params.get("clientCapabilities")
    caps: dict[str, Any] = raw_caps if isinstance(raw_caps, dict) else {}
    raw_fs = caps.get("fs")
    fs: dict[str, Any] = raw_fs if isinstance(raw_fs, dict) else {}
    client = ClientCaps(
        read_text_file=fs.get("readTextFile") is True,
        write_text_file=fs.get("writeTextFile") is True,
        terminal=caps.get("terminal") is True,
        protocol_version=PROTOCOL_VERSION,
        raw=caps,
    )
    return _v1_result(image=image), client


def _initialize_v2(params: dict[str, Any], *, image: bool) -> tuple[dict[str, Any], ClientCaps]:
    """The v2 draft: no client file system or terminal, whatever the client claims (acpd
    reads, writes and runs commands itself, under the same policy and sandbox)."""
    from acpd.protocol import acp_v2

    caps = acp_v2.client_capabilities(params)
    client = ClientCaps(protocol_version=acp_v2.PROTOCOL_VERSION, raw=caps)
    return acp_v2.initialize_result(_v1_result(image=image)), client


def _v1_result(*, image: bool) -> dict[str, Any]:
    return {
        # v1 unless the client asks for the v2 draft: echo 1 when asked for, else offer it
        # (the client decides).
        "protocolVersion": PROTOCOL_VERSION,
        "agentCapabilities": {
            "loadSession": True,
            "promptCapabilities": {"image": image, "audio": False, "embeddedContext": True},
            # stdio always; both HTTP transports through the mcp SDK (acpd/mcpclient).
            "mcpCapabilities": {"http": True, "sse": True},
            "sessionCapabilities": {
                "list": {}, "delete": {}, "resume": {}, "close": {},
                "additionalDirectories": {},  # each checked: daemon/roots.py
            },
        },
        "authMethods": [],
        "agentInfo": {"name": "acpd", "title": "acpd", "version": acpd.__version__},
        # Whether bash commands run in the kernel sandbox here, and if not, why not.
        "_meta": {"acpd": {"sandbox": sandbox_status().to_meta()}},
    }


@dataclass(frozen=True, slots=True)
class EarlyStart:
    leftover: bytes
    """Bytes read past the first line (or all of them, when it was not answered here)."""
    client: ClientCaps | None
    """Set when initialize was answered here."""
    eof: bool = False
    first_line: bytes = b""
    """The initialize line answered here (the shared daemon's forwarder passes it on)."""


def answer_first_initialize(fds: ProtocolFds, *, image: bool = False) -> EarlyStart:
    """Read the first line with blocking reads and answer it if it is a good `initialize`.

    Must run before the descriptors are switched to non-blocking mode (FdWriter does that).
    """
    read_fd, write_fd = fds.read_fd, fds.write_fd
    buffer = b""
    while b"\n" not in buffer:
        chunk = os.read(read_fd, 1 << 16)
        if not chunk:
            return EarlyStart(buffer, None, eof=True)
        buffer += chunk
        if len(buffer) > FIRST_LINE_CAP:
            return EarlyStart(buffer, None)
    line, rest = buffer.split(b"\n", 1)
    message = jsonrpc.parse_line(line)
    if not isinstance(message, jsonrpc.Request) or message.method != "initialize":
        return EarlyStart(buffer, None)
    try:
        result, client = initialize_result(message.params, image=image)
    except RpcError:
        return EarlyStart(buffer, None)
    data = encode(jsonrpc.result(message.id, result))
    view = memoryview(data)
    try:
        while view:
            view = view[os.write(write_fd, view) :]
    except OSError as exc:
        # The editor is not reading (EPIPE): the event loop's writer meets the same error,
        # says so in the log and drains; the daemon still ends at stdin EOF.
        print(f"acpd: cannot write to the editor: {exc}", file=sys.stderr)
    return EarlyStart(rest, client, first_line=line)
