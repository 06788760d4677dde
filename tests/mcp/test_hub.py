"""SessionServers against the real MCP test server (tests/mcp/server.py) over stdio: names,
schemas, argument checks, results and errors in their categories, restart after a crash,
list_changed, and stop with no process left."""

from __future__ import annotations

import os
import sys
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path
from typing import Any

import anyio
import pytest

from acpd.mcpclient.config import McpConfig, McpServerConfig
from acpd.mcpclient.hub import SessionServers
from acpd.mcpclient.servers import ServerParams
from acpd.mcpclient.spec import McpToolSpec
from acpd.tools.errors import ErrorCategory, ToolError
from tests.e2e.harness import REPO, alive, marked, sleep_marker, wait_unmarked

pytestmark = [pytest.mark.anyio, pytest.mark.slow]


def stdio(name: str = "srv", *args: str, env: dict[str, str] | None = None) -> ServerParams:
    return ServerParams(
        name, "stdio", command=sys.executable, args=("-m", "tests.mcp.server", *args),
        env=tuple({"PYTHONPATH": str(REPO), **(env or {})}.items()),
    )


class Groups:
    def __init__(self) -> None:
        self.pgids: set[int] = set()

    def add(self, pgid: int) -> None:
        self.pgids.add(pgid)

    def discard(self, pgid: int) -> None:
        self.pgids.discard(pgid)


class Rig:
    def __init__(self, tg: anyio.abc.TaskGroup, tmp: Path) -> None:
        self.tg = tg
        self.tmp = tmp
        self.said: list[str] = []
        self.groups = Groups()

    def spawn(self, job: Callable[[], Awaitable[None]]) -> None:
        self.tg.start_soon(job)

    async def say(self, text: str) -> None:
        self.said.append(text)

    def servers(self, *params: ServerParams, config: McpConfig | None = None) -> SessionServers:
        return SessionServers(list(params), str(self.tmp), config or McpConfig(),
                              spawn=self.spawn, groups=self.groups, say=self.say)


@pytest.fixture
async def rig(tmp_path: Path) -> AsyncIterator[Rig]:
    async with anyio.create_task_group() as tg:
        yield Rig(tg, tmp_path)
        tg.cancel_scope.cancel()


def spec(servers: SessionServers, name: str) -> McpToolSpec:
    found = servers.resolve(name)
    assert isinstance(found, McpToolSpec), sorted(servers.specs)
    return found


async def run(servers: SessionServers, name: str, args: dict[str, Any]) -> Any:
    s = spec(servers, name)
    parsed = s.params.model_validate(args)
    assert s.precheck is not None
    s.precheck(parsed)
    return await s.execute(parsed, None)  # type: ignore[arg-type]


async def test_tools_are_listed_by_namespaced_name_with_the_servers_schema(rig: Rig) -> None:
    servers = rig.servers(stdio(), config=McpConfig(servers={"srv": McpServerConfig(
        allow=["echo"])}))
    await servers.prepare()
    try:
        listed = {s.name for s in servers.tools()}
        assert {"mcp__srv__echo", "mcp__srv__fail", "mcp__srv__crash"} <= listed
        echo = spec(servers, "mcp__srv__echo")
        assert echo.id == echo.name == "mcp__srv__echo" and echo.server == "srv"
        assert echo.tool == "echo" and echo.allowed and echo.title(None) == "srv: echo"
        assert not spec(servers, "mcp__srv__fail").allowed
        schema = echo.input_schema()
        assert schema["properties"]["text"]["type"] == "string"
        assert "title" not in schema and schema["required"] == ["text"]
        out = await run(servers, "mcp__srv__echo", {"text": "hi"})
        assert out.text == "echo: hi" and out.raw["server"] == "srv"
        assert rig.said == []
    finally:
        await servers.stop()


async def test_arguments_are_checked_against_the_schema_before_the_call(rig: Rig) -> None:
    servers = rig.servers(stdio())
    await servers.prepare()
    try:
        with pytest.raises(ToolError) as wrong_type:
            await run(servers, "mcp__srv__echo", {"text": 5})
        assert wrong_type.value.category is ErrorCategory.TYPE_MISMATCH
        with pytest.raises(ToolError) as unknown:
            await run(servers, "mcp__srv__echo", {"text": "a", "shell": "rm -rf /"})
        assert unknown.value.category is ErrorCategory.INVALID_PARAMETERS
        assert "shell" in unknown.value.message
        with pytest.raises(ToolError) as missing:
            await run(servers, "mcp__srv__echo", {})
        assert missing.value.category is ErrorCategory.INVALID_PARAMETERS
    finally:
        await servers.stop()


async def test_errors_map_to_categories(rig: Rig) -> None:
    servers = rig.servers(stdio(), config=McpConfig(call_timeout=3))
    await servers.prepare()
    try:
        with pytest.raises(ToolError) as failed:
            await run(servers, "mcp__srv__fail", {"reason": "no such city"})
        assert failed.value.category is ErrorCategory.PERMANENT_FAILURE
        assert "no such city" in failed.value.message
        with pytest.raises(ToolError) as slow:
            await run(servers, "mcp__srv__slow", {"seconds": 120})
        assert slow.value.category is ErrorCategory.TIMEOUT
        # The server is still there after a timed-out call.
        assert (await run(servers, "mcp__srv__echo", {"text": "x"})).text == "echo: x"
    finally:
        await servers.stop()


async def test_a_crash_mid_call_is_a_server_error_and_the_next_call_restarts(rig: Rig) -> None:
    servers = rig.servers(stdio())
    await servers.prepare()
    try:
        with pytest.raises(ToolError) as crashed:
            await run(servers, "mcp__srv__crash", {})
        assert crashed.value.category is ErrorCategory.SERVER_ERROR
        message = crashed.value.message
        assert "status 3" in message and "crashing on purpose" in message
        assert (await run(servers, "mcp__srv__echo", {"text": "again"})).text == "echo: again"
        for _ in range(2):  # the second restart is the last
            with pytest.raises(ToolError):
                await run(servers, "mcp__srv__crash", {})
            if servers.conns.get("srv") is None:
                break
        with pytest.raises(ToolError) as gone:
            await run(servers, "mcp__srv__crash", {})
            await run(servers, "mcp__srv__echo", {"text": "x"})
        assert gone.value.category in (ErrorCategory.PERMANENT_FAILURE,
                                       ErrorCategory.SERVER_ERROR)
    finally:
        await servers.stop()


async def test_list_changed_lists_again_and_new_tools_are_not_allowlisted(rig: Rig) -> None:
    config = McpConfig(servers={"srv": McpServerConfig(allow=["grow", "late"])})
    servers = rig.servers(stdio(), config=config)
    await servers.prepare()
    try:
        assert servers.resolve("mcp__srv__newt") is None
        await run(servers, "mcp__srv__grow", {"name": "newt"})
        newt = spec(servers, "mcp__srv__newt")
        assert not newt.allowed
        assert (await run(servers, "mcp__srv__newt", {"text": "a"})).text == "newt: a"
        await run(servers, "mcp__srv__grow", {"name": "late"})
        assert spec(servers, "mcp__srv__late").allowed  # the user named it
    finally:
        await servers.stop()


async def test_a_server_that_cannot_start_is_told_once_and_the_others_run(rig: Rig) -> None:
    servers = rig.servers(stdio("bad", "broken"), stdio("srv"),
                          ServerParams("gone", "stdio", command="/nonexistent/mcp-server"))
    await servers.prepare()
    await servers.prepare()
    try:
        told = "".join(rig.said)
        assert told.count("'bad'") == 1 and told.count("'gone'") == 1, told
        assert "missing configuration file" in told and "command not found" in told
        assert servers.resolve("mcp__srv__echo") is not None
        assert not any(n.startswith("mcp__bad__") for n in servers.specs)
    finally:
        await servers.stop()


async def test_stop_ends_the_whole_process_tree(rig: Rig) -> None:
    marker = sleep_marker()
    servers = rig.servers(stdio("srv", "stdio", "--child", marker))
    await servers.prepare()
    pids = marked(marker)
    assert len(pids) >= 2, pids  # the server and its sleeping grandchild
    assert rig.groups.pgids
    await servers.stop()
    assert await wait_unmarked(marker) == []
    assert not any(alive(p) for p in pids)
    assert not rig.groups.pgids


async def test_env_comes_from_the_request_and_the_daemons_secrets_do_not(
    rig: Rig, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-daemon-own-key")
    servers = rig.servers(stdio(env={"SERVICE_TOKEN": "given", "DB": "correct-horse-staple"}))
    await servers.prepare()
    try:
        assert (await run(servers, "mcp__srv__env", {"name": "SERVICE_TOKEN"})).text == "given"
        # A value the server was given comes back replaced, whatever its shape.
        echoed = await run(servers, "mcp__srv__env", {"name": "DB"})
        assert echoed.text == "[REDACTED:mcp-env]"
        with pytest.raises(ToolError) as failed:
            await run(servers, "mcp__srv__fail", {"reason": "bad correct-horse-staple"})
        assert "correct-horse-staple" not in failed.value.message
        assert (await run(servers, "mcp__srv__env", {"name": "OPENAI_API_KEY"})).text == "(unset)"
        assert "given" not in repr(servers.params["srv"])
    finally:
        await servers.stop()


def test_names_are_sanitized_and_collisions_get_suffixes() -> None:
    from acpd.mcpclient import names

    taken: set[str] = set()
    parts: set[str] = set()
    a = names.unique(names.part("my.server"), parts, 24)
    b = names.unique(names.part("my server"), parts, 24)
    assert (a, b) == ("my_server", "my_server_2")
    first = names.tool_name(a, "get.weather", taken)
    second = names.tool_name(a, "get weather", taken)
    assert (first, second) == ("mcp__my_server__get_weather", "mcp__my_server__get_weather_2")
    long = names.tool_name(a, "x" * 200, taken)
    assert len(long) <= 64 and long.startswith("mcp__my_server__")
    assert names.tool_name("s", "a__b", set()) == "mcp__s__a_b"
    assert os.path.basename(long) == long


async def test_a_server_that_never_answers_is_given_up_within_start_timeout(rig: Rig) -> None:
    marker = sleep_marker()
    hung = ServerParams("hung", "stdio", command="sleep", args=(marker,))
    servers = rig.servers(hung, stdio(), config=McpConfig(start_timeout=3))
    await servers.prepare()
    try:
        told = "".join(rig.said)
        assert "'hung'" in told and "did not start within 3 s" in told, told
        assert await wait_unmarked(marker) == []
        assert servers.resolve("mcp__srv__echo") is not None
    finally:
        await servers.stop()


async def test_a_cancelled_start_is_waited_for_again_by_the_next_prepare(rig: Rig) -> None:
    servers = rig.servers(stdio("bad", "broken"), stdio())
    with anyio.move_on_after(0.01):
        await servers.prepare()
    try:
        await servers.prepare()
        assert servers.resolve("mcp__srv__echo") is not None
        assert "".join(rig.said).count("'bad'") == 1
    finally:
        await servers.stop()


async def test_a_cancelled_call_leaves_the_server_usable(rig: Rig) -> None:
    servers = rig.servers(stdio())
    await servers.prepare()
    try:
        with anyio.move_on_after(1) as scope:
            await run(servers, "mcp__srv__slow", {"seconds": 60})
        assert scope.cancelled_caught
        assert (await run(servers, "mcp__srv__echo", {"text": "x"})).text == "echo: x"
    finally:
        await servers.stop()


async def test_garbage_and_a_huge_line_on_stdout_do_not_hang_or_grow_without_bound(
    rig: Rig, tmp_path: Path
) -> None:
    noisy = tmp_path / "noisy.py"
    noisy.write_text(
        "import sys, runpy\n"
        "sys.stdout.write('not json at all\\n'); sys.stdout.flush()\n"
        "sys.argv = ['server', 'stdio']\n"
        "runpy.run_module('tests.mcp.server', run_name='__main__')\n"
    )
    flood = tmp_path / "flood.py"
    flood.write_text("import sys\nwhile True:\n    sys.stdout.write('x' * 65536)\n")
    env = (("PYTHONPATH", str(REPO)),)
    servers = rig.servers(
        ServerParams("noisy", "stdio", command=sys.executable, args=(str(noisy),), env=env),
        ServerParams("flood", "stdio", command=sys.executable, args=(str(flood),)),
        config=McpConfig(start_timeout=20),
    )
    await servers.prepare()
    try:
        assert (await run(servers, "mcp__noisy__echo", {"text": "y"})).text == "echo: y"
        assert "'flood'" in "".join(rig.said)
    finally:
        await servers.stop()


async def test_disabled_in_config_starts_nothing_and_says_so_once(rig: Rig) -> None:
    marker = sleep_marker()
    servers = rig.servers(stdio("srv", "stdio", "--child", marker),
                          config=McpConfig(enabled=False))
    await servers.prepare()
    await servers.prepare()
    assert servers.tools() == [] and marked(marker) == []
    assert "".join(rig.said).count("disabled in the config") == 1
    await servers.stop()
