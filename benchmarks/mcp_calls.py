"""What acpd adds to an MCP tool call, against the bare SDK client in the same run.

Both sides talk to the same real stdio MCP server (tests/mcp/server.py, written with the
`mcp` SDK), one `echo` call at a time:
  - baseline: the SDK's own `stdio_client` + `ClientSession.call_tool` (no policy, no card);
  - acpd: `ToolPipeline.run("mcp__srv__echo")` over acpd's SessionServers (allowlisted, so
    no prompt): schema check, policy and trust decision, the cards serialised as the daemon
    sends them, the call over acpd's own stdio transport, output stage (filters, secret
    scan, redaction), an audit line written to a real file.
Overhead = median(acpd) - median(baseline). Also: time to a usable server (spawn,
initialize, tools/list) both ways, the SDK import included only on acpd's side (its first
prompt pays it, in a worker thread; the baseline imported it already).

Run: .venv/bin/python benchmarks/mcp_calls.py [--calls N]
(Not named mcp.py: a script of that name would shadow the SDK.)
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import anyio
import orjson

ROOT = Path(__file__).resolve().parent.parent
SERVER_ARGS = ["-m", "tests.mcp.server", "stdio"]


async def baseline(calls: int) -> dict[str, float]:
    from mcp.client.session import ClientSession
    from mcp.client.stdio import StdioServerParameters, stdio_client

    params = StdioServerParameters(command=sys.executable, args=SERVER_ARGS, cwd=str(ROOT),
                                   env={"PYTHONPATH": str(ROOT)})
    t0 = time.perf_counter()
    async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
        await session.initialize()
        await session.list_tools()
        started = time.perf_counter() - t0
        times = []
        for n in range(calls):
            t = time.perf_counter()
            result = await session.call_tool("echo", {"text": f"x{n}"})
            times.append(time.perf_counter() - t)
            assert not result.is_error
    return {"start_s": started, "median_ms": statistics.median(times) * 1000,
            "p95_ms": statistics.quantiles(times, n=20)[18] * 1000}


async def through_acpd(calls: int, data: Path) -> dict[str, float]:
    from acpd.daemon import updates
    from acpd.daemon.local import LocalCommandRunner, LocalFileSystem
    from acpd.mcpclient.config import McpConfig, McpServerConfig
    from acpd.mcpclient.hub import SessionServers
    from acpd.mcpclient.servers import ServerParams
    from acpd.tools.audit import AuditLog
    from acpd.tools.builtin import core_sources
    from acpd.tools.permissions import ToolPolicy
    from acpd.tools.pipeline import CallEnv, ToolPipeline
    from acpd.tools.registry import ToolRegistry
    from acpd.tools.state import SessionTools

    class Observer:
        async def publish(self, view: Any, *, first: bool) -> None:
            orjson.dumps({"params": {"update": updates.tool_call(view, first=first)}})

        async def ask(self, view: Any) -> Any:
            raise AssertionError("an allowlisted tool never asks")

    class Groups:
        def add(self, pgid: int) -> None: ...

        def discard(self, pgid: int) -> None: ...

    params = ServerParams("srv", "stdio", command=sys.executable, args=tuple(SERVER_ARGS),
                          env=(("PYTHONPATH", str(ROOT)),))
    config = McpConfig(servers={"srv": McpServerConfig(allow=["echo"])})
    async with anyio.create_task_group() as tg:
        def spawn(job: Callable[[], Awaitable[None]]) -> None:
            tg.start_soon(job)

        async def say(text: str) -> None:
            raise AssertionError(text)

        servers = SessionServers([params], str(ROOT), config, spawn=spawn, groups=Groups(),
                                 say=say)
        t0 = time.perf_counter()
        await servers.prepare()
        started = time.perf_counter() - t0
        pipeline = ToolPipeline(ToolRegistry.from_sources(core_sources()),
                                ToolPolicy(("core__*", "mcp__*")), AuditLog(data / "a.jsonl"))
        env = CallEnv(str(ROOT), (str(ROOT),), "ask", LocalFileSystem(), LocalCommandRunner(),
                      Observer(), state=SessionTools(extra=servers), session_id="bench")
        times = []
        for n in range(calls):
            t = time.perf_counter()
            result = await pipeline.run(f"tc_{n}", "mcp__srv__echo", {"text": f"x{n}"}, env)
            times.append(time.perf_counter() - t)
            assert result.error is None, result.text
        await servers.stop()
        tg.cancel_scope.cancel()
    return {"start_s": started, "median_ms": statistics.median(times) * 1000,
            "p95_ms": statistics.quantiles(times, n=20)[18] * 1000}


async def main(calls: int) -> dict[str, Any]:
    with tempfile.TemporaryDirectory() as tmp:
        acpd = await through_acpd(calls, Path(tmp))  # first: it pays the SDK import
        base = await baseline(calls)
    return {
        "calls": calls,
        "baseline (SDK client)": base,
        "acpd pipeline": acpd,
        "overhead_median_ms": acpd["median_ms"] - base["median_ms"],
        "ratio_median": acpd["median_ms"] / base["median_ms"],
    }


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=300)
    args = parser.parse_args()
    sys.path.insert(0, str(ROOT))
    print(json.dumps(anyio.run(main, args.calls), indent=2))
