"""Running a native plugin tool: the executable in a new process group, inside the sandbox.

The process is started as bash's commands are (daemon/local.py, daemon/confine.py): in the
kernel sandbox built from the workspace roots and the live policy's path rules (deny_read
masked, writes only in the workspace, network only when the policy, the manifest's
`requires_network` and the capability preset all allow it), with the daemon's environment
minus the blocked variables, stdin a pipe that carries the request and is then closed, and
its own session. `max_runtime_ms` over, a cancel, or stdout past `max_stdout_bytes`: the
group gets SIGTERM then SIGKILL (the sandbox's PID namespace takes every descendant with it,
`setsid` and double forks included). Stdout and stderr are read concurrently, each capped:
stdout past its cap fails the call, stderr past its cap is cut (and said so).
"""

from __future__ import annotations

import contextlib
import dataclasses
import os
import shlex
import subprocess
from dataclasses import dataclass
from typing import TYPE_CHECKING

import anyio
import anyio.abc

from acpd.sandbox.rules import PathRules
from acpd.tools.capabilities import CommandRequest
from acpd.tools.errors import ErrorCategory, ToolError

if TYPE_CHECKING:
    from acpd.daemon.confine import Confined


@dataclass(slots=True)
class Capped:
    limit: int
    data: bytearray
    over: bool = False

    def add(self, chunk: bytes) -> None:
        room = self.limit - len(self.data)
        if len(chunk) > room:
            self.over = True
        self.data += chunk[: max(room, 0)]


@dataclass(frozen=True, slots=True)
class NativeRun:
    stdout: bytes
    stderr: str
    exit_code: int | None
    sandbox: str
    notes: tuple[str, ...]


async def run_native(
    name: str, entry: str, request: bytes, *, cwd: str, roots: tuple[str, ...],
    rules: PathRules, runtime_ms: int, stdout_cap: int, stderr_cap: int,
) -> NativeRun:
    """Raises ToolError: Timeout past `runtime_ms`, PermanentFailure for output past the cap
    or a process that cannot start."""
    from acpd.daemon.confine import confine
    from acpd.daemon.local import child_env, kill_group

    command = f"exec {shlex.quote(entry)}"
    spec = CommandRequest(command, cwd, runtime_ms / 1000, stdout_cap, roots=roots,
                          sandbox=rules)
    try:
        confined = _with_folder(await confine(spec, None), os.path.dirname(entry))
        argv, fds = confined.launch(command)
    except OSError as exc:
        raise ToolError(ErrorCategory.PERMANENT_FAILURE,
                        f"plugin {name} cannot be confined: {exc}") from None
    try:
        process = await anyio.open_process(
            argv, cwd=cwd, env=child_env({}), stdin=subprocess.PIPE, stdout=subprocess.PIPE,
            stderr=subprocess.PIPE, start_new_session=True, pass_fds=fds)
    except OSError as exc:
        raise ToolError(ErrorCategory.PERMANENT_FAILURE,
                        f"plugin {name} did not start: {exc.strerror or exc}") from None
    finally:
        for fd in fds:
            os.close(fd)
    out, err = Capped(stdout_cap, bytearray()), Capped(stderr_cap, bytearray())
    try:
        with anyio.move_on_after(runtime_ms / 1000) as deadline:
            async with anyio.create_task_group() as tg:
                out_done, err_done = anyio.Event(), anyio.Event()
                tg.start_soon(_feed, process, request)
                tg.start_soon(_pump, process.stdout, out, out_done, tg.cancel_scope)
                tg.start_soon(_pump, process.stderr, err, err_done, None)
                await process.wait()
                with anyio.move_on_after(0.5):  # a leftover child may hold the pipes open
                    await out_done.wait()
                    await err_done.wait()
                tg.cancel_scope.cancel()
    finally:
        with anyio.CancelScope(shield=True):
            await kill_group(process)
            await process.aclose()  # a pipe left full would hold its transport until GC
    if deadline.cancelled_caught:
        raise ToolError(ErrorCategory.TIMEOUT,
                        f"plugin {name} ran past max_runtime_ms ({runtime_ms} ms) and was "
                        "killed with its process group")
    if out.over:
        raise ToolError(ErrorCategory.PERMANENT_FAILURE,
                        f"plugin {name} printed more than max_stdout_bytes ({stdout_cap}) and "
                        "was killed")
    stderr = err.data.decode("utf-8", "replace")
    if err.over:
        stderr += f"\n[stderr cut at max_stderr_bytes ({stderr_cap})]"
    return NativeRun(bytes(out.data), stderr, process.returncode, confined.label,
                     confined.notes_after())


def _with_folder(confined: Confined, folder: str) -> Confined:
    """The plugin's folder bound read-only into the sandbox: visible even under the private
    /tmp, and never writable by the tool itself (even inside the workspace)."""
    if confined.conf is None:
        return confined
    conf = dataclasses.replace(confined.conf, read_only=(*confined.conf.read_only, folder))
    return dataclasses.replace(confined, conf=conf)


async def _feed(process: anyio.abc.Process, request: bytes) -> None:
    stdin = process.stdin
    if stdin is None:
        return
    with contextlib.suppress(anyio.BrokenResourceError, anyio.ClosedResourceError):
        await stdin.send(request)
    with contextlib.suppress(anyio.BrokenResourceError, anyio.ClosedResourceError):
        await stdin.aclose()


async def _pump(stream: anyio.abc.ByteReceiveStream | None, sink: Capped, done: anyio.Event,
                scope: anyio.CancelScope | None) -> None:
    try:
        if stream is None:
            return
        with contextlib.suppress(anyio.EndOfStream, anyio.ClosedResourceError,
                                 anyio.BrokenResourceError):
            while True:
                sink.add(await stream.receive())
                if sink.over and scope is not None:
                    scope.cancel()  # stdout over its cap: stop now, the group is killed after
                    return
    finally:
        done.set()
