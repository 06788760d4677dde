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


async def run_wasi(
    name: str, module: str, request: bytes, preopens: Sequence[Preopen], *, runtime_ms: int,
    stdout_cap: int, stderr_cap: int,
) -> WasiRun:
    """Raises ToolError: Timeout, PermanentFailure (a trap, output past its cap, a module
    that does not load)."""
    import wasmtime

    config = wasmtime.Config()
    config.epoch_interruption = True
    engine = wasmtime.Engine(config)
    try:
        return await anyio.to_thread.run_sync(
            _run, engine, name, module, request, list(preopens), runtime_ms, stdout_cap,
            stderr_cap, abandon_on_cancel=True)
    except anyio.get_cancelled_exc_class():
        engine.increment_epoch()  # the abandoned thread's module traps at its next check
        raise


def _run(engine: Any, name: str, module_path: str, request: bytes, preopens: list[Preopen],
         runtime_ms: int, stdout_cap: int, stderr_cap: int) -> WasiRun:
    import wasmtime

    out, err = _Sink(stdout_cap), _Sink(stderr_cap)

    def on_stdout(chunk: bytes) -> int:
        if not out.add(bytes(chunk)):
            engine.increment_epoch()
        return len(chunk)

    def on_stderr(chunk: bytes) -> int:
        err.add(bytes(chunk))
        return len(chunk)

    try:
        module = wasmtime.Module.from_file(engine, module_path)
    except (wasmtime.WasmtimeError, OSError) as exc:
        raise ToolError(ErrorCategory.PERMANENT_FAILURE,
                        f"plugin {name}: the module does not load: {str(exc)[:300]}") from None
    with tempfile.NamedTemporaryFile(prefix="acpd-wasi-", suffix=".json") as stdin:
        stdin.write(request)
        stdin.flush()
        store = wasmtime.Store(engine)
        store.set_epoch_deadline(1)
        wasi = wasmtime.WasiConfig()
        wasi.argv = [name]
        wasi.stdin_file = stdin.name
        wasi.stdout_custom = on_stdout
        wasi.stderr_custom = on_stderr
        for mount in preopens:
            wasi.preopen_dir(mount.host, mount.guest, not mount.read_only)
        store.set_wasi(wasi)
        linker = wasmtime.Linker(engine)
        linker.define_wasi()
        timer = threading.Timer(runtime_ms / 1000, engine.increment_epoch)
        timer.daemon = True
        timer.start()
        try:
            code = _start(linker, store, module, name)
        except wasmtime.Trap as trap:
            if out.over:
                raise _over(name, stdout_cap) from None
            if trap.trap_code == wasmtime.TrapCode.INTERRUPT:
                raise ToolError(ErrorCategory.TIMEOUT,
                                f"plugin {name} ran past max_runtime_ms ({runtime_ms} ms) and "
                                "was stopped") from None
            raise ToolError(ErrorCategory.PERMANENT_FAILURE,
                            f"plugin {name} trapped: {str(trap)[:300]}") from None
        finally:
            timer.cancel()
    if out.over:
        raise _over(name, stdout_cap)
    stderr = err.data.decode("utf-8", "replace")
    if err.over:
        stderr += f"\n[stderr cut at max_stderr_bytes ({stderr_cap})]"
    return WasiRun(bytes(out.data), stderr, code)


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
