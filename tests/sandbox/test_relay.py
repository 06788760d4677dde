"""The editor path through the relay client (sandbox/relay.c, daemon/relay.py): the editor's
terminal runs the real compiled client, which hands its descriptors and environment to the
runner; the command runs confined (in a sandbox parent, or under bubblewrap the daemon
starts), its exit code comes back through the client, the blocked names never reach it, and
killing the client kills everything the command started. A fake editor here does what an
editor does with `terminal/*`: spawns the command with its own environment plus the
params' and collects its output."""

from __future__ import annotations

import dataclasses
import functools
import os
import shutil
import signal
import socket
import subprocess
import tempfile
from collections.abc import Awaitable, Callable, Iterator
from pathlib import Path
from typing import Any

import anyio
import anyio.abc
import pytest

from acpd.daemon.config import DEFAULT_ENV_BLOCKLIST
from acpd.daemon.confine import confine, workspace_tmp
from acpd.daemon.editor import EditorTerminalRunner
from acpd.daemon.errors import PeerError
from acpd.daemon.relay import Relay
from acpd.protocol.errors import RpcError
from acpd.sandbox import relaybin
from acpd.sandbox.build import build_confinement
from acpd.sandbox.parent import PARENT_ENV, POOL, Pending, Refused, prestart
from acpd.sandbox.profile import Confinement
from acpd.sandbox.rules import PathRules
from acpd.sandbox.status import sandbox_status
from acpd.tools.capabilities import CommandRequest, CommandResult
from tests.e2e.harness import marked, sleep_marker, wait_unmarked
from tests.sandbox.conftest import FakeEditor, escapes, git_dir, kill_marked
from tests.sandbox.test_envscrub import EDITOR_ENV

pytestmark = [
    pytest.mark.anyio,
    pytest.mark.skipif(not sandbox_status().available, reason="no sandbox here"),
    pytest.mark.skipif(relaybin.client() is None,
                       reason="the relay client is not built (scripts/build_native.py)"),
]


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture(params=["parent", "bubblewrap"])
def starts(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    """Both ways the daemon starts a relayed command: in a sandbox parent (warmed up first:
    the first command of a base runs under bubblewrap while the parent starts), and under
    bubblewrap per command."""
    monkeypatch.setenv(PARENT_ENV, "on" if request.param == "parent" else "off")
    yield request.param


@pytest.fixture
def editor() -> Iterator[FakeEditor]:
    editor = FakeEditor(EDITOR_ENV)
    yield editor
    editor.close()


async def _run(argv: list[str], **kwargs: Any) -> subprocess.CompletedProcess[str]:
    """subprocess.run off the event loop (the relay is served on it)."""
    return await anyio.to_thread.run_sync(lambda: subprocess.run(argv, **kwargs))


async def run(editor: FakeEditor, ws: Path, command: str, *, limit: float = 30,
              env: dict[str, str] | None = None, warm: bool = False) -> CommandResult:
    runner = EditorTerminalRunner(editor, "s1", env_blocklist=DEFAULT_ENV_BLOCKLIST,
                                  poll_interval=0.05)

    async def ignore(*_: object) -> None:
        return None

    def request(text: str) -> CommandRequest:
        return CommandRequest(text, str(ws), limit, 1 << 20, roots=(str(ws),),
                              sandbox=PathRules(), env=env or {})

    if warm:  # until a parent is ready, commands run under bubblewrap
        with anyio.fail_after(20):
            while os.environ.get(PARENT_ENV) != "off":
                done = await runner.run(request("tr '\\0' ' ' < /proc/1/cmdline"), ignore,
                                        ignore)
                if "bwrap" not in done.output:  # PID 1 is a parent's init, not bubblewrap
                    break
                await anyio.sleep(0.1)
    return await runner.run(request(command), ignore, ignore)


async def test_the_command_runs_confined_and_its_exit_code_comes_back(
    editor: FakeEditor, starts: str, tmp_path: Path,
) -> None:
    ws = tmp_path / "ws"
    git_dir(ws / ".git")
    outside = Path(tempfile.mkdtemp(dir="/var/tmp"))  # visible in the sandbox, read-only
    try:
        result = await run(editor, ws, (
            "echo ran; echo err >&2; mv .git moved 2>/dev/null || echo PINNED;"
            " { printf x > .git/hooks/pre-commit; } 2>/dev/null || echo HOOKS-READ-ONLY;"
            f" touch {outside}/x 2>/dev/null || echo OUTSIDE-READ-ONLY; exit 3"),
            warm=starts == "parent")
    finally:
        shutil.rmtree(outside)
    assert result.exit_code == 3 and result.sandbox == "bwrap", result
    assert result.output.split() == ["ran", "err", "PINNED", "HOOKS-READ-ONLY",
                                     "OUTSIDE-READ-ONLY"]
    create = editor.created[-1]
    assert create["command"] == relaybin.client() and create["args"][2] == "--"
    assert not await anyio.Path(create["args"][0]).exists()  # the one-use socket is gone


async def test_a_signal_inside_reports_as_bubblewrap_does(
    editor: FakeEditor, starts: str, tmp_path: Path,
) -> None:
    (tmp_path / "ws").mkdir()
    result = await run(editor, tmp_path / "ws", "echo x; kill -TERM $$",
                       warm=starts == "parent")
    assert result.exit_code == 128 + signal.SIGTERM, result


async def test_no_blocked_name_reaches_the_command(
    editor: FakeEditor, starts: str, tmp_path: Path,
) -> None:
    (tmp_path / "ws").mkdir()
    probes = ("env; tr '\\0' '\\n' < /proc/self/environ; tr '\\0' '\\n' < /proc/1/environ;"
              " declare -F; get_token; echo plain=$PLAIN kept=$MY_API_KEY")
    result = await run(editor, tmp_path / "ws", probes, env={"MY_API_KEY": "runner-set"},
                       warm=starts == "parent")
    assert "plain=visible" in result.output and "kept=runner-set" in result.output
    assert "CANARY" not in result.output, result.output
    assert "PAGER=cat" in result.output  # the runner's quiet variables arrive


async def test_a_timeout_kills_every_process_the_command_started(
    editor: FakeEditor, starts: str, tmp_path: Path,
) -> None:
    (tmp_path / "ws").mkdir()
    marker = sleep_marker()
    result = await run(editor, tmp_path / "ws", escapes(marker) + f"echo go; sleep {marker}",
                       limit=2, warm=starts == "parent")
    assert result.timed_out
    assert await wait_unmarked(marker) == []


async def test_killing_the_client_kills_the_command(tmp_path: Path) -> None:
    """What the editor's `terminal/kill` or Ctrl-C does: the client dies, the daemon sees
    the connection close and kills the command (a sandboxed one: its whole PID namespace,
    as the timeout test above shows through the runner)."""
    marker = sleep_marker()
    relay = Relay(str(relaybin.client()))
    started: list[str] = []

    async def start(stdio: tuple[int, int, int], env: dict[str, str]) -> Any:
        started.append("yes")
        return await anyio.open_process(["bash", "-c", f"exec sleep {marker}"],
                                        stdin=stdio[0], stdout=stdio[1], stderr=stdio[2])

    client = await anyio.open_process(relay.argv(["shown"]), stdin=subprocess.DEVNULL,
                                      stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    async with anyio.create_task_group() as tg:
        tg.start_soon(relay.serve, start)
        with anyio.fail_after(10):
            while len(marked(marker)) < 1:  # noqa: ASYNC110
                await anyio.sleep(0.05)
        client.kill()
        with anyio.fail_after(10):
            while not started or marked(marker):  # noqa: ASYNC110
                await anyio.sleep(0.05)
    assert await client.wait() == -signal.SIGKILL


@dataclasses.dataclass
class Fallback:
    """`sleep MARKER` started as the relay starts a command with no sandbox parent and no
    init set up before: under bubblewrap, started by the daemon."""

    ws: Path
    marker: str
    null: int

    async def start(self) -> Any:
        return await (await self.confined())()

    async def confined(self) -> Callable[[], Awaitable[Any]]:
        """The start, once the command is confined."""
        command = f"sleep {self.marker}"
        request = CommandRequest(command, str(self.ws), 30, 1 << 20, roots=(str(self.ws),),
                                 sandbox=PathRules())
        confined = await confine(request, None)
        assert confined.bubblewrap
        return functools.partial(confined.start_with, ["bash", "-c", command], command,
                                 str(self.ws), dict(EDITOR_ENV), (self.null,) * 3)

    async def kill(self, started: Any) -> None:
        started.kill()
        assert await started.wait() == -signal.SIGKILL


@pytest.fixture
def fallback(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Fallback]:
    monkeypatch.setenv(PARENT_ENV, "off")
    (tmp_path / "ws").mkdir()
    null = os.open(os.devnull, os.O_RDWR)
    started = Fallback(tmp_path / "ws", sleep_marker(), null)
    try:
        yield started
    finally:
        os.close(null)
        kill_marked(started.marker)


async def test_a_kill_at_any_moment_of_the_bubblewrap_start_ends_the_sandbox(
    fallback: Fallback,
) -> None:
    """The client killed (terminal/kill, cancel) in the first milliseconds: bubblewrap's init
    sets its parent-death signal only once the sandbox is set up, so a kill of bubblewrap
    alone left it alive, running the command and holding the editor's terminal open."""
    for step in range(32):
        started = await fallback.start()
        await anyio.sleep(step / 4000)
        await fallback.kill(started)
    assert await wait_unmarked(fallback.marker, within=5) == []


async def test_a_start_cancelled_as_it_happens_is_still_handed_over(
    fallback: Fallback,
) -> None:
    """Cancelled while it waited for the new process, asyncio killed bubblewrap alone (see
    above). The start finishes; its caller, cancelled at its next await, kills it whole."""
    start = await fallback.confined()
    with anyio.CancelScope() as scope:
        scope.cancel()
        started = await start()
    with anyio.fail_after(10):
        while not marked(fallback.marker):  # noqa: ASYNC110
            await anyio.sleep(0.02)
    await fallback.kill(started)
    assert await wait_unmarked(fallback.marker, within=5) == []


async def test_only_the_client_with_the_token_in_this_pid_namespace_is_heard(
    tmp_path: Path,
) -> None:
    relay = Relay(str(relaybin.client()))
    heard: list[dict[str, str]] = []

    async def start(stdio: tuple[int, int, int], env: dict[str, str]) -> Any:
        heard.append(env)
        return await anyio.open_process(["true"], stdin=stdio[0], stdout=stdio[1],
                                        stderr=stdio[2])

    async with anyio.create_task_group() as tg:
        tg.start_soon(relay.serve, start)
        wrong = await _run([str(relaybin.client()), relay.path, "0" * 32], timeout=20,
                               capture_output=True, text=True, env={"WHO": "wrong-token"})
        assert wrong.returncode == 125 and "refused this client: a wrong token" in wrong.stderr
        garbage = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        garbage.connect(relay.path)
        garbage.sendall(b"\xff" * 64)
        garbage.close()
        # A process in another PID namespace (a confined command that found the socket)
        inside = await _run(["unshare", "--user", "--map-root-user", "--pid", "--fork",
                                 *relay.argv(["x"])], timeout=20, capture_output=True,
                                text=True, env={"WHO": "other-namespace"})
        assert inside.returncode == 125 and "another PID namespace" in inside.stderr
        right = await _run(relay.argv(["x"]), timeout=20, capture_output=True,
                               text=True, env={"WHO": "client"})
        assert right.returncode == 0, right.stderr
    assert heard == [{"WHO": "client"}]


async def test_a_command_that_cannot_start_is_not_run_and_says_why(tmp_path: Path) -> None:
    relay = Relay(str(relaybin.client()))

    async def start(stdio: tuple[int, int, int], env: dict[str, str]) -> Any:
        raise OSError("no sandbox for this one")

    async with anyio.create_task_group() as tg:
        tg.start_soon(relay.serve, start)
        out = await _run(relay.argv(["x"]), timeout=20, capture_output=True, text=True)
    assert out.returncode == 125
    assert out.stderr.strip() == "acpd sandbox: NOT RUN: no sandbox for this one"


async def test_a_daemon_gone_ends_the_client(tmp_path: Path) -> None:
    relay = Relay(str(relaybin.client()))
    gone = await _run([str(relaybin.client()), str(tmp_path / "nothing.sock"), "t"],
                          timeout=20, capture_output=True, text=True)
    assert gone.returncode == 125 and "cannot reach the acpd daemon" in gone.stderr
    with (tmp_path / "err").open("wb") as err:
        client = await anyio.open_process(relay.argv(["x"]), stdin=subprocess.DEVNULL,
                                          stdout=subprocess.DEVNULL, stderr=err)
    await anyio.sleep(0.2)  # connected (the backlog holds it), never served
    relay.close()
    with anyio.fail_after(20):
        assert await client.wait() == 125
    assert "ended before the command did" in await anyio.Path(tmp_path / "err").read_text()


async def test_the_client_refuses_to_be_run_by_hand() -> None:
    out = await _run([str(relaybin.client())], capture_output=True, text=True, timeout=20)
    assert out.returncode == 125 and "usage" in out.stderr


# The deferred start (parent.prestart): the runner asks the parent to set the command's init
# up before it asks the editor for a terminal; the client's descriptors come later.

def confinement(ws: Path) -> Confinement:
    conf = build_confinement((str(ws),), PathRules(), cwd=str(ws))
    tmp = workspace_tmp(conf.roots)
    return conf if tmp is None else dataclasses.replace(conf, tmp_dir=tmp)


async def ready_parent(ws: Path) -> str:
    bwrap = str(sandbox_status().binary)
    with anyio.fail_after(60):
        while POOL.take(bwrap, confinement(ws)) is None:  # noqa: ASYNC110
            await anyio.sleep(0.05)
    return bwrap


async def test_relayed_commands_use_the_init_set_up_before_the_client_came(
    editor: FakeEditor, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    await ready_parent(ws)
    went: list[bool] = []
    go = Pending.go

    async def counted(self: Pending, stdio: tuple[int, int, int], env: dict[str, str]) -> Any:
        job = await go(self, stdio, env)
        went.append(True)
        return job

    monkeypatch.setattr(Pending, "go", counted)
    result = await run(editor, ws, "tr '\\0' ' ' < /proc/1/cmdline; echo; echo $TMPDIR; exit 7")
    assert went == [True] and result.exit_code == 7, result
    assert "acpd.sandbox.server" in result.output and "/tmp" in result.output.split()


async def test_an_init_no_client_came_for_runs_nothing_and_ends(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    marker = sleep_marker()
    bwrap = await ready_parent(ws)
    pending = prestart(bwrap, confinement(ws), ["bash", "-c", f"touch ran; sleep {marker}"])
    assert pending is not None
    await anyio.sleep(0.5)  # set up by now, waiting for its descriptors
    pending.abandon()
    await anyio.sleep(0.5)
    assert not (ws / "ran").exists() and marked(marker) == []
    with pytest.raises(OSError, match="used or abandoned"):
        await pending.go((0, 1, 2), {})


async def test_a_deferred_command_that_cannot_be_spawned_says_so_on_its_terminal(
    tmp_path: Path,
) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    bwrap = await ready_parent(ws)
    pending = prestart(bwrap, confinement(ws), ["no-such-program-acpd", "x"])
    assert pending is not None
    err_r, err_w = os.pipe()
    null = os.open(os.devnull, os.O_RDWR)
    try:
        job = await pending.go((null, null, err_w), {"PATH": "/usr/bin:/bin"})
    finally:
        os.close(err_w)
        os.close(null)
    with anyio.fail_after(20):
        code = await job.wait()
    with os.fdopen(err_r, "rb") as err:
        said = err.read().decode()
    assert code == 125 and "NOT RUN" in said and "no-such-program-acpd" in said


async def test_a_failed_deferred_start_runs_the_command_another_way(
    editor: FakeEditor, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A deferred init that could not apply its profile (a mount failed) or a parent gone:
    the command is started afresh (a parent's start, else bubblewrap), never unconfined."""
    ws = tmp_path / "ws"
    ws.mkdir()
    await ready_parent(ws)
    refusals: list[str] = []

    async def refused(self: Pending, stdio: tuple[int, int, int], env: dict[str, str]) -> Any:
        self.abandon()
        refusals.append("a mount failed")
        raise Refused("a mount failed")

    monkeypatch.setattr(Pending, "go", refused)
    result = await run(editor, ws, "echo ran; exit 4")
    assert refusals and result.exit_code == 4 and result.output.split() == ["ran"], result
    assert result.sandbox == "bwrap"


class RefusingEditor(FakeEditor):
    async def request(self, method: str, params: Any, *,
                      timeout: float | None = 30.0) -> Any:  # noqa: ASYNC109 (EditorPeer's)
        if method == "terminal/create":
            self.created.append(params)
            raise PeerError(method, RpcError(-32603, "no terminals today"))
        return await super().request(method, params, timeout=timeout)


async def test_an_editor_that_refuses_the_terminal_fails_the_call_in_its_words(
    tmp_path: Path,
) -> None:
    """Not as an ExceptionGroup of the relay's task group; the init set up for it ends and
    nothing runs."""
    ws = tmp_path / "ws"
    ws.mkdir()
    await ready_parent(ws)
    editor = RefusingEditor(EDITOR_ENV)
    try:
        with pytest.raises(OSError, match="no terminals today"):
            await run(editor, ws, "touch ran")
    finally:
        editor.close()
    assert editor.created and not (ws / "ran").exists()
    assert not await anyio.Path(editor.created[0]["args"][0]).exists()
