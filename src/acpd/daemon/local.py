"""Local capabilities: files on disk and bash in a new process group.

Used when the editor does not offer `fs/*` or `terminal/*`; the same policy applies either way.
"""

from __future__ import annotations

import contextlib
import fnmatch
import os
import re
import signal
import subprocess
from collections.abc import Awaitable, Callable, Sequence

import anyio
import anyio.abc
import anyio.to_thread

from acpd.daemon.config import DEFAULT_ENV_BLOCKLIST
from acpd.daemon.confine import RulesSource, confine
from acpd.tools.capabilities import CommandRequest, CommandResult, OnOutput, OnTerminal

KILL_GRACE = 2.0
STREAM_INTERVAL = 0.25

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



class TailBuffer:
    """Keeps the last `limit` bytes (None: all), like an editor terminal's outputByteLimit."""

    def __init__(self, limit: int | None) -> None:
        self.limit = limit
        self.data = bytearray()
        self.truncated = False

    def add(self, chunk: bytes) -> None:
        self.data += chunk
        if self.limit is not None and len(self.data) > self.limit:
            # Cut from the front at a character boundary: skip UTF-8 continuation bytes, so
            # the kept text does not start with a replacement character.
            cut = len(self.data) - self.limit
            while cut < len(self.data) and self.data[cut] & 0xC0 == 0x80:
                cut += 1
            del self.data[:cut]
            self.truncated = True

    def text(self) -> str:
        return self.data.decode("utf-8", errors="replace")


class LocalCommandRunner:
    """Runs bash in the kernel sandbox (daemon/confine.py), in its own process group; timeout
    and cancellation kill the group, and with it the sandbox's PID namespace (every process
    the command started, `setsid` and double forks included)."""

    def __init__(
        self, track: Callable[[anyio.abc.Process], None] | None = None, *,
        env_blocklist: Sequence[str] = DEFAULT_ENV_BLOCKLIST, rules: RulesSource | None = None,
    ) -> None:
        self._track = track
        self._blocked = env_matcher(env_blocklist)
        self._rules = rules

    async def run(
        self, request: CommandRequest, on_terminal: OnTerminal, on_output: OnOutput
    ) -> CommandResult:
        check_cwd(request)
        confined = await confine(request, self._rules)
        combined = TailBuffer(request.output_byte_limit)
        errors = TailBuffer(request.output_byte_limit)
        argv, fds = confined.launch(request.command)
        try:
            process = await anyio.open_process(
                argv,
                cwd=request.cwd,
                env=child_env(request.env, self._blocked),
                stdin=subprocess.DEVNULL,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                start_new_session=True,
                pass_fds=fds,
            )
        finally:
            for fd in fds:
                os.close(fd)
        if self._track is not None:
            self._track(process)
        timed_out = False
        try:
            with anyio.move_on_after(request.timeout) as deadline:
                async with anyio.create_task_group() as tg:
                    out_done, err_done = anyio.Event(), anyio.Event()
                    tg.start_soon(_pump, process.stdout, [combined], out_done)
                    tg.start_soon(_pump, process.stderr, [combined, errors], err_done)
                    tg.start_soon(_stream, combined, on_output)
                    await process.wait()
                    # A background child may hold the pipes open after bash exits: read what
                    # is buffered, but do not wait for it to finish.
                    with anyio.move_on_after(0.5):
                        await out_done.wait()
                        await err_done.wait()
                    tg.cancel_scope.cancel()
            timed_out = deadline.cancelled_caught
        finally:
            with anyio.CancelScope(shield=True):
                await kill_group(process)
        return CommandResult(
            output=combined.text(),
            exit_code=None if timed_out else process.returncode,
            signal=_signal_name(process.returncode),
            timed_out=timed_out,
            truncated=combined.truncated,
            stderr=errors.text(),
            sandbox=confined.label,
            sandbox_notes=confined.notes_after(),
        )


async def _pump(
    stream: anyio.abc.ByteReceiveStream | None, sinks: list[TailBuffer], done: anyio.Event
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
    finally:
        done.set()


async def _stream(buffer: TailBuffer, on_output: Callable[[str], Awaitable[None]]) -> None:
    sent = 0
    while True:
        await anyio.sleep(STREAM_INTERVAL)
        if len(buffer.data) != sent or buffer.truncated:
            sent = len(buffer.data)
            await on_output(buffer.text())


async def kill_group(process: anyio.abc.Process) -> None:
    """TERM the process group, then KILL it if anything in it is still alive after a grace."""
    pgid = process.pid
    if not _group_alive(pgid):
        if process.returncode is None:
            await process.wait()
        return
    _signal_group(pgid, signal.SIGTERM)
    with anyio.move_on_after(KILL_GRACE):
        # Polling: nothing signals when the last member of a process group is gone.
        while _group_alive(pgid):  # noqa: ASYNC110
            await anyio.sleep(0.05)
    _signal_group(pgid, signal.SIGKILL)
    if process.returncode is None:
        await process.wait()


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
