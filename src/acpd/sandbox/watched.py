"""Which directory listings of the workspace walk (walk.py) a file watcher vouches for.

One inotify instance per process (inotify.py's `Watcher`, with absolute paths; the
checkpoints use the same class, one instance per workspace).
A directory is *trusted* once it was read through the descriptor its watch was added on;
it stops being trusted at the first event in it (an entry created, deleted, renamed, its
type changed: all of them are events on the directory's watch) or on it. Any doubt (dropped
events, a renamed directory, an unknown watch, a directory watched under two paths) drops
every trust; a watcher that cannot be used (no inotify, the watch limit) is given up and the
walk validates each listing by a stat instead (walk.py). Only names and entry types matter
to a listing (its findings are never reused when they depend on a symlink's target), and no
change to them escapes the directory's watch.

Callers hold `lock` (walks run in worker threads, possibly two at once).
"""

from __future__ import annotations

import os
import sys
import threading
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from acpd.sandbox.inotify import Watcher

MAX_WATCHES = 100_000
"""More directories than this and the watcher starts afresh (watches are kernel memory)."""

lock = threading.Lock()
_watcher: Watcher | None = None
_off = not sys.platform.startswith("linux")
_trusted: set[str] = set()


def refresh() -> None:
    """Read the events queued since the last walk: the directories they name lose trust."""
    global _watcher
    if _watcher is None:
        return
    dirty = _watcher.drain()
    if dirty.doubt is not None:
        _trusted.clear()
        if _watcher.broken is not None:
            _watcher = None
        return
    for path in (*dirty.paths, *dirty.trees):
        _trusted.discard(path)
        _trusted.discard(os.path.dirname(path))


def trusted(directory: str) -> bool:
    return directory in _trusted


def watch(fd: int, directory: str) -> bool:
    """Watch the directory open at `fd` before it is read; False when no watch vouches for
    it (then it is validated by a stat next time)."""
    global _watcher, _off
    if _off:
        return False
    if _watcher is None or len(_watcher.paths) > MAX_WATCHES:
        if _watcher is not None:
            _watcher.close()
        _trusted.clear()
        from acpd.sandbox.inotify import Watcher

        try:
            _watcher = Watcher()
        except OSError:
            _off = True
            return False
    if _watcher.add(fd, directory, strict=False):
        return True
    _trusted.clear()  # broken, or another path's events were just lost
    if _watcher.broken is not None:
        _watcher, _off = None, True  # the watch limit: stat validation from now on
    return False


def all_trusted(directories: list[str]) -> bool:
    """Every one of them is trusted (none had an event since it was read)."""
    return _trusted.issuperset(directories)


def trust(directory: str) -> None:
    _trusted.add(directory)


def forget() -> None:
    _trusted.clear()
