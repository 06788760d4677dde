"""Spawn-to-`initialize`-answer time and memory, next to `python -c pass` and an SDK agent.

Targets (issue 2): acpd answers in under 0.1 s (median) and stays under 40 MB after
initialize. Issue 12: `acpd serve --remote=auto` (the forwarder to the shared daemon)
answers in under 60 ms with the daemon running and under 150 ms when it must start it;
measured beside the direct `acpd serve` of the same run, with the time to the first
`session/new` answer too (where the shared daemon's already loaded runtime shows).
Run: .venv/bin/python benchmarks/startup.py [--runs N] [--remote-runs N]
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
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


def time_to_session(argv: list[str], runs: int, cwd: str,
                    before: Callable[[], None] | None = None) -> tuple[list[float], list[float]]:
    """Per run: seconds from spawn to the initialize answer, and to the session/new answer."""
    to_init, to_session = [], []
    for _ in range(runs):
        if before is not None:
            before()
        start = time.perf_counter()
        pipe = Pipe(argv)
        pipe.call("initialize", INIT)
        to_init.append(time.perf_counter() - start)
        answer = pipe.call("session/new", {"cwd": cwd, "mcpServers": []})
        assert "result" in answer, answer
        to_session.append(time.perf_counter() - start)
        pipe.close()
    return to_init, to_session


def stop_shared_daemon() -> None:
    subprocess.run([sys.executable, "-m", "acpd", "daemon", "stop"], check=True,
                   capture_output=True)


def remote_figures(data_dir: str, runs: int) -> None:
    """The forwarder, daemon running and daemon to start, beside the direct daemon."""
    runtime = temp_dir()
    os.chmod(runtime, 0o700)
    os.environ["XDG_RUNTIME_DIR"] = runtime  # a private daemon for this run only
    cwd = temp_dir()
    direct = acpd_argv(data_dir)
    remote = acpd_argv(data_dir, "--remote=auto")
    try:
        time_to_session(remote, 2, cwd)  # bytecode caches, and a daemon running
        baseline = median_ms(time_python_pass(runs))
        d_init, d_new = time_to_session(direct, runs, cwd)
        r_init, r_new = time_to_session(remote, runs, cwd)
        s_init, s_new = time_to_session(remote, runs, cwd, before=stop_shared_daemon)
    finally:
        stop_shared_daemon()
    direct_ms = median_ms(d_init)
    print(f"shared daemon (issue 12): spawn to answer, median of {runs} ({environment()}); "
          f"python -c pass {baseline:.1f} ms in this run")
    rows = [("acpd serve (direct, own runtime)", d_init, d_new),
            ("acpd serve --remote=auto, daemon running", r_init, r_new),
            ("acpd serve --remote=auto, daemon started", s_init, s_new)]
    for label, init, new in rows:
        print(f"  {label:42} initialize {median_ms(init):7.1f} ms   "
              f"session/new {median_ms(new):7.1f} ms")
    running, started = median_ms(r_init), median_ms(s_init)
    print(f"  ratio forwarder / direct at initialize: {running / direct_ms:.2f} (daemon running), "
          f"{started / direct_ms:.2f} (daemon started)")
    print(f"  ratio at session/new, daemon running / direct: "
          f"{median_ms(r_new) / median_ms(d_new):.2f}")
    print(f"  forwarder's own start beyond python -c pass: {running - baseline:.1f} ms "
          f"(direct acpd serve: {direct_ms - baseline:.1f} ms)")
    print(f"  target < 60 ms with the daemon running: {'met' if running < 60 else 'MISSED'}; "
          f"< 150 ms when it must start: {'met' if started < 150 else 'MISSED'}")


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
    parser.add_argument("--remote-runs", type=int, default=10,
                        help="runs of each shared-daemon figure (0: skip them)")
    parser.add_argument("--only-remote", action="store_true",
                        help="only the shared-daemon figures")
    args = parser.parse_args()
    if args.only_remote:
        remote_figures(temp_dir(), args.remote_runs)
        return 0
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
    if args.remote_runs > 0:
        remote_figures(data_dir, args.remote_runs)
    return 0


if __name__ == "__main__":
    sys.exit(main())
