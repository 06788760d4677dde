"""Per-turn tool catalog: token savings of the offline filter, and the cost of building it.

    .venv/bin/python benchmarks/catalog.py [--quick]

Catalog: the realistic 100-tool set of tests/catalog/catalog100.py (17 core-like tools and 83
from GitHub, Jira, Slack, Kubernetes, Docker, AWS, Postgres, browser, mail, Sentry, Terraform,
npm and docs servers) and its 20 prompts, each naming the tool a person would expect.

(a) Savings: for every prompt, the tokens of the tool definitions a request carries (name,
description and JSON Schema as the providers encode them, at the daemon's own estimate of 4
characters a token, daemon/turn.py) with the BM25 filter (`[agent.catalog] enabled`, top_k 5
and 10, the default always_on list, of which 4 tools are in this catalog) against the same
request unfiltered, plus the recall: how many prompts kept their expected tool.
(b) Build time per turn, median over many turns cycling through the prompts, against a named
baseline measured in the same run: the unfiltered build acpd did before (one ToolDefinition
per tool from `spec.input_schema()`). The candidate is the whole builder (filter, dependency
gates with rules on 20 tools, TAFC), warm (its per-tool caches filled, as from the second turn
on) and cold (a new builder and an empty stem cache each turn, as at the first turn after
start-up or a plugin reload): cold wall time, and the part of it spent on the event loop (the
per-tool preparation runs on a worker thread). Target: under 2 ms for 100 tools.
"""

from __future__ import annotations

import asyncio
import statistics
import sys
import time
from pathlib import Path

import orjson

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))
sys.path.insert(0, str(ROOT))

from tests.catalog.catalog100 import QUERIES, specs  # noqa: E402

from acpd.providers.base import Message, ToolDefinition  # noqa: E402
from acpd.tools.catalog import CatalogBuilder, CatalogConfig, CatalogState  # noqa: E402
from acpd.tools.catalog.bm25 import stem  # noqa: E402
from acpd.tools.spec import ToolSpec  # noqa: E402

CHARS_PER_TOKEN = 4
Entries = list[tuple[str, ToolSpec]]
TARGET_MS = 2.0


def tokens(tools: list[ToolDefinition]) -> int:
    wire = [{"name": t.name, "description": t.description, "parameters": t.parameters}
            for t in tools]
    return len(orjson.dumps(wire)) // CHARS_PER_TOKEN


def baseline(entries: Entries) -> list[ToolDefinition]:
    """What daemon/turn.py built before the catalog existed."""
    return [ToolDefinition(name, s.description, s.input_schema()) for name, s in entries]


async def savings(entries: Entries) -> None:
    full = tokens(baseline(entries))
    print(f"(a) token savings, {len(entries)} tools, {len(QUERIES)} prompts; unfiltered "
          f"request: {full} tokens of tool definitions")
    print(f"    {'config':<22} {'sent tokens':>12} {'unfiltered':>11} {'saved':>7} "
          f"{'tools/turn':>10} {'recall':>7}")
    for top_k in (5, 10):
        builder = CatalogBuilder(CatalogConfig(enabled=True, top_k=top_k))
        sent = hits = count = 0
        for query, expected in QUERIES:
            tools = await builder.build(entries, [Message("user", query)], CatalogState())
            sent += tokens(tools)
            count += len(tools)
            hits += expected in {t.name for t in tools}
        total = full * len(QUERIES)
        print(f"    {'BM25 top_k=' + str(top_k):<22} {sent:>12} {total:>11} "
              f"{100 * (1 - sent / total):>6.1f}% {count / len(QUERIES):>10.1f} "
              f"{hits:>3}/{len(QUERIES)}")


def full_config() -> CatalogConfig:
    rules = {s.name: {"requires": ["read_file"], "prefers": ["list_directory"]}
             for s in specs()[20:40]}
    return CatalogConfig.model_validate({
        "enabled": True, "top_k": 10, "always_on": ["memory_*"],
        "tafc": {"enabled": True, "complexity_threshold": 0.5},
        "dependencies": {"enabled": True, "rules": rules},
    })


async def build_times(entries: Entries, turns: int) -> None:
    histories = [[Message("user", q)] for q, _ in QUERIES]
    times: dict[str, list[float]] = {"baseline": [], "warm": [], "cold": [], "cold loop": []}
    warm = CatalogBuilder(full_config())
    state = CatalogState()
    await warm.build(entries, histories[0], state)
    config = full_config()
    for n in range(turns):
        history = histories[n % len(histories)]
        start = time.perf_counter()
        baseline(entries)
        times["baseline"].append(time.perf_counter() - start)
        start = time.perf_counter()
        await warm.build(entries, history, state)
        times["warm"].append(time.perf_counter() - start)
        fresh = CatalogBuilder(config)
        stem.cache_clear()  # cold: nothing of an earlier build is known
        start = time.perf_counter()
        await fresh.build(entries, history, CatalogState())
        times["cold"].append(time.perf_counter() - start)
        # The first turn after start-up: the daemon prepares the tools it knows while the
        # runtime loads (CatalogBuilder.prewarm); this is also the part of a cold build
        # that runs on the event loop (the preparation is on a thread).
        fresh = CatalogBuilder(config)
        stem.cache_clear()
        fresh.prewarm(s for _, s in entries)
        start = time.perf_counter()
        await fresh.build(entries, history, CatalogState())
        times["cold loop"].append(time.perf_counter() - start)
    base = statistics.median(times["baseline"]) * 1000
    print(f"\n(b) build time per turn, {len(entries)} tools, median of {turns} turns")
    print(f"    baseline (unfiltered, spec.input_schema() per tool): {base:.3f} ms")
    for name, what in (("warm", "every turn after the first"),
                       ("cold", "first turn of a tool set nobody prepared (MCP tools, a "
                        "plugin reload): wall time, mostly on a worker thread"),
                       ("cold loop", "first turn after start-up (prewarmed while the runtime "
                        "loads), and a cold build's event-loop time")):
        ms = statistics.median(times[name]) * 1000
        verdict = "under" if ms < TARGET_MS else "OVER"
        print(f"    builder {name:<9} {ms:7.3f} ms = {ms / base:5.2f}x baseline, {verdict} the "
              f"{TARGET_MS:g} ms target  ({what})")



def main() -> None:
    quick = "--quick" in sys.argv
    entries: Entries = [(s.name, s) for s in specs()]
    asyncio.run(savings(entries))
    asyncio.run(build_times(entries, 100 if quick else 1000))


if __name__ == "__main__":
    main()
