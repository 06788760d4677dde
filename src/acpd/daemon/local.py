"""Local capabilities: files on disk and bash in a new process group.

Used when the editor does not offer `fs/*` or `terminal/*`; the same policy applies either way.
A command's process group gets SIGTERM, then SIGKILL after KILL_GRACE (timeout, cancel); when
the daemon stops, ProcessGroups ends every group at once, SIGKILL after STOP_KILL_GRACE.
"""

from __future__ import annotations

import contextlib
import fnmatch
import os
import re
import signal
import subprocess
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import anyio
import anyio.abc
import anyio.to_thread

from acpd.daemon.config import DEFAULT_ENV_BLOCKLIST
from acpd.daemon.confine import Confined, RulesSource, confine, kill_bubblewrap
from acpd.daemon.tail_buffer import TailBuffer as TailBuffer  # re-exported (demo, tests)
from acpd.daemon.terminal_stream import LiveTerminal, TerminalStreams
from acpd.daemon.terminal_wire import Exit
from acpd.sandbox.parent import ParentProcess
from acpd.tools.capabilities import CommandRequest, CommandResult, OnOutput, OnTerminal
from acpd.tools.output import OutputStage

Running = anyio.abc.Process | ParentProcess
"""A command's process: bubblewrap's (or bash's) in its own process group, or one a sandbox
parent started (sandbox/parent.py), which is killed through its init's pidfd."""

KILL_GRACE = 2.0
"""Seconds a command's group has between SIGTERM and SIGKILL (a timeout, a cancel)."""
STOP_KILL_GRACE = 0.5
"""The same when the daemon stops: it must be gone within 3 s whatever its commands do."""

QUIET_ENV = {"PAGER": "cat", "GIT_PAGER": "cat", "GIT_TERMINAL_PROMPT": "0", "TERM": "dumb"}


def env_matcher(blocklist: Sequence[str]) -> re.Pattern[str]:
    """One case-insensitive regex for `[tools.shell] env_blocklist` (names or globs)."""
    if not blocklist:
        return re.compile(r"(?!)")
    return re.compile("|".join(fnmatch.translate(g) for g in blocklist), re.IGNORECASE)


SECRET_ENV = env_matcher(DEFAULT_ENV_BLOCKLIST)


def child_env(extra: dict[str, str], blocked: re.Pattern[str] = SECRET_ENV) -> dict[str, str]:
    """The daemon's environment without the blocked names, quietened, plus `extra` (which
    the runner chose, so it is not filtered)."""
    env = {k: v for k, v in os.environ.items() if not blocked.match(k)}
    env.update(QUIET_ENV)
    env.update(extra)
    return env


def check_cwd(request: CommandRequest) -> None:
    """Refuse a working directory outside the workspace roots (real paths: a symlink in the
    workspace pointing out of it does not count as inside). Raises PermissionError."""
    if not request.roots:
        return
    real = os.path.realpath(request.cwd)
    for root in request.roots:
        base = os.path.realpath(root)
        if real == base or real.startswith(base.rstrip("/") + "/"):
            return
    raise PermissionError(f"the working directory {request.cwd} is outside the workspace")


class LocalFileSystem:
    """Plain local files. The file tools vet every path with their sandbox before use."""

    serves_reads = False
    serves_writes = False

    async def read_text(self, path: str, line: int | None = None, limit: int | None = None) -> str:
        return await anyio.to_thread.run_sync(_read_lines, path, line, limit)

    async def write_text(self, path: str, content: str) -> None:
        await anyio.to_thread.run_sync(_write_atomic, path, content)



def _read_lines(path: str, line: int | None, limit: int | None) -> str:
    with open(path, encoding="utf-8") as handle:
        if line is None and limit is None:
            return handle.read()
        start = (line or 1) - 1
        picked: list[str] = []
        for number, text in enumerate(handle):
            if number < start:
                continue
            if limit is not None and len(picked) >= limit:
                break
            picked.append(text)
        return "".join(picked)


def _write_atomic(path: str, content: str) -> None:
    directory = os.path.dirname(path) or "."
    temp = os.path.join(directory, f".{os.path.basename(path)}.acpd-{os.getpid()}.tmp")
    with open(temp, "x", encoding="utf-8") as handle:
        handle.write(content)
        handle.flush()
        os.fsync(handle.fileno())
    os.replace(temp, path)



class LocalCommandRunner:
    """Runs bash in the kernel sandbox (daemon/confine.py), in its own process group; timeout
    and cancellation kill the group, and with it the sandbox's PID namespace (every process
    the command started, `setsid` and double forks included)."""

    def __init__(
        self, track: Callable[[anyio.abc.Process], None] | None = None, *,
        env_blocklist: Sequence[str] = DEFAULT_ENV_BLOCKLIST,
        groups: ProcessGroups | None = None, rules: RulesSource | None = None,
        live: TerminalStreams | None = None,
    ) -> None:
        self._track = track
        self._live = live if live is not None else _card_only()
        """How the output is shown while it runs (daemon/terminal_stream.py)."""
        self._blocked = env_matcher(env_blocklist)
        self._groups = groups if groups is not None else ProcessGroups()
        """The connection's running commands, which its stop ends (see ProcessGroups)."""
        self._rules = rules

    async def run(
        self, request: CommandRequest, on_terminal: OnTerminal, on_output: OnOutput
    ) -> CommandResult:
        check_cwd(request)
        if self._groups.stopping:
            raise OSError("acpd is stopping: the command was not run")
        confined = await confine(request, self._rules)
        combined = TailBuffer(request.output_byte_limit)
        errors = TailBuffer(request.output_byte_limit)
        env = child_env(request.env, self._blocked)
        process: Running | None = await confined.start_in_parent(request.command, env)
        if process is None:
            process = await self._spawn(confined, request, env)
        self._groups.add_process(process, bubblewrap=confined.bubblewrap)
        live = self._live.open(request.call_id, request.command, request.cwd, combined,
                               request.output_byte_limit)
        outcome = _Outcome()
        async with anyio.create_task_group() as sender:
            sender.start_soon(live.run)
            await self._supervise(process, request, combined, errors, live, outcome,
                                  on_terminal, on_output)
            sender.cancel_scope.cancel()  # done, or past its budget: nothing after the result
        if outcome.failure is not None:
            raise outcome.failure
        timed_out = outcome.timed_out
        return CommandResult(
            output=combined.text(),
            exit_code=None if timed_out else process.returncode,
            signal=_signal_name(process.returncode),
            timed_out=timed_out,
            truncated=combined.truncated,
            stderr=errors.text(),
            terminal_id=live.terminal_id if live.display else None,
            sandbox=confined.label,
            sandbox_notes=confined.notes_after(),
        )


    async def _spawn(self, confined: Confined, request: CommandRequest,
                     env: dict[str, str]) -> anyio.abc.Process:
        """bubblewrap around `bash -c` (or bash alone, with no sandbox here)."""
        process = await confined.spawn(request.command, request.cwd, env,
                                       (subprocess.DEVNULL, subprocess.PIPE, subprocess.PIPE))
        if self._track is not None:
            self._track(process)
        return process

    async def _supervise(
        self, process: Running, request: CommandRequest, combined: TailBuffer,
        errors: TailBuffer, live: LiveTerminal, outcome: _Outcome, on_terminal: OnTerminal,
        on_output: OnOutput,
    ) -> None:
        """Show, read and wait; then kill what is left and end the stream. An error is kept
        in `outcome` (raised here it would leave the sender's task group as a group)."""
        try:
            if self._groups.stopping:  # the stop came while it started: it ends at once
                raise OSError("acpd is stopping: the command was not run")
            await _show(live, on_terminal, on_output)
            outcome.timed_out = await _wait(process, request.timeout, combined, errors, live)
        except Exception as exc:  # re-raised by run, outside the task group
            outcome.failure = exc
        finally:
            with anyio.CancelScope(shield=True):
                await self._groups.end(process)
                code = process.returncode  # negative: killed by that signal, no exit code
                exit_code = None if outcome.timed_out or code is None or code < 0 else code
                await live.close(Exit(exit_code, _signal_name(code)))


@dataclass(slots=True)
class _Outcome:
    timed_out: bool = False
    failure: Exception | None = None


def _card_only() -> TerminalStreams:
    """No session to stream to (the CLI): plain card text, nothing stored."""

    async def drop(_update: dict[str, object]) -> None:
        return None

    return TerminalStreams("plain", drop, lambda _record: None, OutputStage, os.getcwd())


async def _show(live: LiveTerminal, on_terminal: OnTerminal, on_output: OnOutput) -> None:
    """The card embeds the display terminal, or gets the live text."""
    if live.display:
        await on_terminal(live.terminal_id, _nothing)
    else:
        live.on_text = on_output


async def _nothing() -> None:
    """A display terminal has nothing to release: the process is acpd's."""


async def _wait(
    process: Running, limit: float, combined: TailBuffer, errors: TailBuffer,
    live: LiveTerminal,
) -> bool:
    """Read both pipes until the process ends (or `limit` seconds); True on the timeout."""
    with anyio.move_on_after(limit) as deadline:
        async with anyio.create_task_group() as tg:
            out_done, err_done = anyio.Event(), anyio.Event()
            tg.start_soon(_pump, process.stdout, [combined], out_done, live)
            tg.start_soon(_pump, process.stderr, [combined, errors], err_done, live)
            await process.wait()
            # A background child may hold the pipes open after bash exits: read what
            # is buffered, but do not wait for it to finish.
            with anyio.move_on_after(0.5):
                await out_done.wait()
                await err_done.wait()
            tg.cancel_scope.cancel()
    return deadline.cancelled_caught


async def _pump(
    stream: anyio.abc.ByteReceiveStream | None, sinks: list[TailBuffer], done: anyio.Event,
    live: LiveTerminal,
) -> None:
    try:
        if stream is None:
            return
        with contextlib.suppress(
            anyio.EndOfStream, anyio.ClosedResourceError, anyio.BrokenResourceError
        ):
            while True:
                chunk = await stream.receive()
                for sink in sinks:
                    sink.add(chunk)
                live.feed(chunk)
    finally:
        done.set()


class ProcessGroups:
    """The process groups of the commands running in this daemon, so that a stop can end
    them all at once, with its own short grace, instead of waiting for each command's."""

    def __init__(self) -> None:
        self._groups: set[int] = set()
        self._parented: set[ParentProcess] = set()
        self._bubblewraps: set[anyio.abc.Process] = set()
        self.stopping = False
        """Set by stop(): a command started from now on is refused (and killed if it raced)."""

    def add(self, pgid: int) -> None:
        self._groups.add(pgid)

    def discard(self, pgid: int) -> None:
        self._groups.discard(pgid)

    def add_process(self, process: Running, *, bubblewrap: bool = False) -> None:
        """`bubblewrap`: a process `Confined.spawn` started under bubblewrap, which is ended
        with its sandbox at once (see `end_process`)."""
        if isinstance(process, ParentProcess):
            self._parented.add(process)
        elif bubblewrap:
            self._bubblewraps.add(process)
        else:
            self.add(process.pid)

    async def end(self, process: Running) -> None:
        """End one command (done, timed out or cancelled), with this connection's grace,
        and forget it."""
        try:
            await end_process(process, self.kill_grace,
                              bubblewrap=process in self._bubblewraps)
        finally:
            if isinstance(process, ParentProcess):
                self._parented.discard(process)
            else:
                self._bubblewraps.discard(process)
                self.discard(process.pid)

    @property
    def kill_grace(self) -> float:
        """TERM to KILL for one command: shorter once the stop began."""
        return STOP_KILL_GRACE if self.stopping else KILL_GRACE

    async def stop(self, grace: float = STOP_KILL_GRACE) -> None:
        """Refuse new commands; TERM every group, KILL what is left after `grace` seconds."""
        self.stopping = True
        groups = list(self._groups)
        for process in list(self._parented):
            process.kill(signal.SIGTERM)  # the init: it and its namespace die at once
        for bubblewrap in list(self._bubblewraps):
            kill_bubblewrap(bubblewrap)
        for pgid in groups:
            _signal_group(pgid, signal.SIGTERM)
        await _wait_groups_gone(groups, grace)
        for pgid in groups:
            _signal_group(pgid, signal.SIGKILL)



async def end_process(process: Running, grace: float = KILL_GRACE, *,
                      bubblewrap: bool = False) -> None:
    """`kill_group` for unconfined bash. A sandboxed command dies at once, a parent's or
    a `bubblewrap` one: its sandbox's init ignores a TERM (a TERM to the group killed only
    bubblewrap, and a sandbox still in its setup lived on, see `kill_sandbox`)."""
    if isinstance(process, ParentProcess):
        if process.alive():
            process.kill(signal.SIGTERM)
        await process.wait()
    else:
        if bubblewrap:
            kill_bubblewrap(process)
            await process.wait()
        else:
            await kill_group(process, grace)
        # Close the pipes now: after a timeout the unread rest of a full pipe keeps its
        # transport (two fds and the buffered output) open until the garbage collector
        # finds it, and then warns, or fails when the loop is gone.
        await process.aclose()


async def kill_group(process: anyio.abc.Process, grace: float = KILL_GRACE) -> None:
    """TERM the process group, then KILL it if anything in it is still alive after
    `grace` seconds."""
    pgid = process.pid
    if not _group_alive(pgid):
        if process.returncode is None:
            await process.wait()
        return
    _signal_group(pgid, signal.SIGTERM)
    await _wait_groups_gone([pgid], grace)
    _signal_group(pgid, signal.SIGKILL)
    if process.returncode is None:
        await process.wait()


async def _wait_groups_gone(groups: list[int], grace: float) -> None:
    with anyio.move_on_after(grace):
        # Polling: nothing signals when the last member of a process group is gone.
        while any(_group_alive(pgid) for pgid in groups):  # noqa: ASYNC110
            await anyio.sleep(0.05)


def _group_alive(pgid: int) -> bool:
    try:
        os.killpg(pgid, 0)
    except (ProcessLookupError, PermissionError):
        return False
    return True


def _signal_group(pgid: int, sig: signal.Signals) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, sig)


def _signal_name(returncode: int | None) -> str | None:
    if returncode is None or returncode >= 0:
        return None
    try:
        return signal.Signals(-returncode).name
    except ValueError:
        return str(-returncode)
