"""Runner overhead per tool call, and 1,000 `read` calls through the real daemon.

1. In process: a no-op tool registered like any other, called N times through the runner
   (resolve, quota, validation, policy, the `tool_call` / updates serialised as the daemon
   would, output validation, secret scan, redaction, an audit line written to a real file)
   next to the baseline measured in the same run: the tool's `execute` called directly on
   arguments already parsed. Overhead = median(runner) - median(baseline). Target: < 0.5 ms.
2. Through `acpd serve` over its stdio pipe: one prompt whose scripted model asks for 1,000
   `read` calls of small files, PER_REPLY to a reply (under the default cap of 64 calls a
   reply, `[agent] max_tool_calls_per_reply`), each reply reading 5 files 10 times over;
   with the result cache off (each one really reads) and on (repeats hit). The per-call
   time is the prompt's wall time over 1,000.

Run: .venv/bin/python benchmarks/pipeline.py
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
from typing import Any

import anyio
import orjson

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import Pipe, acpd_argv, environment, temp_dir
from pydantic import BaseModel, ConfigDict, Field

from acpd.daemon import updates
from acpd.daemon.local import LocalCommandRunner, LocalFileSystem
from acpd.tools.audit import AuditLog
from acpd.tools.builtin import core_sources
from acpd.tools.cache import ResultCache
from acpd.tools.permissions import ToolPolicy
from acpd.tools.pipeline import CallEnv, ToolPipeline
from acpd.tools.registry import ToolRegistry, ToolSource
from acpd.tools.spec import (
    Effect,
    ToolCallView,
    ToolContext,
    ToolOutput,
    ToolSpec,
    redaction,
)
from acpd.tools.state import SessionTools


class NoopParams(BaseModel):
    model_config = ConfigDict(extra="forbid")

    path: str = Field(min_length=1)
    limit: int | None = Field(None, ge=1)


async def noop(args: NoopParams, ctx: ToolContext) -> ToolOutput:
    return ToolOutput(f"noop {args.path}", raw={"path": args.path})


NOOP = ToolSpec(
    id="plugin__noop", name="noop", description="does nothing", params=NoopParams,
    effect=Effect.READ_ONLY, kind="read", execute=noop, title=lambda a: f"noop {a.path}",
    redaction=redaction(("path", "limit"), ("path",)),
)


class WireObserver:
    """Builds and serialises each update exactly as the daemon does, then drops the bytes."""

    def __init__(self) -> None:
        self.bytes = 0

    async def publish(self, view: ToolCallView, *, first: bool) -> None:
        message = {"jsonrpc": "2.0", "method": "session/update",
                   "params": {"sessionId": "s", "update": updates.tool_call(view, first=first)}}
        self.bytes += len(orjson.dumps(message))

    async def ask(self, view: ToolCallView) -> Any:
        raise AssertionError("a read-only tool never asks")


async def in_process(calls: int, data: Path) -> dict[str, float]:
    registry = ToolRegistry.from_sources([*core_sources(), ToolSource("bench", [NOOP])])
    pipeline = ToolPipeline(registry, ToolPolicy(("core__*", "plugin__*")),
                            AuditLog(data / "audit.jsonl"))
    state = SessionTools(cache=ResultCache(enabled=False))
    env = CallEnv("/tmp", ("/tmp",), "ask", LocalFileSystem(), LocalCommandRunner(),
                  WireObserver(), state=state, session_id="bench")
    ctx = ToolContext("c", "/tmp", ("/tmp",), env.fs, env.runner, _nothing, lambda _c: None)
    args = {"path": "src/main.py", "limit": 10}
    parsed = NoopParams.model_validate(args)
    direct: list[float] = []
    runner: list[float] = []
    for n in range(calls + 500):  # the first 500 of each are warm-up
        t0 = time.perf_counter()
        await noop(parsed, ctx)
        t1 = time.perf_counter()
        result = await pipeline.run(f"tc_{n}", "noop", args, env)
        t2 = time.perf_counter()
        assert result.error is None, result.text
        if n >= 500:
            direct.append(t1 - t0)
            runner.append(t2 - t1)
    lines = (data / "audit.jsonl").read_bytes().count(b"\n")
    assert lines == calls + 500, lines
    ms = 1000
    return {
        "baseline_median_ms": statistics.median(direct) * ms,
        "runner_median_ms": statistics.median(runner) * ms,
        "overhead_median_ms": (statistics.median(runner) - statistics.median(direct)) * ms,
        "runner_p95_ms": statistics.quantiles(runner, n=20)[18] * ms,
    }


async def _nothing(_content: Any) -> None:
    return None


PER_REPLY = 50
"""Tool calls in one model reply (the default cap is 64)."""
FILES_PER_REPLY = 5


def through_daemon(calls: int, cache: bool) -> dict[str, float]:
    work = Path(temp_dir())
    ws = work / "ws"
    ws.mkdir()
    # Each reply reads FILES_PER_REPLY files of its own (identical rounds would stop the
    # turn as a loop), each several times (what the result cache can serve).
    names = [f"hello{i // PER_REPLY}_{i % FILES_PER_REPLY}.txt" for i in range(calls)]
    for name in set(names):
        (ws / name).write_text(f"{name}\n" * 20)
    script = work / "script.json"
    reads = [{"name": "read", "arguments": {"path": name}} for name in names]
    replies = [
        {"tool_calls": reads[start:start + PER_REPLY]} for start in range(0, calls, PER_REPLY)
    ]
    script.write_text(json.dumps({"turns": [*replies, {"text": "done"}]}))
    config = work / "acpd.toml"
    config.write_text(f"[agent]\nmax_tool_iterations = {len(replies) + 1}\n"
                      "context_budget_tokens = 100000000\n"
                      f"[tools.result_cache]\nenabled = {'true' if cache else 'false'}\n")
    os.environ["ACPD_CONFIG"] = str(config)
    pipe = Pipe(acpd_argv(str(work / "data"), "--model", f"scripted:{script}"))
    try:
        pipe.call("initialize", {"protocolVersion": 1, "clientCapabilities": {}})
        session = pipe.call("session/new", {"cwd": str(ws), "mcpServers": []})
        session_id = session["result"]["sessionId"]
        prompt = {"sessionId": session_id, "prompt": [{"type": "text", "text": "read"}]}
        start = time.perf_counter()
        response, notes = pipe.until_response(pipe.send("session/prompt", prompt))
        elapsed = time.perf_counter() - start
        assert "result" in response, response
        assert notes >= 3 * calls, notes
    finally:
        pipe.close()
    audited = (work / "data" / "audit.jsonl").read_bytes().count(b"\n")
    assert audited == calls, audited
    return {"total_s": elapsed, "per_call_ms": elapsed / calls * 1000}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--calls", type=int, default=5000)
    parser.add_argument("--daemon-calls", type=int, default=1000)
    options = parser.parse_args()
    print(f"acpd pipeline benchmark ({environment()})")
    with tempfile.TemporaryDirectory() as data:
        result = anyio.run(in_process, options.calls, Path(data))
    print(f"\n1. runner overhead, {options.calls} calls of a no-op tool (after 500 warm-up):")
    print(f"   baseline (execute called directly)  median {result['baseline_median_ms']:.4f} ms")
    print(f"   through the runner                   median {result['runner_median_ms']:.4f} ms"
          f"  (p95 {result['runner_p95_ms']:.4f} ms)")
    verdict = "meets" if result["overhead_median_ms"] < 0.5 else "MISSES"
    print(f"   overhead                             median {result['overhead_median_ms']:.4f} ms"
          f"  ({verdict} the 0.5 ms target)")
    print(f"\n2. {options.daemon_calls} `read` calls through acpd serve (scripted model):")
    for cache in (False, True):
        daemon = through_daemon(options.daemon_calls, cache)
        label = "cache on (repeats hit)" if cache else "cache off"
        print(f"   {label:<24} {daemon['total_s']:.3f} s in all, "
              f"{daemon['per_call_ms']:.3f} ms per call")


if __name__ == "__main__":
    main()
