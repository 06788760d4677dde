"""Spawning the real `acpd serve` and talking raw JSON-RPC to it (for tests that need to send
what no SDK would: malformed frames, odd ids, hostile sizes)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any


def serve_argv(data_dir: Path, *extra: str) -> list[str]:
    return [sys.executable, "-m", "acpd", "serve", "--data-dir", str(data_dir), *extra]


def write_script(path: Path, turns: list[dict[str, Any]]) -> Path:
    path.write_text(json.dumps({"turns": turns}))
    return path


class RawPeer:
    """A blocking line-level peer over a spawned daemon's stdio."""

    def __init__(self, proc: subprocess.Popen[bytes]) -> None:
        self.proc = proc
        self._next_id = 1000

    def send_bytes(self, data: bytes) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(data)
        self.proc.stdin.flush()

    def send(self, message: dict[str, Any]) -> None:
        self.send_bytes(json.dumps(message).encode() + b"\n")

    def recv(self) -> dict[str, Any] | None:
        assert self.proc.stdout is not None
        line = self.proc.stdout.readline()
        return json.loads(line) if line else None

    def request(self, method: str, params: Any = None, **handlers: Any) -> dict[str, Any]:
        """Send a request; answer nothing else; return its response, collecting the rest."""
        self._next_id += 1
        msg_id = self._next_id
        message: dict[str, Any] = {"jsonrpc": "2.0", "id": msg_id, "method": method}
        if params is not None:
            message["params"] = params
        self.send(message)
        while True:
            reply = self.recv()
            if reply is None:
                raise EOFError("daemon closed stdout")
            if reply.get("id") == msg_id and "method" not in reply:
                return reply

    def initialize(self, **caps: Any) -> dict[str, Any]:
        return self.request("initialize", {"protocolVersion": 1, "clientCapabilities": caps})

    def close(self, timeout: float = 5.0) -> int:
        assert self.proc.stdin is not None
        if not self.proc.stdin.closed:
            self.proc.stdin.close()
        return self.proc.wait(timeout)


@contextmanager
def raw_daemon(data_dir: Path, *extra: str, env: dict[str, str] | None = None) -> Iterator[RawPeer]:
    proc = subprocess.Popen(
        serve_argv(data_dir, *extra),
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env={**os.environ, **(env or {})},
    )
    peer = RawPeer(proc)
    try:
        yield peer
    finally:
        if proc.poll() is None:
            try:
                peer.close(5)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
        for stream in (proc.stdout, proc.stderr):
            if stream is not None:
                stream.close()
