"""What a plugin tool call costs in its runtime, next to bash doing the same in the same run.

Printed, each as median and p95 over N runs (no target in the issue; figures to watch):
  1. baseline: the local runner's confined `bash -c 'cat hello.txt'` (what the model would
     otherwise run);
  2. a native plugin (a shell script answering one JSON line) through run_native: the same
     sandbox plus the request/response wire;
  3. the example WASI plugin (examples/plugins/wasi_files, built from its WAT) through
     run_wasi: one engine, compile and instantiate per call, a read-only workspace mount.
Run: .venv/bin/python benchmarks/plugins.py [--runs N]
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from collections.abc import Awaitable, Callable
from pathlib import Path

import anyio

from acpd.daemon.local import LocalCommandRunner
from acpd.sandbox.rules import PathRules
from acpd.tools.capabilities import CommandRequest
from acpd.tools.plugins.native import run_native
from acpd.tools.plugins.protocol import encode_request
from acpd.tools.plugins.wasi import Preopen, run_wasi

EXAMPLE = Path(__file__).resolve().parents[1] / "examples" / "plugins" / "wasi_files"
SCRIPT = "#!/bin/sh\ncat >/dev/null\necho '{\"ok\": true, \"output\": \"hi\"}'\n"


async def timed(runs: int, call: Callable[[], Awaitable[object]]) -> tuple[float, float]:
    await call()  # warm-up
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        await call()
        times.append((time.perf_counter() - start) * 1000)
    times.sort()
    return statistics.median(times), times[int(len(times) * 0.95) - 1]


async def main(runs: int) -> None:
    import wasmtime

    with tempfile.TemporaryDirectory() as tmp:
        ws = Path(tmp) / "ws"
        ws.mkdir()
        (ws / "hello.txt").write_text("hello\n")
        tool = Path(tmp) / "tool.sh"
        tool.write_text(SCRIPT)
        tool.chmod(0o755)
        module = Path(tmp) / "files.wasm"
        module.write_bytes(wasmtime.wat2wasm((EXAMPLE / "files.wat").read_text()))
        runner = LocalCommandRunner()
        request = encode_request("bench", "t", {"path": "hello.txt"}, "/workspace")

        async def nothing(*_args: object) -> None:
            return None

        async def bash() -> object:
            return await runner.run(CommandRequest("cat hello.txt", str(ws), 30, 1 << 20,
                                                   roots=(str(ws),)), nothing, nothing)

        async def native() -> object:
            return await run_native("t", str(tool), request, cwd=str(ws), roots=(str(ws),),
                                    rules=PathRules(), runtime_ms=30_000, stdout_cap=1 << 20,
                                    stderr_cap=1 << 16)

        async def wasi() -> object:
            return await run_wasi("t", str(module), request,
                                  [Preopen(str(ws), "/workspace", True)], runtime_ms=30_000,
                                  stdout_cap=1 << 20, stderr_cap=1 << 16)

        base = await timed(runs, bash)
        print(f"baseline bash (local runner, sandboxed): median {base[0]:.1f} ms, "
              f"p95 {base[1]:.1f} ms")
        for name, call in (("native plugin", native), ("WASI plugin", wasi)):
            median, p95 = await timed(runs, call)
            print(f"{name}: median {median:.1f} ms, p95 {p95:.1f} ms "
                  f"({median / base[0]:.2f}x the baseline)")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=30)
    anyio.run(main, parser.parse_args().runs)
