"""Output filter throughput, memory and savings.

    .venv/bin/python benchmarks/filters.py [--quick]

Throughput: `FilterSet.apply` (sanitise + rule + preserved-line pass + secret scan) on a
generated 10 MB `cargo test` log, a 100 MB noisy build log (cargo build, make, and the log-dedup
rule) and a 100 MB application log with timestamps and request UUIDs (log-dedup), next to a
named baseline measured in the same run on the same data: one `str.splitlines()` pass (the
least any line filter must do). Each case runs in a fresh child process so its peak RSS
(ru_maxrss) is its own; the table shows it next to the size of the input string.
Savings: line savings per built-in rule on the committed samples (tests/fixtures/outputs),
beside the figures Zeph reports (cargo test ~91 %, clippy ~75 %, git log ~60 %).
"""

from __future__ import annotations

import json
import random
import resource
import subprocess
import sys
import time
import tomllib
import uuid
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))

from acpd.tools.filters import build_filter_set  # noqa: E402

MB = 1_000_000
ZEPH = {"cargo-test": 91.0, "cargo-clippy": 75.0, "git-log": 60.0}


def cargo_test_log(size: int) -> str:
    rnd = random.Random(1)
    parts: list[str] = []
    total = 0
    suite = 0
    while total < size:
        suite += 1
        block = [
            f"     Running unittests src/lib.rs (target/debug/deps/crate{suite}-0f3a9c)",
            "",
            "running 400 tests",
        ]
        for i in range(400):
            status = "ok" if rnd.random() > 0.0005 else "FAILED"
            block.append(
                f"test module_{suite}::tests::case_{i}_checks_the_ledger_balance ... {status}"
            )
        block += [
            "",
            f"test result: ok. 400 passed; 0 failed; 0 ignored; 0 measured; 0 filtered "
            f"out; finished in 0.{rnd.randint(10, 99)}s",
            "",
        ]
        chunk = "\n".join(block) + "\n"
        parts.append(chunk)
        total += len(chunk)
    return "".join(parts)[:size]


def noisy_build_log(size: int) -> str:
    """cargo-build-shaped: coloured `Compiling` lines, \\r progress bars, warnings, blank runs."""
    rnd = random.Random(2)
    parts: list[str] = []
    total = 0
    n = 0
    while total < size:
        n += 1
        r = rnd.random()
        if r < 0.55:
            version = f"v0.{n % 40}.{n % 7}"
            line = f"\x1b[1m\x1b[32m   Compiling\x1b[0m crate-{n} {version} (/build/src/crate-{n})"
        elif r < 0.75:
            line = "".join(
                f"\r    Building [{'=' * k}>{' ' * (20 - k)}] {k * 50}/1000: crate-{n}"
                for k in range(0, 21, 5)
            )
        elif r < 0.85:
            line = f"\x1b[1m\x1b[32m  Downloaded\x1b[0m dep-{n} v1.{n % 9}.0"
        elif r < 0.95:
            line = (
                f"warning: unused variable: `x{n}`\n  --> src/m{n}.rs:{n % 300}:9\n   |\n"
                f"{n % 300:3} |     let x{n} = compute();\n"
                "   |         ^^ help: prefix it with an underscore"
            )
        else:
            line = "\n\n\n"
        chunk = line + "\n"
        parts.append(chunk)
        total += len(chunk)
    return "".join(parts)[:size]


def app_log(size: int) -> str:
    """journalctl/docker-logs-shaped: ISO timestamps, request UUIDs, durations, a few errors."""
    rnd = random.Random(3)
    parts: list[str] = []
    total = 0
    n = 0
    while total < size:
        n += 1
        ts = f"2025-03-04T{n // 3600 % 24:02d}:{n // 60 % 60:02d}:{n % 60:02d}.{n % 997:03d}Z"
        r = rnd.random()
        if r < 0.5:
            rid = str(uuid.UUID(int=rnd.getrandbits(128), version=4))
            line = f"{ts} INFO  http: GET /health 200 in {rnd.randint(1, 9)}ms request_id={rid}"
        elif r < 0.9:
            line = f"{ts} DEBUG cache: hit ratio 0.{rnd.randint(80, 99)} over last 60s"
        elif r < 0.999:
            line = f"{ts} INFO  worker[{n % 8}]: job {n} done in {rnd.random():.3f}s"
        else:
            line = f"{ts} ERROR db: connection refused (attempt {n % 5})"
        chunk = line + "\n"
        parts.append(chunk)
        total += len(chunk)
    return "".join(parts)[:size]


CASES = {
    "cargo-test 10 MB": ("cargo test --workspace 2>&1", cargo_test_log, 10 * MB),
    "cargo-build 100 MB": ("cd /build && cargo build --release 2>&1", noisy_build_log, 100 * MB),
    "make 100 MB": ("make -j2", noisy_build_log, 100 * MB),
    "log-dedup 100 MB": ("tail -n 2000000 build.log", noisy_build_log, 100 * MB),
    "log-dedup app 100 MB": ("docker logs api", app_log, 100 * MB),
}


def run_case(name: str) -> dict[str, float]:
    command, generate, size = CASES[name]
    data = generate(size)
    filters = build_filter_set()
    rss_data = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    t0 = time.perf_counter()
    lines = data.splitlines()
    baseline = time.perf_counter() - t0
    del lines
    rss_base = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    t0 = time.perf_counter()
    result = filters.apply(command, data, 0)
    elapsed = time.perf_counter() - t0
    rss_peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    return {
        "mb": len(data) / MB,
        "rule": result.rule_name or "-",  # type: ignore[dict-item]
        "seconds": elapsed,
        "mbps": len(data) / MB / elapsed,
        "baseline_mbps": len(data) / MB / baseline,
        "lines_in": result.lines_in,
        "lines_out": result.lines_out,
        "rss_data": rss_data,
        "rss_baseline": rss_base,
        "rss_peak": rss_peak,
        "confidence": result.confidence.label,  # type: ignore[dict-item]
    }


def dedup_keys_table() -> None:
    """The dedup strategy's keys on the same lines: block-wise (what it runs) against the
    line-by-line definition it replaced (`line_key`, one regex pass per pattern per line)."""
    from acpd.tools.filters.sanitize import sanitize_output
    from acpd.tools.filters.strategies.base import CHECK_EVERY
    from acpd.tools.filters.strategies.normalize import block_keys, line_key

    print(f"\n{'dedup keys, 20 MB':20} {'block-wise MB/s':>15} {'line by line MB/s':>17}  same")
    for name, generate in (("build log", noisy_build_log), ("app log", app_log)):
        data = sanitize_output(generate(20 * MB))
        lines = data.splitlines()
        t0 = time.perf_counter()
        fast = [
            key
            for start in range(0, len(lines), CHECK_EVERY)
            for key in block_keys(lines[start : start + CHECK_EVERY], True)
        ]
        t1 = time.perf_counter()
        slow = [line_key(x, True) if x else x for x in lines]
        t2 = time.perf_counter()
        mb = len(data) / MB
        print(f"{name:20} {mb / (t1 - t0):15.1f} {mb / (t2 - t1):17.1f}  {fast == slow}")


def savings_table() -> None:
    fixtures = ROOT / "tests" / "fixtures" / "outputs"
    samples = tomllib.loads((fixtures / "samples.toml").read_text())["sample"]
    filters = build_filter_set()
    per_rule: dict[str, list[int]] = {}
    print(f"\n{'rule':16} {'sample':22} {'in':>6} {'out':>5} {'saved':>7}  {'Zeph':>6}")
    for s in samples:
        r = filters.apply(s["command"], (fixtures / s["file"]).read_text(), s["exit_code"])
        acc = per_rule.setdefault(s["rule"], [0, 0])
        acc[0] += r.lines_in
        acc[1] += r.lines_out
        zeph = f"{ZEPH[s['rule']]:.0f} %" if s["rule"] in ZEPH else ""
        pct = 100 * r.removed_lines / r.lines_in
        print(
            f"{s['rule']:16} {s['file']:22} {r.lines_in:6} {r.lines_out:5} {pct:6.1f}%  {zeph:>6}"
        )
    lines_in = sum(v[0] for v in per_rule.values())
    lines_out = sum(v[1] for v in per_rule.values())
    print(f"{'all samples':39} {lines_in:6} {lines_out:5} {100 * (1 - lines_out / lines_in):6.1f}%")


def main() -> None:
    if len(sys.argv) == 3 and sys.argv[1] == "--case":
        print(json.dumps(run_case(sys.argv[2])))
        return
    quick = "--quick" in sys.argv
    print("baseline: one str.splitlines() pass over the same string, same process")
    print(
        f"{'case':22} {'rule':12} {'MB':>5} {'filter MB/s':>11} {'baseline MB/s':>13} "
        f"{'lines in':>9} {'out':>6} {'RSS data':>9} {'peak RSS':>9} {'peak/data':>9}"
    )
    for name in CASES:
        if quick and "100 MB" in name:
            continue
        proc = subprocess.run(
            [sys.executable, __file__, "--case", name], capture_output=True, text=True, check=True
        )
        r = json.loads(proc.stdout)
        print(
            f"{name:22} {r['rule']:12} {r['mb']:5.0f} {r['mbps']:11.1f} {r['baseline_mbps']:13.1f} "
            f"{r['lines_in']:9} {r['lines_out']:6} {r['rss_data']:8.0f}M {r['rss_peak']:8.0f}M "
            f"{r['rss_peak'] / max(r['rss_data'], 1):9.2f}"
        )
    dedup_keys_table()
    savings_table()


if __name__ == "__main__":
    main()
