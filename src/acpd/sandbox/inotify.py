"""Directory watches (Linux inotify), read as a set of dirty paths: a workspace's, for its
checkpoints (checkpoint/tracking.py), and the sandbox walk's (watched.py).

Rules and limits (what a caller may conclude from an empty `Dirty`):
- One inotify instance per workspace store; one watch per directory the full scan walked,
  added on the directory's open descriptor (`/proc/self/fd/N`) *before* the directory is
  listed, so a change is either seen by the listing or reported as an event.
- Events are read only when a checkpoint asks (`drain`); the kernel queues them meanwhile.
  Nothing runs in the background.
- Every change made through a directory entry (create, delete, rename, write, truncate,
  chmod, close after writing, through any descriptor or bind mount) is reported on the
  watch of the entry's directory. Not reported: writes through a hard link whose other
  name lies outside the watched tree, and stores through a shared writable memory map
  after the descriptor was closed. The store covers those (store.py: files with several
  links are re-stat'ed every time; the checkpoint after a call trusts the watcher only when
  the call ran in the kernel sandbox, where neither can reach the workspace; and a periodic
  full scan checks the watcher and stops trusting it on a miss).
- Anything that leaves a doubt is `doubt` (the caller scans everything): dropped events
  (queue overflow), a renamed directory (every watch below it now has a stale path), an
  event for a watch we do not know, an unmounted file system, the root itself moved or
  deleted, more than `MAX_DIRTY` dirty paths (a full scan is then as cheap).
- A watch that cannot be added (the per-user watch limit, no inotify at all) makes the
  watcher `broken`: the store then scans in full, as before there was a watcher.
"""

from __future__ import annotations

import ctypes
import errno
import os
import struct
from dataclasses import dataclass, field

IN_MODIFY = 0x002
IN_ATTRIB = 0x004
IN_CLOSE_WRITE = 0x008
IN_MOVED_FROM = 0x040
IN_MOVED_TO = 0x080
IN_CREATE = 0x100
IN_DELETE = 0x200
IN_DELETE_SELF = 0x400
IN_MOVE_SELF = 0x800
IN_UNMOUNT = 0x2000
IN_Q_OVERFLOW = 0x4000
IN_IGNORED = 0x8000
IN_ONLYDIR = 0x01000000
IN_ISDIR = 0x40000000
IN_NONBLOCK = os.O_NONBLOCK
IN_CLOEXEC = os.O_CLOEXEC

MASK = (IN_MODIFY | IN_ATTRIB | IN_CLOSE_WRITE | IN_MOVED_FROM | IN_MOVED_TO | IN_CREATE
        | IN_DELETE | IN_DELETE_SELF | IN_MOVE_SELF | IN_ONLYDIR)
MAX_DIRTY = 4096
"""More dirty paths than this and a full scan is both simpler and about as fast."""
_HEADER = struct.Struct("iIII")


@dataclass(slots=True)
class Dirty:
    paths: set[str] = field(default_factory=set)
    """Paths (relative, "/"-separated) to lstat again: created, deleted, written, chmod'ed."""
    trees: set[str] = field(default_factory=set)
    """New directories: walk them whole (and watch them)."""
    doubt: str | None = None
    """Why nothing short of a full scan will do; None when the sets above are complete."""

    def covers(self, path: str) -> bool:
        """`path` is dirty, or lies under a dirty path or a new directory."""
        probe = path
        while True:
            if probe in self.paths or probe in self.trees:
                return True
            if "/" not in probe:
                return False
            probe = probe.rsplit("/", 1)[0]

    def merge(self, other: Dirty) -> None:
        self.paths |= other.paths
        self.trees |= other.trees
        self.doubt = self.doubt or other.doubt


class Watcher:
    """Raises OSError from the constructor when inotify is not available."""

    def __init__(self) -> None:
        self._libc = _libc()
        fd = self._libc.inotify_init1(IN_NONBLOCK | IN_CLOEXEC)
        if fd < 0:
            err = ctypes.get_errno()
            raise OSError(err, f"inotify_init1: {os.strerror(err)}")
        self.fd: int = fd
        self.paths: dict[int, str] = {}
        """Watch descriptor -> the directory's path relative to the root ("" is the root)."""
        self._retired: set[int] = set()
        self.broken: str | None = None
        """Why this watcher cannot be used at all (then it is closed)."""
        self._seen: set[int] = set()

    def add(self, dir_fd: int, rel: str, *, strict: bool = True) -> bool:
        """Watch the directory open at `dir_fd` (call before listing it); True when its
        events now name `rel`. On failure the watcher is broken. A directory already watched
        under another path (a bind mount, a rename): `strict` breaks the watcher, else the
        watch is moved to `rel` and False says that the other path's events were lost."""
        if self.broken is not None:
            return False
        path = f"/proc/self/fd/{dir_fd}".encode()
        wd = self._libc.inotify_add_watch(self.fd, path, MASK)
        if wd < 0:
            err = ctypes.get_errno()
            why = "the inotify watch limit is reached (fs.inotify.max_user_watches)" \
                if err == errno.ENOSPC else f"inotify_add_watch: {os.strerror(err)}"
            self.close(why)
            return False
        known = self.paths.get(wd)
        clash = known is not None and known != rel and (wd in self._seen or not strict)
        if clash and strict:
            self.close(f"one directory is reached as {known!r} and {rel!r}")
            return False
        self.paths[wd] = rel
        self._seen.add(wd)
        self._retired.discard(wd)
        return not clash

    def start_sweep(self) -> None:
        """A full scan begins: the watches it adds are the ones that stay (see `sweep`)."""
        self._seen = set()

    def sweep(self) -> None:
        """After a full scan: remove the watches of directories it did not meet (deleted,
        or moved out of the tree). Their late events are ignored."""
        for wd in [wd for wd in self.paths if wd not in self._seen]:
            del self.paths[wd]
            self._retired.add(wd)
            self._libc.inotify_rm_watch(self.fd, wd)

    def drain(self) -> Dirty:
        """Every event queued since the last drain, as dirty paths."""
        dirty = Dirty()
        if self.broken is not None:
            dirty.doubt = self.broken
            return dirty
        while True:
            try:
                data = os.read(self.fd, 1 << 16)
            except BlockingIOError:
                break
            if not data:
                break
            self._parse(data, dirty)
        if len(dirty.paths) + len(dirty.trees) > MAX_DIRTY and dirty.doubt is None:
            dirty.doubt = f"more than {MAX_DIRTY} paths changed"
        return dirty

    def _parse(self, data: bytes, dirty: Dirty) -> None:
        offset = 0
        while offset + _HEADER.size <= len(data):
            wd, mask, _cookie, length = _HEADER.unpack_from(data, offset)
            offset += _HEADER.size
            raw = data[offset:offset + length].split(b"\0", 1)[0]
            offset += length
            self._event(wd, mask, os.fsdecode(raw), dirty)

    def _event(self, wd: int, mask: int, name: str, dirty: Dirty) -> None:
        if mask & IN_Q_OVERFLOW:
            dirty.doubt = dirty.doubt or "file events were dropped (the queue overflowed)"
            return
        if mask & IN_UNMOUNT:
            dirty.doubt = dirty.doubt or "a file system under the workspace was unmounted"
            return
        if wd in self._retired:
            return
        rel = self.paths.get(wd)
        if rel is None:
            dirty.doubt = dirty.doubt or "an event for an unknown watch"
            return
        if mask & IN_IGNORED:
            del self.paths[wd]  # the directory is gone; its parent's event says so
            self._retired.add(wd)
            return
        if mask & (IN_MOVE_SELF | IN_DELETE_SELF):
            if rel == "":
                dirty.doubt = dirty.doubt or "the workspace root was moved or deleted"
            elif mask & IN_MOVE_SELF:
                dirty.doubt = dirty.doubt or f"directory {rel!r} was moved"
            return
        if not name:
            if rel:
                dirty.paths.add(rel)  # the directory's own mode or owner changed
            return
        child = f"{rel}/{name}" if rel else name
        if mask & IN_ISDIR and mask & (IN_MOVED_FROM | IN_MOVED_TO):
            dirty.doubt = dirty.doubt or f"directory {child!r} was renamed"
        elif mask & IN_ISDIR and mask & IN_CREATE:
            dirty.trees.add(child)
        else:
            dirty.paths.add(child)

    def close(self, why: str = "closed") -> None:
        if self.broken is None:
            self.broken = why
            os.close(self.fd)
            self.paths.clear()


_LIBC: ctypes.CDLL | None = None


def _libc() -> ctypes.CDLL:
    global _LIBC
    if _LIBC is None:
        libc = ctypes.CDLL(None, use_errno=True)
        libc.inotify_init1.argtypes = [ctypes.c_int]
        libc.inotify_add_watch.argtypes = [ctypes.c_int, ctypes.c_char_p, ctypes.c_uint32]
        libc.inotify_rm_watch.argtypes = [ctypes.c_int, ctypes.c_int]
        _LIBC = libc
    return _LIBC
