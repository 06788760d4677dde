"""A transparent relay between an ACP client and the daemon that logs every line on the wire.

    python -m tests.e2e.tee LOGFILE -- <daemon argv>

Bytes pass through unchanged in both directions. Each complete line is appended to LOGFILE
prefixed with its direction: `A ` for what the agent (acpd) wrote, `C ` for what the client
wrote. Lines are logged *before* they are forwarded, so a request is always in the log ahead
of the response that answers it. A trailing line without a newline is logged with the
prefix `A!`/`C!` (a framing error the validator reports).

Stdlib only, so it starts in a few milliseconds; the SDK clients spawn it instead of the
daemon and never notice.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import threading
from typing import BinaryIO

CHUNK = 1 << 16


class Log:
    def __init__(self, path: str) -> None:
        self._file = open(path, "ab", buffering=0)  # noqa: SIM115 - lives as long as the relay
        self._lock = threading.Lock()

    def write(self, tag: bytes, line: bytes) -> None:
        with self._lock:
            self._file.write(tag + b" " + line + (b"" if line.endswith(b"\n") else b"\n"))


def relay(source: int, sink: BinaryIO, log: Log, tag: bytes) -> None:
    """Copy `source` to `sink` until EOF, logging each line before it is forwarded; then
    close `sink` (which passes the EOF on)."""
    pending = b""
    try:
        while True:
            data = os.read(source, CHUNK)
            if not data:
                break
            *lines, pending = (pending + data).split(b"\n")
            for line in lines:
                log.write(tag, line + b"\n")
            try:
                sink.write(data)
                sink.flush()
            except (BrokenPipeError, ValueError):
                break
    finally:
        if pending:
            log.write(tag + b"!", pending)
        with contextlib.suppress(OSError):
            sink.close()


def main(argv: list[str]) -> int:
    if len(argv) < 3 or argv[1] != "--":
        print("usage: python -m tests.e2e.tee LOGFILE -- COMMAND [ARG...]", file=sys.stderr)
        return 2
    log = Log(argv[0])
    child = subprocess.Popen(argv[2:], stdin=subprocess.PIPE, stdout=subprocess.PIPE)
    assert child.stdin is not None and child.stdout is not None

    def forward(signum: int, _frame: object) -> None:
        child.send_signal(signum)

    signal.signal(signal.SIGTERM, forward)
    signal.signal(signal.SIGINT, forward)
    to_child = threading.Thread(
        target=relay, args=(sys.stdin.fileno(), child.stdin, log, b"C"), daemon=True
    )
    to_child.start()
    relay(child.stdout.fileno(), sys.stdout.buffer, log, b"A")
    return child.wait()


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
