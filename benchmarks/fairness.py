"""One busy session must not stall the others (issue 9, item 5).

A scripted model answers session A's prompts with a reply of 20,000 bash calls the shell
policy denies, prompt after prompt, while the benchmark measures, on the same daemon:
  - session B's `session/set_mode` round trip (each answered before the next is sent);
  - policy reload: an overlay (`plugin.toml`) written, until `_acpd/policy_reloaded` arrives.
Baseline, in the same run: the same measurements on the same daemon before session A is
started (nothing busy). Two busy loads: the default `max_tool_calls_per_reply` (64 of the
20,000 calls run, the rest dropped) and the cap raised to 20,000 (every refusal runs: the
loop's yields and the outbox share are what keep B responsive).
Targets: set_mode p99 < 50 ms and reload p95 < 150 ms while A is busy.
Run: .venv/bin/python benchmarks/fairness.py [--calls 20000] [--trips 300] [--reloads 20]
(the measurements run while A works: at the raised cap A never finishes its one reply
before they do, and stdin EOF stops it)
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

from _common import INIT, acpd_argv, environment, temp_dir

DENIED = "curl -s https://example.com -o got.txt"


class Client:
    """An editor over the daemon's stdio: a reader thread takes every message as it comes
    (the busy session's flood included), answers the daemon's requests, and keeps session
    A busy by sending its next prompt as soon as the last one is answered."""

    def __init__(self, argv: list[str], cwd: str) -> None:
        self.proc = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     stderr=subprocess.DEVNULL, cwd=cwd)
        self.next_id = 0
        self.lock = threading.Condition()
        self.answers: dict[int, tuple[float, dict[str, Any]]] = {}
        self.reloads: list[float] = []
        self.tool_calls = 0
        self.busy_session: str | None = None
        self.busy_prompt: int | None = None
        self.busy_prompts = 0
        self._write_lock = threading.Lock()
        threading.Thread(target=self._read, daemon=True).start()

    def send(self, method: str, params: Any) -> int:
        with self._write_lock:
            self.next_id += 1
            msg_id = self.next_id
            line = json.dumps({"jsonrpc": "2.0", "id": msg_id, "method": method,
                               "params": params})
            assert self.proc.stdin is not None
            self.proc.stdin.write(line.encode() + b"\n")
            self.proc.stdin.flush()
        return msg_id

    def wait(self, msg_id: int, timeout: float = 120.0) -> tuple[float, dict[str, Any]]:
        with self.lock:
            if not self.lock.wait_for(lambda: msg_id in self.answers, timeout):
                raise TimeoutError(f"no answer to request {msg_id}")
            return self.answers.pop(msg_id)

    def call(self, method: str, params: Any) -> dict[str, Any]:
        answer = self.wait(self.send(method, params))[1]
        assert "result" in answer, answer
        result: dict[str, Any] = answer["result"]
        return result

    def start_busy(self, session_id: str) -> None:
        self.busy_session = session_id
        self._prompt_busy()

    def stop_busy(self) -> None:
        self.busy_session = None

    def _prompt_busy(self) -> None:
        if self.busy_session is not None:
            self.busy_prompts += 1
            self.busy_prompt = self.send("session/prompt", {
                "sessionId": self.busy_session, "prompt": [{"type": "text", "text": "go"}]})

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for raw in self.proc.stdout:
            now = time.perf_counter()
            message = json.loads(raw)
            method = message.get("method")
            if method is None:
                if message.get("id") == self.busy_prompt:
                    self._prompt_busy()
                    continue
                with self.lock:
                    self.answers[message["id"]] = (now, message)
                    self.lock.notify_all()
            elif method == "_acpd/policy_reloaded":
                with self.lock:
                    self.reloads.append(now)
                    self.lock.notify_all()
            elif method == "session/update":
                if message["params"]["update"].get("sessionUpdate") == "tool_call":
                    self.tool_calls += 1
            elif "id" in message:  # a request to the editor: allow what it asks
                self._answer(message)

    def _answer(self, message: dict[str, Any]) -> None:
        if message["method"] == "session/request_permission":
            result: Any = {"outcome": {"outcome": "selected", "optionId": "allow_once"}}
            reply = {"jsonrpc": "2.0", "id": message["id"], "result": result}
        else:
            reply = {"jsonrpc": "2.0", "id": message["id"],
                     "error": {"code": -32601, "message": "not offered"}}
        with self._write_lock:
            assert self.proc.stdin is not None
            self.proc.stdin.write(json.dumps(reply).encode() + b"\n")
            self.proc.stdin.flush()

    def close(self) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.close()
        try:
            self.proc.wait(20)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()


def set_mode_trips(client: Client, session_id: str, trips: int) -> list[float]:
    samples = []
    for i in range(trips):
        start = time.perf_counter()
        at, answer = client.wait(client.send("session/set_mode", {
            "sessionId": session_id, "modeId": ("auto", "ask")[i % 2]}))
        assert "result" in answer, answer
        samples.append(at - start)
        time.sleep(0.002)  # a user clicking, not a flood
    return samples


def reload_times(client: Client, manifest: Path, reloads: int) -> list[float]:
    samples = []
    for i in range(reloads):
        with client.lock:
            seen = len(client.reloads)
        text = f'[shell]\nblocked_commands = ["nothing-{i}"]\n'
        temp = manifest.with_suffix(".tmp")
        temp.write_text(text)
        start = time.perf_counter()
        os.replace(temp, manifest)
        with client.lock:
            if not client.lock.wait_for(lambda n=seen: len(client.reloads) > n, 10.0):
                raise TimeoutError("no _acpd/policy_reloaded within 10 s")
            samples.append(client.reloads[seen] - start)
        time.sleep(0.15)  # past the watcher's 50 ms debounce
    return samples


def pct(samples: list[float], p: float) -> float:
    ordered = sorted(samples)
    return ordered[min(len(ordered) - 1, round(p * (len(ordered) - 1)))] * 1000


def setup(base: Path, calls: int, cap: int | None, rounds: int) -> tuple[list[str], Path, Path]:
    plugins = base / "plugins"
    (plugins / "p").mkdir(parents=True)
    manifest = plugins / "p" / "plugin.toml"
    manifest.write_text("[shell]\n")
    manifest.chmod(0o600)
    ws = base / "ws"
    ws.mkdir()
    script = base / "busy.json"
    reply = {"tool_calls": [{"name": "bash", "arguments": {"command": DENIED}}] * calls}
    # Each busy prompt takes two turns; past the last, the model says it has no more.
    script.write_text(json.dumps({"turns": [reply, {"text": "done"}] * rounds},
                                 separators=(",", ":")))
    if script.stat().st_size > 16 << 20:  # the scripted provider's limit
        raise SystemExit(f"--rounds {rounds} makes a script over 16 MB: use fewer")
    config = base / "acpd.toml"
    agent = f"[agent]\nmax_tool_calls_per_reply = {cap}\n" if cap else ""
    config.write_text(f'{agent}[tools.shell]\nplugin_dirs = ["{plugins}"]\n')
    argv = acpd_argv(str(base / "data"), "--config", str(config), "--model", f"scripted:{script}")
    return argv, ws, manifest


def run(calls: int, trips: int, reloads: int, cap: int | None, rounds: int,
        baseline: bool) -> dict[str, list[float]]:
    base = Path(temp_dir())
    argv, ws, manifest = setup(base, calls, cap, rounds)
    env_note = {"ACPD_CONFIG": str(base / "none.toml")}
    os.environ.update(env_note)
    client = Client(argv, str(ws))
    out: dict[str, list[float]] = {}
    try:
        client.call("initialize", INIT)
        new = {"cwd": str(ws), "mcpServers": []}
        busy, other = client.call("session/new", new)["sessionId"], client.call(
            "session/new", new)["sessionId"]
        # B in direct mode runs one command so the policy (and its watcher) is in place.
        client.call("session/set_config_option",
                    {"sessionId": other, "configId": "model", "value": "none"})
        client.call("session/prompt", {"sessionId": other,
                                       "prompt": [{"type": "text", "text": "/bash true"}]})
        time.sleep(0.5)
        if baseline:
            out["idle set_mode"] = set_mode_trips(client, other, trips)
            out["idle reload"] = reload_times(client, manifest, reloads)
        client.start_busy(busy)
        deadline = time.perf_counter() + 60
        # Measured once A's first card is out (B's warm-up call made one before).
        while client.tool_calls < 2 and time.perf_counter() < deadline:
            time.sleep(0.01)
        out["busy set_mode"] = set_mode_trips(client, other, trips)
        out["busy reload"] = reload_times(client, manifest, reloads)
        out["busy prompts"] = [float(min(client.busy_prompts, rounds))]
        out["tool calls"] = [float(client.tool_calls - 1)]  # B's warm-up call aside
        client.stop_busy()
    finally:
        client.close()
    return out


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--calls", type=int, default=20_000)
    ap.add_argument("--trips", type=int, default=300)
    ap.add_argument("--reloads", type=int, default=20)
    ap.add_argument("--rounds", type=int, default=10,
                    help="busy replies in the script at the default cap (each ~1.4 MB of JSON)")
    args = ap.parse_args()
    print(f"fairness: {environment()}; session A's replies hold {args.calls} denied bash "
          f"calls; {args.trips} set_mode round trips and {args.reloads} reloads per phase")
    default = run(args.calls, args.trips, args.reloads, None, args.rounds, baseline=True)
    every = run(args.calls, args.trips, args.reloads, args.calls, 1, baseline=False)
    idle_rt, idle_rl = default["idle set_mode"], default["idle reload"]
    print(f"baseline (nothing busy):   set_mode p50 {pct(idle_rt, .5):6.1f} ms  "
          f"p99 {pct(idle_rt, .99):6.1f} ms   reload p50 {pct(idle_rl, .5):6.1f} ms  "
          f"p95 {pct(idle_rl, .95):6.1f} ms")
    for name, data in (("busy, default cap (64)", default),
                       (f"busy, cap {args.calls}", every)):
        rt, rl = data["busy set_mode"], data["busy reload"]
        print(f"{name + ':':26} set_mode p50 {pct(rt, .5):6.1f} ms  p99 {pct(rt, .99):6.1f} ms"
              f"   reload p50 {pct(rl, .5):6.1f} ms  p95 {pct(rl, .95):6.1f} ms   "
              f"({int(data['tool calls'][0])} calls run over {int(data['busy prompts'][0])} "
              f"busy replies)")
        print(f"{'':26} vs baseline: set_mode p99 x{pct(rt, .99) / pct(idle_rt, .99):.1f}, "
              f"reload p95 x{pct(rl, .95) / pct(idle_rl, .95):.1f}; targets p99 < 50 ms "
              f"({'met' if pct(rt, .99) < 50 else 'NOT met'}), p95 < 150 ms "
              f"({'met' if pct(rl, .95) < 150 else 'NOT met'})")


if __name__ == "__main__":
    sys.exit(main())
