"""Shared pieces of the benchmarks: the agents under test and a raw pipe client."""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent


def acpd_argv(data_dir: str, *extra: str) -> list[str]:
    return [sys.executable, "-m", "acpd", "serve", "--data-dir", data_dir, *extra]


def sdk_argv() -> list[str]:
    return [sys.executable, str(HERE / "sdk_agent.py")]


class Pipe:
    """A blocking JSON-RPC client over a child's stdio: what an editor does, minus the UI."""

    def __init__(self, argv: list[str], cwd: str | None = None) -> None:
        self.proc = subprocess.Popen(
            argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
            cwd=cwd,
        )
        self.next_id = 0

    def send(self, method: str, params: Any) -> int:
        self.next_id += 1
        message = {"jsonrpc": "2.0", "id": self.next_id, "method": method, "params": params}
        line = json.dumps(message)
        assert self.proc.stdin is not None
        self.proc.stdin.write(line.encode() + b"\n")
        self.proc.stdin.flush()
        return self.next_id

    def until_response(self, msg_id: int) -> tuple[dict[str, Any], int]:
        """Read until the response to msg_id; return it and how many notifications came first."""
        assert self.proc.stdout is not None
        notes = 0
        for raw in self.proc.stdout:
            message = json.loads(raw)
            if message.get("id") == msg_id and "method" not in message:
                return message, notes
            if "method" in message and "id" not in message:
                notes += 1
        raise EOFError("agent closed its stdout")

    def call(self, method: str, params: Any) -> dict[str, Any]:
        return self.until_response(self.send(method, params))[0]

    def close(self) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.close()
        try:
            self.proc.wait(5)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()


INIT = {"protocolVersion": 1, "clientCapabilities": {}}


def temp_dir() -> str:
    return tempfile.mkdtemp(prefix="acpd-bench-")


def median_ms(samples: list[float]) -> float:
    return statistics.median(samples) * 1000


def peak_rss_mb(pid: int) -> float:
    """VmHWM: the resident set's high-water mark so far."""
    with open(f"/proc/{pid}/status") as status:
        for line in status:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    return float("nan")


def environment() -> str:
    return f"python {sys.version.split()[0]}, {os.cpu_count()} cores"
