"""Is a kernel sandbox available on this machine, and which one.

`sandbox_status()` probes once per process (machine facts: the binary, whether user, PID and
network namespaces can be created); path facts are never cached (see build.py). The probe runs
bubblewrap around `true` (about 5 ms) with `posix_spawn`, not `subprocess`, because
`initialize` reports the result and start-up is a feature; `prewarm()` starts it in a thread
while the daemon waits for the editor's first line. `ACPD_SANDBOX=off` switches the sandbox
off (the daemon says so in doctor, `initialize` and every bash card's audit line).
"""

from __future__ import annotations

import _thread
import os
import sys
from dataclasses import dataclass

from acpd.sandbox.bwrap import BWRAP_ENV, find_bwrap

SWITCH_ENV = "ACPD_SANDBOX"
SANDBOX_EXEC = "/usr/bin/sandbox-exec"
OFF_WORDS = ("off", "0", "no", "false", "none")


@dataclass(frozen=True, slots=True)
class SandboxStatus:
    available: bool
    kind: str
    """"bwrap", "sandbox-exec" or "none"."""
    reason: str
    """Where the sandbox comes from, or why there is none."""
    binary: str | None = None

    def label(self) -> str:
        """What a bash card's audit line says: "bwrap" or "none: <why>"."""
        return self.kind if self.available else f"none: {self.reason}"

    def to_meta(self) -> dict[str, object]:
        return {"available": self.available, "kind": self.kind, "reason": self.reason}


_lock = _thread.allocate_lock()
_cache: dict[tuple[str, str], SandboxStatus] = {}


def sandbox_status() -> SandboxStatus:
    """The sandbox bash commands get here (cached per process and per switch setting)."""
    key = (os.environ.get(SWITCH_ENV, ""), os.environ.get(BWRAP_ENV, ""))
    with _lock:
        status = _cache.get(key)
        if status is None:
            status = _cache[key] = _compute(key[0])
        return status


def cached_status() -> SandboxStatus | None:
    """The status when it is already known (no probe, no lock wait): the hot path's check."""
    return _cache.get((os.environ.get(SWITCH_ENV, ""), os.environ.get(BWRAP_ENV, "")))


def prewarm() -> None:
    """Probe in the background (the first `sandbox_status()` then waits at most for it)."""
    _thread.start_new_thread(sandbox_status, ())


def _compute(switch: str) -> SandboxStatus:
    if switch.lower() in OFF_WORDS:
        return SandboxStatus(False, "none", f"switched off by {SWITCH_ENV}={switch}")
    if sys.platform == "darwin":
        if os.path.exists(SANDBOX_EXEC):
            return SandboxStatus(True, "sandbox-exec", SANDBOX_EXEC, SANDBOX_EXEC)
        return SandboxStatus(False, "none", f"{SANDBOX_EXEC} not found")
    if not sys.platform.startswith("linux"):
        return SandboxStatus(False, "none", f"no sandbox on {sys.platform}")
    binary, origin = find_bwrap()
    if binary is None:
        return SandboxStatus(False, "none", origin)
    failure = probe(binary)
    if failure:
        return SandboxStatus(False, "none", failure, binary)
    return SandboxStatus(True, "bwrap", f"bubblewrap from {origin}", binary)


PROBE_ARGS = ("--unshare-user", "--disable-userns", "--unshare-pid", "--unshare-net",
              "--unshare-ipc", "--unshare-uts", "--die-with-parent", "--new-session",
              "--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc", "--tmpfs", "/tmp",
              "--", "true")


def probe(binary: str) -> str:
    """Run `true` in the namespaces a command gets; the error when that fails, else ""."""
    read_end, write_end = os.pipe()
    try:
        pid = os.posix_spawn(binary, [binary, *PROBE_ARGS], dict(os.environ), file_actions=[
            (os.POSIX_SPAWN_OPEN, 0, os.devnull, os.O_RDONLY, 0),
            (os.POSIX_SPAWN_OPEN, 1, os.devnull, os.O_WRONLY, 0),
            (os.POSIX_SPAWN_DUP2, write_end, 2),
        ])
    except OSError as exc:
        os.close(read_end)
        return f"bwrap cannot run: {exc}"
    finally:
        os.close(write_end)
    kept = bytearray()
    with os.fdopen(read_end, "rb") as errors:
        while chunk := errors.read(4096):
            if len(kept) < 65536:
                kept += chunk
    code = os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1])
    if code == 0:
        return ""
    lines = kept.decode(errors="replace").strip().splitlines()
    why = lines[-1] if lines else f"exit code {code}"
    return f"bwrap cannot create its namespaces (user namespaces off?): {why}"
