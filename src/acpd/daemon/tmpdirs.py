"""This daemon's scratch directories, kept under one run directory that outlives nothing.

Every scratch directory the daemon makes in the system temp dir (the private /tmp of each
workspace's sandboxed commands, the editor path's argument files) lies inside one run
directory, `acpd-run-XXXX/`, removed at exit. A daemon that is killed (SIGKILL, OOM, the
editor closing its pipe too hard) runs no exit handler, so its run directory would stay for
good: with many editor windows over weeks, hundreds of them. Each run directory therefore
holds a `.lock` file that its daemon keeps locked (flock) for its whole life; the kernel
drops the lock when the process dies, however it dies. The first daemon to make a run
directory sweeps, on a thread, every other run directory of its user whose lock it can take.

One descriptor per daemon, whatever the number of workspaces: a lock per scratch directory
would hold a descriptor per workspace ever served.
"""

from __future__ import annotations

import atexit
import contextlib
import fcntl
import os
import shutil
import subprocess
import tempfile
import threading
from collections.abc import Callable

PREFIX = "acpd-run-"
LOCK = ".lock"

_guard = threading.Lock()
_run: str | None = None
_lock_fd: int | None = None
_before_removal: list[Callable[[], None]] = []


def make(prefix: str) -> str:
    """A new directory (0700) named PREFIX... inside this daemon's run directory. Raises
    OSError when the temp dir is not writable."""
    return tempfile.mkdtemp(prefix=prefix, dir=run_dir())


def remove(path: str) -> None:
    """Remove a directory made by `make` (nothing when it is gone already). A sandboxed
    command can make a tree deeper than Python 3.11's rmtree can recurse (RecursionError,
    which `ignore_errors` does not cover): `rm -rf` finishes it."""
    try:
        shutil.rmtree(path, ignore_errors=True)
    except RecursionError:
        subprocess.run(["rm", "-rf", "--", path], stdin=subprocess.DEVNULL,
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=False)


def before_removal(hook: Callable[[], None]) -> None:
    """Run `hook` at exit before the run directory goes (to stop what still uses it)."""
    _before_removal.append(hook)


def run_dir() -> str:
    """This daemon's run directory, made (and locked) on first use; made again when
    something deleted it."""
    global _run
    with _guard:
        if _run is not None and _still_ours(_run):
            return _run
        first = _run is None
        _run = _make_run_dir()
        if first:
            atexit.register(_remove_run_dir)
            threading.Thread(target=sweep, args=(_run,), name="acpd-tmp-sweep",
                             daemon=True).start()
        return _run


def _make_run_dir() -> str:
    """The lock is taken under a temporary name and renamed into place: a sweeping daemon
    never sees an unlocked `.lock` in a live run directory."""
    global _lock_fd
    path = tempfile.mkdtemp(prefix=PREFIX)
    staging = os.path.join(path, ".lock-new")
    fd = os.open(staging, os.O_RDWR | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        os.rename(staging, os.path.join(path, LOCK))
    except BaseException:
        os.close(fd)
        shutil.rmtree(path, ignore_errors=True)
        raise
    if _lock_fd is not None:
        os.close(_lock_fd)
    _lock_fd = fd
    return path


def _still_ours(path: str) -> bool:
    try:
        st = os.lstat(os.path.join(path, LOCK))
    except OSError:
        return False
    return _lock_fd is not None and os.fstat(_lock_fd).st_ino == st.st_ino


def _remove_run_dir() -> None:
    for hook in _before_removal:
        with contextlib.suppress(Exception):
            hook()
    if _run is not None:
        remove(_run)


def sweep(keep: str | None = None, parent: str | None = None) -> list[str]:
    """Remove the run directories in `parent` (the temp dir) whose daemon is gone: ours
    (same user), real directories, with a `.lock` nobody holds (a live daemon's lock,
    this one's included, cannot be taken: flock conflicts across open files even within
    one process). Returns what it removed."""
    parent = parent if parent is not None else tempfile.gettempdir()
    removed: list[str] = []
    try:
        entries = [e for e in os.scandir(parent) if e.name.startswith(PREFIX)]
    except OSError:
        return removed
    for entry in entries:
        if entry.path != keep and _abandoned(entry):
            removed.append(entry.path)
    return removed


def _abandoned(entry: os.DirEntry[str]) -> bool:
    """Remove `entry` when its daemon is dead: its lock is taken (and held while removing,
    so no daemon can pick it up meanwhile)."""
    try:
        if not entry.is_dir(follow_symlinks=False) or \
                entry.stat(follow_symlinks=False).st_uid != os.getuid():
            return False
        fd = os.open(os.path.join(entry.path, LOCK),
                     os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
    except OSError:
        return False
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        os.close(fd)
        return False
    try:
        remove(entry.path)
    finally:
        os.close(fd)
    return True
