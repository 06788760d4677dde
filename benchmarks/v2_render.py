"""What speaking the v2 draft costs next to v1, measured in the same run.

1. Per update, in process: encoding a turn's updates the way v1 sends them (the baseline:
   what every update costs anyway) against rendering them to v2 and encoding that
   (protocol/acp_v2.py V2Renderer). The mix is a streamed reply: message chunks, and tool
   call cards with a diff.
2. Spawn to the `initialize` answer of `acpd serve`, asking for v1 and for v2 (the v2 module
   is imported only for a v2 client).

Run: .venv/bin/python benchmarks/v2_render.py [--runs N]
"""

from __future__ import annotations

import argparse
import time
from typing import Any

from _common import INIT, Pipe, acpd_argv, environment, median_ms, temp_dir

from acpd.protocol import acp_v2, acp_v2_diff, jsonrpc
from acpd.protocol.framing import encode

OLD = "".join(f"line {i}\n" for i in range(40))
NEW = OLD.replace("line 7\n", "line seven\n")


def turn_updates() -> list[dict[str, Any]]:
    updates: list[dict[str, Any]] = []
    for call in range(5):
        updates += [{"sessionUpdate": "agent_message_chunk",
                     "content": {"type": "text", "text": f"word {i} "}} for i in range(20)]
        card = {"toolCallId": f"tc_{call}", "title": "Edit notes.txt", "kind": "edit",
                "locations": [{"path": "/ws/notes.txt"}], "rawInput": {"path": "notes.txt"}}
        updates.append({"sessionUpdate": "tool_call", "status": "pending", **card})
        updates.append({"sessionUpdate": "tool_call_update", "status": "completed", **card,
                        "content": [{"type": "diff", "path": "/ws/notes.txt",
                                     "oldText": OLD, "newText": NEW}]})
    return updates


def per_update_us(render: bool, rounds: int, updates: list[dict[str, Any]]) -> float:
    renderer = acp_v2.V2Renderer(lambda _sid: "/ws")
    start = time.perf_counter()
    for _ in range(rounds):
        for update in updates:
            params = {"sessionId": "s1", "update": update}
            if render:
                for method, rendered in renderer.notification("session/update", params):
                    encode(jsonrpc.notification(method, rendered))
            else:
                encode(jsonrpc.notification("session/update", params))
    return (time.perf_counter() - start) / (rounds * len(updates)) * 1e6


def worst_patch_ms(lines: int) -> float:
    """About the slowest patch of `lines` lines (old plus new): every third line changed."""
    half = lines // 2 - 1
    old = "".join(f"line {i} {'x' * 40}\n" for i in range(half))
    new = "".join(f"{'changed ' if i % 3 == 0 else ''}line {i} {'x' * 40}\n" for i in range(half))
    start = time.perf_counter()
    assert acp_v2_diff.git_patch("/ws/big.txt", old, new)
    return (time.perf_counter() - start) * 1000


def initialize_ms(version: int, runs: int, data_dir: str) -> float:
    params = INIT if version == 1 else {
        "protocolVersion": 2, "info": {"name": "bench", "version": "0"}, "capabilities": {}}
    samples = []
    for _ in range(runs):
        start = time.perf_counter()
        pipe = Pipe(acpd_argv(data_dir))
        answer = pipe.call("initialize", params)
        samples.append(time.perf_counter() - start)
        assert answer["result"]["protocolVersion"] == version, answer
        pipe.close()
    return median_ms(samples)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--runs", type=int, default=15)
    parser.add_argument("--rounds", type=int, default=200)
    args = parser.parse_args()
    print(environment())
    every = turn_updates()
    mixes = {
        "message chunks": [u for u in every if u["sessionUpdate"] == "agent_message_chunk"],
        "cards without diff": [u for u in every if u["sessionUpdate"] == "tool_call"],
        "cards with a 40-line diff": [u for u in every if "content" in u
                                      and u["sessionUpdate"] == "tool_call_update"],
        "a turn (all of the above)": every,
    }
    for name, updates in mixes.items():
        per_update_us(False, 5, updates)
        per_update_us(True, 5, updates)
        v1 = min(per_update_us(False, args.rounds, updates) for _ in range(3))
        v2 = min(per_update_us(True, args.rounds, updates) for _ in range(3))
        print(f"{name}: v1 encode {v1:.1f} us/update, v2 render+encode {v2:.1f} us/update "
              f"(ratio {v2 / v1:.2f}x, baseline: the v1 encode)")
    inline = min(worst_patch_ms(acp_v2_diff.INLINE_LINES) for _ in range(3))
    threaded = min(worst_patch_ms(acp_v2_diff.PATCH_LINES) for _ in range(3))
    print(f"slowest patch made on the event loop ({acp_v2_diff.INLINE_LINES} lines): "
          f"{inline:.1f} ms; in a worker thread ({acp_v2_diff.PATCH_LINES} lines): "
          f"{threaded:.1f} ms (v1 sends no patch: baseline 0)")
    data_dir = temp_dir()
    initialize_ms(1, 2, data_dir)
    init_v1 = initialize_ms(1, args.runs, data_dir)
    init_v2 = initialize_ms(2, args.runs, data_dir)
    print(f"spawn to initialize answer (median of {args.runs}): v1 {init_v1:.1f} ms, "
          f"v2 {init_v2:.1f} ms (ratio {init_v2 / init_v1:.2f}x, baseline: v1)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
