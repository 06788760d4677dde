"""Running a WASI plugin tool in-process with wasmtime, off the event loop.

Rules and limits:
- One engine per call, with epoch interruption: a timer thread bumps the epoch after
  `max_runtime_ms`, a cancel or stdout past its cap bump it at once, and the module traps at
  its next check (wall-clock time, whatever the module does; a shared engine would let one
  call's timer stop another's).
- The module sees only its preopened mounts: a read-only mount is preopened without mutation
  rights (wasmtime refuses opens for writing, creates, renames and removes there); paths out of
  a mount (`..`, absolute, symlinks leading out) are refused by wasmtime's capability layer.
- No network: acpd's WASI context grants no sockets. No environment, argv is the tool name.
- stdin is the request (a temp file, read-only to the module); stdout and stderr go to
  callbacks that keep at most their caps (stdout past its cap stops the module).
- `wasmtime` is imported on the first WASI call only.
"""

from __future__ import annotations

import os
import tempfile
import threading
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import anyio
import anyio.to_thread

from acpd.tools.errors import ErrorCategory, ToolError

if TYPE_CHECKING:
    from collections.abc import Sequence


@dataclass(frozen=True, slots=True)
class Preopen:
    host: str
    guest: str
    read_only: bool


@dataclass(slots=True)
class _Sink:
    limit: int
    data: bytearray = field(default_factory=bytearray)
    over: bool = False

    def add(self, chunk: bytes) -> bool:
        """Keep what fits; False once over the cap."""
        room = self.limit - len(self.data)
        self.data += chunk[: max(room, 0)]
        if len(chunk) > room:
            self.over = True
        return not self.over


@dataclass(frozen=True, slots=True)
class WasiRun:
    stdout: bytes
    stderr: str
    exit_code: int


class _Engine:
    """One call's engine; `bump` (timer, cancel, stdout cap: any thread) stops the module at
    its next epoch check, and is a no-op once the engine is closed."""

    def __init__(self) -> None:
        import wasmtime

        config = wasmtime.Config()
        config.epoch_interruption = True
        self.engine = wasmtime.Engine(config)
        self._lock = threading.Lock()
        self._closed = False

    def bump(self) -> None:
        with self._lock:
            if not self._closed:
                self.engine.increment_epoch()

    def close(self) -> None:
        with self._lock:
            self._closed = True
            self.engine.close()


async def run_wasi(
    name: str, module: str, request: bytes, preopens: Sequence[Preopen], *, runtime_ms: int,
    stdout_cap: int, stderr_cap: int,
) -> WasiRun:
    """Raises ToolError: Timeout, PermanentFailure (a trap, output past its cap, a module
    that does not load)."""
    engine = _Engine()
    try:
        return await anyio.to_thread.run_sync(
            _run, engine, name, module, request, list(preopens), runtime_ms, stdout_cap,
            stderr_cap, abandon_on_cancel=True)
    except anyio.get_cancelled_exc_class():
        engine.bump()  # the abandoned thread's module traps at its next check
        raise


def _run(engine: _Engine, name: str, module_path: str, request: bytes,
         preopens: list[Preopen], runtime_ms: int, stdout_cap: int, stderr_cap: int) -> WasiRun:
    """Everything made here is closed here, on this thread, before it returns: left to the
    garbage collector, the WASI context's files would be closed by wasmtime's I/O threads,
    which may then start while the interpreter exits (and abort the process)."""
    import wasmtime

    out, err = _Sink(stdout_cap), _Sink(stderr_cap)

    def on_stdout(chunk: bytes) -> int:
        if not out.add(bytes(chunk)):
            engine.bump()
        return len(chunk)

    def on_stderr(chunk: bytes) -> int:
        err.add(bytes(chunk))
        return len(chunk)

    before = _starting()
    made: list[Any] = []
    timer = threading.Timer(runtime_ms / 1000, engine.bump)
    timer.daemon = True
    try:
        try:
            module = wasmtime.Module.from_file(engine.engine, module_path)
        except (wasmtime.WasmtimeError, OSError) as exc:
            raise ToolError(ErrorCategory.PERMANENT_FAILURE, f"plugin {name}: the module does "
                            f"not load: {str(exc)[:300]}") from None
        made.append(module)
        with tempfile.NamedTemporaryFile(prefix="acpd-wasi-", suffix=".json") as stdin:
            stdin.write(request)
            stdin.flush()
            store = wasmtime.Store(engine.engine)
            made.append(store)
            store.set_epoch_deadline(1)
            wasi = wasmtime.WasiConfig()
            wasi.argv = [name]
            wasi.stdin_file = stdin.name
            wasi.stdout_custom = on_stdout
            wasi.stderr_custom = on_stderr
            for mount in preopens:
                wasi.preopen_dir(mount.host, mount.guest, not mount.read_only)
            store.set_wasi(wasi)
            linker = wasmtime.Linker(engine.engine)
            made.append(linker)
            linker.define_wasi()
            timer.start()
            code = _guarded(linker, store, module, name, out, runtime_ms)
    finally:
        timer.cancel()
        for thing in reversed(made):
            thing.close()
        engine.close()
        settle_native_threads(before)
    if out.over:
        raise _over(name, stdout_cap)
    stderr = err.data.decode("utf-8", "replace")
    if err.over:
        stderr += f"\n[stderr cut at max_stderr_bytes ({stderr_cap})]"
    return WasiRun(bytes(out.data), stderr, code)


SETTLE_SECONDS = 0.2


def settle_native_threads(before: set[int], limit: float = SETTLE_SECONDS) -> None:
    """Wait (at most `limit` seconds) until every native thread started during the call has
    got going. A Rust thread that is still starting when the process exits aborts it ("panic
    in a function that cannot unwind"): a CLI run that exits right after a WASI call met that
    on a loaded machine. A thread being started bears the parent's name; wasmtime's I/O
    runtime names its threads `tokio-*` once they run. `before`: `_starting()` taken before
    the call (threads that keep the parent's name for ever are then ignored after their
    first call). Linux only (elsewhere: no wait)."""
    import time

    deadline = time.monotonic() + limit
    while time.monotonic() < deadline and _starting() - before:
        time.sleep(0.005)


def _starting() -> set[int]:
    """Native threads that still bear the process's name (not Python's own threads)."""
    try:
        tasks = os.listdir("/proc/self/task")
    except OSError:
        return set()
    main = _comm("self")
    python = {t.native_id for t in threading.enumerate()}
    return {int(t) for t in tasks if int(t) not in python and _comm(f"self/task/{t}") == main}


def _comm(proc: str) -> str:
    try:
        with open(f"/proc/{proc}/comm", encoding="utf-8", errors="replace") as handle:
            return handle.read().strip()
    except OSError:
        return ""


def _guarded(linker: Any, store: Any, module: Any, name: str, out: _Sink,
             runtime_ms: int) -> int:
    import wasmtime

    try:
        return _start(linker, store, module, name)
    except wasmtime.Trap as trap:
        if out.over:
            raise _over(name, out.limit) from None
        if trap.trap_code == wasmtime.TrapCode.INTERRUPT:
            raise ToolError(ErrorCategory.TIMEOUT,
                            f"plugin {name} ran past max_runtime_ms ({runtime_ms} ms) and "
                            "was stopped") from None
        raise ToolError(ErrorCategory.PERMANENT_FAILURE,
                        f"plugin {name} trapped: {str(trap)[:300]}") from None


def _start(linker: Any, store: Any, module: Any, name: str) -> int:
    """Run `_start`; the WASI exit code (0 when it returns)."""
    import wasmtime

    try:
        instance = linker.instantiate(store, module)
    except wasmtime.WasmtimeError as exc:
        raise ToolError(ErrorCategory.PERMANENT_FAILURE,
                        f"plugin {name}: cannot instantiate: {str(exc)[:300]}") from None
    start = instance.exports(store).get("_start")
    if not isinstance(start, wasmtime.Func):
        raise ToolError(ErrorCategory.PERMANENT_FAILURE,
                        f"plugin {name}: the module exports no _start function")
    try:
        start(store)
    except wasmtime.ExitTrap as exit_trap:
        return int(exit_trap.code)
    return 0


def _over(name: str, cap: int) -> ToolError:
    return ToolError(ErrorCategory.PERMANENT_FAILURE,
                     f"plugin {name} printed more than max_stdout_bytes ({cap}) and was "
                     "stopped")


def check_dir(path: str) -> str:
    """The real path of an existing directory; raises ToolError otherwise."""
    real = os.path.realpath(path)
    if not os.path.isdir(real):
        raise ToolError(ErrorCategory.PERMANENT_FAILURE, f"mount {path} is not a directory")
    return real
