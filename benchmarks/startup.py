"""Spawn-to-`initialize`-answer time and memory, next to `python -c pass` and an SDK agent.

Targets (issue 2): acpd answers in under 0.1 s (median) and stays under 40 MB after
initialize. Run: .venv/bin/python benchmarks/startup.py [--runs N]
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import time
from pathlib import Path

from _common import INIT, Pipe, acpd_argv, environment, median_ms, peak_rss_mb, sdk_argv, temp_dir


def time_python_pass(runs: int) -> list[float]:
    samples = []
    for _ in range(runs):
        start = time.perf_counter()
        subprocess.run([sys.executable, "-c", "pass"], check=True)
        samples.append(time.perf_counter() - start)
    return samples


def time_initialize(argv: list[str], runs: int) -> tuple[list[float], list[float], list[float]]:
    """Per run: seconds to the answer, peak RSS at the answer, peak RSS after warm-up."""
    times, rss_now, rss_later = [], [], []
    for _ in range(runs):
        start = time.perf_counter()
        pipe = Pipe(argv)
        pipe.call("initialize", INIT)
        times.append(time.perf_counter() - start)
        rss_now.append(peak_rss_mb(pipe.proc.pid))
        time.sleep(0.4)  # what acpd loads right after answering (config, store, pydantic)
        rss_later.append(peak_rss_mb(pipe.proc.pid))
        pipe.close()
    return times, rss_now, rss_later


def stack_floor(runs: int, extra: list[str]) -> float:
    """Median peak RSS of benchmarks/stack_floor.py: the stack without acpd."""
    script = str(Path(__file__).resolve().parent / "stack_floor.py")
    out = [float(subprocess.run([sys.executable, script, *extra], check=True,
                                capture_output=True, text=True).stdout)
           for _ in range(runs)]
    return statistics.median(out)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--runs", type=int, default=30)
    args = parser.parse_args()
    data_dir = temp_dir()
    # Warm the bytecode caches so the first run is not a compile.
    time_initialize(acpd_argv(data_dir), 2)
    time_initialize(sdk_argv(), 2)

    baseline = median_ms(time_python_pass(args.runs))
    acpd_t, acpd_rss, acpd_rss_later = time_initialize(acpd_argv(data_dir), args.runs)
    sdk_t, sdk_rss, _ = time_initialize(sdk_argv(), args.runs)
    acpd_ms, sdk_ms = median_ms(acpd_t), median_ms(sdk_t)

    print(f"startup: spawn to initialize answer, median of {args.runs} ({environment()})")
    print(f"  python -c pass (process baseline)  {baseline:7.1f} ms")
    print(f"  acpd serve                         {acpd_ms:7.1f} ms   "
          f"peak RSS {max(acpd_rss):.1f} MB at answer, {max(acpd_rss_later):.1f} MB after warm-up")
    print(f"  official SDK minimal agent         {sdk_ms:7.1f} ms   peak RSS {max(sdk_rss):.1f} MB")
    speed_up = sdk_ms / acpd_ms
    print(f"  ratio acpd / SDK agent: {acpd_ms / sdk_ms:.2f} (the SDK is {speed_up:.1f}x slower)")
    print(f"  ratio acpd / python -c pass: {acpd_ms / baseline:.2f}")
    ok_time = acpd_ms < 100
    ok_mem = max(acpd_rss) < 40
    print(f"  target < 100 ms: {'met' if ok_time else 'MISSED'}; "
          f"target < 40 MB when initialize is answered: {'met' if ok_mem else 'MISSED'}")
    later = max(acpd_rss_later)
    print(f"  once the runtime is loaded (config, store, tools, ACP models: what the first "
          f"session needs) acpd holds {later:.1f} MB, {'under' if later < 40 else 'over'} 40 MB; "
          f"the SDK agent holds {max(sdk_rss):.1f} MB at its answer")
    floor, floor_plugins = stack_floor(5, []), stack_floor(5, ["--plugins"])
    print(f"  the stack alone (benchmarks/stack_floor.py: asyncio+ssl, anyio, uvloop, orjson, "
          f"sqlite3, pydantic and one model, watchfiles, tree-sitter, a running loop; no acpd "
          f"code): {floor:.1f} MB ({floor_plugins:.1f} MB with pydantic's plugin finder); "
          f"acpd's own share of the loaded runtime: {later - floor:.1f} MB")
    return 0


if __name__ == "__main__":
    sys.exit(main())
