"""Shell policy benchmark: decision time over the corpus, reload latency, raw watcher latency.

    .venv/bin/python benchmarks/policy.py [--rounds N] [--reloads N]

Decision time: every corpus line judged `rounds` times under the reference policy (no
decision cache exists; the realpath cache is warm after the first round), median and p95.
Reload latency: a plugin.toml is rewritten on disk; the time until a decision made through the
handle shows the new policy (watcher debounce 50 ms, step 10 ms). Raw latency: watchfiles
alone on a directory with the same settings, write to event. Targets: median < 50 µs,
reload p95 < 150 ms.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

import anyio

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "src"))

from acpd.policy.cli import corpus_workspace  # noqa: E402
from acpd.policy.engine import compile_policy  # noqa: E402
from acpd.policy.reload import PolicyHandle  # noqa: E402
from acpd.policy.rules import load_base  # noqa: E402

REFERENCE = ROOT / "tests" / "policy" / "reference-policy.toml"
CORPUS = ROOT / "tests" / "policy" / "shell_policy.jsonl"


def pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def bench_decisions(rounds: int) -> dict[str, float]:
    policy = compile_policy(load_base(REFERENCE)[0])
    ws = corpus_workspace()
    cmds = [json.loads(x)["cmd"] for x in CORPUS.read_text().splitlines() if x.strip()]
    policy.judge("ls", cwd=ws)  # import tree-sitter once
    samples: list[float] = []
    for _ in range(rounds):
        for cmd in cmds:
            t0 = time.perf_counter()
            policy.judge(cmd, cwd=ws, roots=(ws,))
            samples.append(time.perf_counter() - t0)
    return {"median_us": statistics.median(samples) * 1e6, "p95_us": pct(samples, 0.95) * 1e6,
            "n": float(len(samples))}


def _write(path: Path, text: str) -> None:
    tmp = path.with_name(".tmp-" + path.name)
    tmp.write_text(text)
    os.replace(tmp, path)


async def bench_reload(n: int) -> list[float]:
    base = Path(tempfile.mkdtemp(prefix="acpd-bench-"))
    plugins = base / "plugins"
    folder = plugins / "p"
    folder.mkdir(parents=True)
    ws = base / "ws"
    ws.mkdir()
    manifest = folder / "plugin.toml"
    _write(manifest, "[shell]\n")
    handle = PolicyHandle(REFERENCE, [plugins])
    latencies: list[float] = []
    stop = anyio.Event()
    async with anyio.create_task_group() as tg:
        tg.start_soon(lambda: handle.watch(debounce_ms=50, step_ms=10, stop_event=stop))
        await anyio.sleep(0.5)
        for i in range(n):
            blocked = "ls" if i % 2 == 0 else "cat"
            want = "deny"
            cmd = f"{blocked} README.md"
            t0 = time.perf_counter()
            _write(manifest, f'[shell]\nblocked_commands = ["{blocked}"]\n')
            with anyio.fail_after(5):
                while handle.judge(cmd, cwd=str(ws)).verdict != want:  # noqa: ASYNC110
                    await anyio.sleep(0.001)
            latencies.append(time.perf_counter() - t0)
            await anyio.sleep(0.1)
        stop.set()
    return latencies


async def bench_raw(n: int) -> list[float]:
    import watchfiles

    base = Path(tempfile.mkdtemp(prefix="acpd-raw-"))
    target = base / "f.toml"
    latencies: list[float] = []
    stop = anyio.Event()
    got = anyio.Event()
    holder: dict[str, anyio.Event] = {"ev": got}

    async def watcher() -> None:
        async for _ in watchfiles.awatch(base, debounce=50, step=10, stop_event=stop):
            holder["ev"].set()

    async with anyio.create_task_group() as tg:
        tg.start_soon(watcher)
        await anyio.sleep(0.5)
        for i in range(n):
            holder["ev"] = anyio.Event()
            t0 = time.perf_counter()
            _write(target, f"x = {i}\n")
            with anyio.fail_after(5):
                await holder["ev"].wait()
            latencies.append(time.perf_counter() - t0)
            await anyio.sleep(0.1)
        stop.set()
    return latencies


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=20)
    ap.add_argument("--reloads", type=int, default=40)
    args = ap.parse_args()
    dec = bench_decisions(args.rounds)
    reload_ms = [x * 1e3 for x in anyio.run(bench_reload, args.reloads)]
    raw_ms = [x * 1e3 for x in anyio.run(bench_raw, args.reloads)]
    print(f"decision time over the corpus ({int(dec['n'])} decisions): "
          f"median {dec['median_us']:.1f} µs, p95 {dec['p95_us']:.1f} µs "
          f"(target median < 50 µs: {dec['median_us'] / 50:.2f}x of target)")
    r50, r95 = statistics.median(reload_ms), pct(reload_ms, 0.95)
    w50, w95 = statistics.median(raw_ms), pct(raw_ms, 0.95)
    print(f"reload latency write -> new decision: median {r50:.1f} ms, p95 {r95:.1f} ms "
          f"(target p95 < 150 ms: {r95 / 150:.2f}x of target)")
    print(f"raw watchfiles latency write -> event: median {w50:.1f} ms, p95 {w95:.1f} ms")
    print(f"ratio reload/raw: median {r50 / w50:.2f}, p95 {r95 / w95:.2f}; "
          f"rebuild overhead ~{r50 - w50:.1f} ms")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
