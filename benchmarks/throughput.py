"""Messages per second over the stdio pipe: acpd next to an agent on the official Python SDK.

Two loads, each measured for both agents in the same run:
  - 10,000 `session/update` notifications streamed during one prompt (agent_message_chunk);
  - 1,000 sequential requests (`session/set_mode`, each answered before the next is sent).
Target (issue 2): at least twice the SDK agent's rate. Run: .venv/bin/python benchmarks/throughput.py
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

from _common import INIT, Pipe, acpd_argv, environment, sdk_argv, temp_dir


def stream_rate(pipe: Pipe, session_id: str, updates: int, text: str) -> float:
    prompt = {"sessionId": session_id, "prompt": [{"type": "text", "text": text}]}
    start = time.perf_counter()
    response, notes = pipe.until_response(pipe.send("session/prompt", prompt))
    elapsed = time.perf_counter() - start
    assert "result" in response, response
    assert notes >= updates, f"expected {updates} updates, got {notes}"
    return notes / elapsed


def request_rate(pipe: Pipe, session_id: str, requests: int) -> float:
    modes = ["ask", "auto"]
    start = time.perf_counter()
    for index in range(requests):
        reply = pipe.call("session/set_mode", {"sessionId": session_id, "modeId": modes[index % 2]})
        assert "result" in reply, reply
    return requests / (time.perf_counter() - start)


def run(argv: list[str], workspace: str, updates: int, requests: int, text: str) -> tuple[float, float]:
    pipe = Pipe(argv)
    try:
        pipe.call("initialize", INIT)
        session = pipe.call("session/new", {"cwd": workspace, "mcpServers": []})
        session_id = session["result"]["sessionId"]
        return stream_rate(pipe, session_id, updates, text), request_rate(pipe, session_id, requests)
    finally:
        pipe.close()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--updates", type=int, default=10_000)
    parser.add_argument("--requests", type=int, default=1_000)
    parser.add_argument("--repeat", type=int, default=3, help="best of N runs per agent")
    args = parser.parse_args()
    work = temp_dir()
    script = Path(work) / "stream.json"
    chunks = [f"chunk {i} " for i in range(args.updates)]
    script.write_text(json.dumps({"turns": [{"chunks": chunks}] * args.repeat}))
    workspace = os.path.join(work, "ws")
    os.mkdir(workspace)
    acpd = acpd_argv(os.path.join(work, "data"), "--model", f"scripted:{script}")
    sdk = sdk_argv()
    results = {
        "acpd": [run(acpd, workspace, args.updates, args.requests, "go") for _ in range(args.repeat)],
        "sdk": [
            run(sdk, workspace, args.updates, args.requests, f"stream {args.updates}")
            for _ in range(args.repeat)
        ],
    }
    best = {name: (max(r[0] for r in runs), max(r[1] for r in runs)) for name, runs in results.items()}
    print(f"throughput over the stdio pipe, best of {args.repeat} ({environment()})")
    print(f"  {'':28} {'updates/s':>12} {'requests/s':>12}")
    for name, label in (("acpd", "acpd serve"), ("sdk", "official SDK minimal agent")):
        print(f"  {label:28} {best[name][0]:12,.0f} {best[name][1]:12,.0f}")
    up = best["acpd"][0] / best["sdk"][0]
    rq = best["acpd"][1] / best["sdk"][1]
    print(f"  ratio acpd / SDK: updates {up:.2f}x, requests {rq:.2f}x (target >= 2x)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
