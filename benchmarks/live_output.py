"""Live terminal output (issue 10, item 3): how long a line a command writes takes to reach
the editor when acpd runs the command itself.

The command prints `T <bash $EPOCHREALTIME>` every 20 ms (a builtin: no fork between the
clock read and the write). The client notes the wall clock when each line reaches it and
subtracts. Measured in the same run:
  - raw pipe (floor): the same command under a plain subprocess pipe, read line by line;
  - polling, 250 ms (the old local path's cadence, emulated on the raw pipe: the buffer is
    looked at every 250 ms);
  - acpd, v1 `_meta` terminal (a client that sends `_meta.terminal_output`, as Zed does):
    `tool_call_update._meta.terminal_output` chunks;
  - acpd, plain card (a client that asked for nothing): the card's live text;
  - v2 `terminal_output_chunk`, in process: the local runner (sandbox included) with a v2
    stream, timed when the update is handed to the connection (this branch answers
    `initialize` with v1, so v2 cannot be asked for through `acpd serve` yet).
The `_meta` and plain runs go through `acpd serve`, the scripted model, the shell policy and
the kernel sandbox. Target: p95 < 50 ms for the `_meta` path.
Run: .venv/bin/python benchmarks/live_output.py [--lines 200] [--interval 0.02]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import threading
import time
from pathlib import Path
from typing import Any

from _common import acpd_argv, environment, temp_dir


def command(lines: int, interval: float) -> str:
    return f"for i in {{1..{lines}}}; do echo T $EPOCHREALTIME; sleep {interval}; done"


def stamps(text: str) -> list[float]:
    out = []
    for line in text.splitlines():
        parts = line.split()
        if len(parts) == 2 and parts[0] == "T":
            try:
                out.append(float(parts[1]))
            except ValueError:
                continue
    return out


def raw_pipe(cmd: str, poll: float | None = None) -> list[float]:
    """Latencies of the lines read straight from a pipe (every `poll` seconds, if given)."""
    proc = subprocess.Popen(["bash", "-c", cmd], stdout=subprocess.PIPE)
    assert proc.stdout is not None
    latencies: list[float] = []
    if poll is None:
        for raw in proc.stdout:
            now = time.time()
            latencies += [now - t for t in stamps(raw.decode())]
    else:
        buffer = bytearray()
        fd = proc.stdout.fileno()
        os.set_blocking(fd, False)
        while True:
            time.sleep(poll)
            now = time.time()
            try:
                chunk = os.read(fd, 1 << 20)
            except BlockingIOError:
                continue
            if not chunk:
                break
            buffer += chunk
            latencies += [now - t for t in stamps(chunk.decode())]
    proc.wait()
    return latencies


class Editor:
    """A client over acpd's stdio: a reader thread notes when each update arrives and
    answers permission requests."""

    def __init__(self, argv: list[str], cwd: str, env: dict[str, str]) -> None:
        self.proc = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     stderr=subprocess.DEVNULL, cwd=cwd, env=env)
        self.next_id = 0
        self.lock = threading.Condition()
        self.answers: dict[int, dict[str, Any]] = {}
        self.arrivals: list[tuple[float, dict[str, Any]]] = []
        threading.Thread(target=self._read, daemon=True).start()

    def _write(self, message: dict[str, Any]) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(json.dumps(message).encode() + b"\n")
        self.proc.stdin.flush()

    def call(self, method: str, params: Any) -> dict[str, Any]:
        self.next_id += 1
        msg_id = self.next_id
        self._write({"jsonrpc": "2.0", "id": msg_id, "method": method, "params": params})
        with self.lock:
            self.lock.wait_for(lambda: msg_id in self.answers, timeout=120)
            return self.answers.pop(msg_id)

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for raw in self.proc.stdout:
            now = time.time()
            message = json.loads(raw)
            if message.get("method") == "session/request_permission":
                self._write({"jsonrpc": "2.0", "id": message["id"], "result": {
                    "outcome": {"outcome": "selected", "optionId": "allow_once"}}})
            elif message.get("method") == "session/update":
                with self.lock:
                    self.arrivals.append((now, message["params"]["update"]))
            elif "id" in message and "method" not in message:
                with self.lock:
                    self.answers[message["id"]] = message
                    self.lock.notify_all()

    def close(self) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.close()
        self.proc.wait(10)


def through_acpd(cmd: str, caps: dict[str, Any]) -> list[float]:
    home = Path(temp_dir())
    workspace = home / "ws"
    workspace.mkdir()
    script = home / "script.json"
    script.write_text(json.dumps({"turns": [
        {"tool_calls": [{"name": "bash", "arguments": {"command": cmd}}]}, {"text": "done"}]}))
    env = {**os.environ, "ACPD_CONFIG": str(home / "none.toml"),
           "XDG_CONFIG_HOME": str(home / "config"), "XDG_DATA_HOME": str(home / "share")}
    argv = acpd_argv(str(home / "data"), "--model", f"scripted:{script}")
    editor = Editor(argv, str(workspace), env)
    try:
        editor.call("initialize", {"protocolVersion": 1, "clientCapabilities": caps})
        session = editor.call("session/new", {"cwd": str(workspace), "mcpServers": []})
        session_id = session["result"]["sessionId"]
        answer = editor.call("session/prompt", {"sessionId": session_id,
                                                "prompt": [{"type": "text", "text": "go"}]})
        assert answer["result"]["stopReason"] == "end_turn", answer
    finally:
        editor.close()
    return latencies_of(editor.arrivals)


def v2_in_process(cmd: str) -> list[float]:
    import base64

    import anyio

    from acpd.daemon.local import LocalCommandRunner
    from acpd.daemon.terminal_stream import TerminalStreams
    from acpd.tools.capabilities import CommandRequest
    from acpd.tools.output import OutputStage

    workspace = Path(temp_dir())
    latencies: list[float] = []

    async def send(update: dict[str, Any]) -> None:
        now = time.time()
        if update["sessionUpdate"] == "terminal_output_chunk":
            text = base64.b64decode(update["data"]).decode()
            latencies.extend(now - t for t in stamps(text))

    async def nothing(*_args: Any) -> None:
        return None

    async def run() -> None:
        streams = TerminalStreams("v2", send, lambda _r: None, OutputStage, str(workspace))
        request = CommandRequest(cmd, str(workspace), 120.0, 1 << 20,
                                 roots=(str(workspace),), call_id="bench")
        await LocalCommandRunner(live=streams).run(request, nothing, nothing)

    anyio.run(run)
    return latencies


def latencies_of(arrivals: list[tuple[float, dict[str, Any]]]) -> list[float]:
    """Each stamp counted once, when it first reached the client (a plain card resends
    its tail; only new lines count)."""
    seen: set[float] = set()
    out = []
    for now, update in arrivals:
        if update.get("sessionUpdate") != "tool_call_update" or update.get("status") in (
            "completed", "failed"
        ):
            continue  # the final card is not live output
        meta = update.get("_meta") or {}
        texts = [meta["terminal_output"]["data"]] if "terminal_output" in meta else [
            c["content"].get("text", "") for c in update.get("content") or []
            if c.get("type") == "content"]
        for stamp in stamps("".join(texts)):
            if stamp not in seen:
                seen.add(stamp)
                out.append(now - stamp)
    return out


def show(name: str, latencies: list[float], lines: int) -> tuple[float, float]:
    ms = sorted(x * 1000 for x in latencies)
    p95 = ms[min(len(ms) - 1, int(len(ms) * 0.95))] if ms else float("nan")
    median = statistics.median(ms) if ms else float("nan")
    print(f"  {name:<44} median {median:7.2f} ms  p95 {p95:7.2f} ms  "
          f"({len(ms)}/{lines} lines live)")
    return median, p95


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--lines", type=int, default=200)
    parser.add_argument("--interval", type=float, default=0.02)
    args = parser.parse_args()
    cmd = command(args.lines, args.interval)
    print(f"live output: a line every {args.interval * 1000:g} ms, {args.lines} lines "
          f"({environment()})")
    _, floor = show("raw pipe (floor)", raw_pipe(cmd), args.lines)
    _, polled = show("polling every 250 ms (old local path)", raw_pipe(cmd, 0.25), args.lines)
    meta = {"fs": {"readTextFile": True, "writeTextFile": True}, "terminal": False,
            "_meta": {"terminal_output": True}}
    _, p95 = show("acpd, v1 _meta terminal (Zed)", through_acpd(cmd, meta), args.lines)
    show("acpd, plain card text", through_acpd(cmd, {"terminal": False}), args.lines)
    show("v2 terminal_output_chunk (in process)", v2_in_process(cmd), args.lines)
    print(f"  _meta path p95 {p95:.1f} ms: {p95 - floor:+.1f} ms over the raw pipe, "
          f"{polled / p95:.1f}x better than polling; target < 50 ms: "
          f"{'met' if p95 < 50 else 'MISSED'}")


if __name__ == "__main__":
    main()
