"""The memory floor of acpd's prescribed stack, without a line of acpd: a process that imports
what the daemon's runtime is built on (asyncio with its ssl, anyio, uvloop, orjson, sqlite3,
pydantic with one model, watchfiles, tree-sitter-bash, platformdirs, ahocorasick-rs), parses
one command and runs a uvloop loop, then prints its peak RSS in MB. Spawned by startup.py,
which prints it beside acpd's own figure. `--plugins`: let pydantic load its plugin finder
(importlib.metadata) as it does by default; acpd serve skips it (daemon/lean.py).
"""

from __future__ import annotations

import sys


def peak_rss_mb() -> float:
    with open("/proc/self/status") as status:
        for line in status:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    return float("nan")


def main() -> None:
    if "--plugins" not in sys.argv:
        from acpd.daemon.lean import skip_pydantic_plugins

        skip_pydantic_plugins()
    import asyncio  # noqa: F401
    import sqlite3  # noqa: F401
    import tomllib  # noqa: F401

    import anyio
    import orjson  # noqa: F401
    import platformdirs  # noqa: F401
    import pydantic
    import tree_sitter
    import tree_sitter_bash
    import uvloop  # noqa: F401
    import watchfiles  # noqa: F401

    class Model(pydantic.BaseModel):
        x: int = pydantic.Field(0, ge=0)
        names: list[str] = []

    Model(x=1)
    import ahocorasick_rs  # noqa: F401

    parser = tree_sitter.Parser(tree_sitter.Language(tree_sitter_bash.language()))
    parser.parse(b"git status && ls -la | grep x")

    async def tick() -> None:
        await anyio.sleep(0.001)

    anyio.run(tick, backend_options={"use_uvloop": True})
    print(f"{peak_rss_mb():.1f}")


if __name__ == "__main__":
    main()
