"""One checkpoint: walk the workspace from held directory fds and save what changed.

Rules:
- Never follows a symlink: every directory is opened with O_NOFOLLOW relative to its
  parent's fd, every file with O_NOFOLLOW; a symlink is recorded as its target text.
- Every entry is `lstat`ed afresh; a file is read (and its bytes saved) only when its stat
  differs from the previous entry for that path, when that entry was racy, or when its
  bytes were not saved before. Nothing learnt in an earlier scan is trusted otherwise.
- FIFOs, sockets and devices are skipped (never opened; listed in `skipped`). A file that
  is unreadable, over the per-file cap, beyond the scan's read time budget, or that the
  store had no room for is an entry without bytes and with a note (its changes are shown,
  never undone). A directory that cannot be listed, and the store being full, are notes.
- Files are read for at most `max_read_seconds` per scan; the rest wait for the next scan.
- `scan_scope` re-scans only some paths (a file tool's), with their ancestors and subtrees.
- `.git` is walked like anything else; its objects are immutable, so they are saved once.
- A scan that meets more than `max_entries` entries stops and is marked incomplete: its
  changes are shown, but paths it never reached are unknown.
- Paths in `exclude` (by device and inode: the checkpoint store itself, when it lies inside
  the workspace) are not walked.
- `scan_dirty` re-scans only the paths a watcher reported (inotify.py) and walks new
  directories whole; every other path keeps its previous entry. It is the caller's job to
  decide when that is enough (store.py). Every directory a scan lists is handed to
  `watcher.add` first, so a change after that moment is reported as an event.
- Each scan says which files have several hard links (`multi`) and which files' bytes are
  not saved yet (`slow`): an incremental scan re-stats those too.
"""

from __future__ import annotations

import errno
import os
import stat
import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from acpd.checkpoint.blobs import BlobStore
from acpd.checkpoint.entries import RACY_NS, Entry
from acpd.checkpoint.statdir import (
    ScanLister,
    StatLike,
    python_listing,
    python_scan_listing,
    scan_listing,
)

if TYPE_CHECKING:
    from acpd.sandbox.inotify import Watcher

DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
FILE_FLAGS = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_NOCTTY | os.O_CLOEXEC
MAX_NOTES = 50
_FORMAT = 0o170000


@dataclass(frozen=True, slots=True)
class Limits:
    max_file_bytes: int = 16 << 20
    max_total_bytes: int = 2 << 30
    max_entries: int = 200_000
    max_read_seconds: float = 5.0
    """A scan reads files for at most this long; files it had no time for are marked not
    saved (and are read by the next scans), so a first checkpoint of a huge workspace is
    spread over several calls instead of holding the first one up."""
    watch: bool = True
    """Use a file watcher to scan only what changed (tracking.py); False: always in full."""
    verify_seconds: float = 300.0
    """A full scan (which also checks the watcher) at least this often."""


@dataclass(slots=True)
class ScanResult:
    entries: dict[str, Entry]
    notes: list[str] = field(default_factory=list)
    complete: bool = True
    skipped: list[str] = field(default_factory=list)
    store_full: bool = False
    deadline: float = 0.0
    """time.monotonic() after which files are no longer read (0: not set)."""
    out_of_time: int = 0
    scoped: bool = False
    """Only some paths were scanned (a file tool's); the others kept their entries."""
    read_files: int = 0
    """How many files were read (and saved when new) in this scan."""
    multi: set[str] = field(default_factory=set)
    """Regular files with more than one hard link."""
    slow: set[str] = field(default_factory=set)
    """Files whose bytes were not saved (unreadable, no time, no room): every scan tries
    again. (Racy files are re-read by the next full scan, and by an incremental one when
    an event names them: a write after the read is an event.)"""
    foreign: str | None = None
    """A directory on another device than the root (a mount point under the workspace)."""
    incremental: bool = False
    """Only the paths a watcher reported were scanned."""
    touched: set[str] | None = None
    """The paths whose entries may differ from the previous ones (None: any path). A full
    scan's are those it found created, changed or deleted (None when it is incomplete); an
    incremental one's, every path it looked at again."""
    generation: int = 0
    """The store's checkpoint count, this one included (store.py `touched_since`)."""

    def note(self, text: str) -> None:
        if len(self.notes) < MAX_NOTES:
            self.notes.append(text)
        elif len(self.notes) == MAX_NOTES:
            self.notes.append("(more notes left out)")


class Scanner:
    def __init__(
        self, root: str, blobs: BlobStore, limits: Limits,
        exclude: frozenset[tuple[int, int]] = frozenset(),
    ) -> None:
        self.root = root
        self.blobs = blobs
        self.limits = limits
        self.exclude = exclude
        self.watcher: Watcher | None = None
        """Told about every directory before it is listed (see inotify.py)."""
        self._list: ScanLister = python_scan_listing
        """Lists and lstats one directory (statdir.py: in C when it is built, which keeps
        unchanged files itself); chosen at each walk."""
        self._root_dev = 0

    def scan(self, previous: dict[str, Entry], *, budget: bool = True) -> ScanResult:
        """`budget`: stop reading after `max_read_seconds`. Raises OSError when the
        workspace root itself cannot be opened."""
        result = ScanResult({}, deadline=self._deadline(budget), touched=set())
        start = time.time_ns()
        root_fd = self._open_root()
        self._walk([(root_fd, "", None)], previous, result, start)
        if result.complete:
            assert result.touched is not None
            result.touched |= previous.keys() - result.entries.keys()  # deleted
        else:
            result.touched = None  # paths it never reached are unknown
        return result

    def _open_root(self) -> int:
        fd = os.open(self.root, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
        self._root_dev = os.fstat(fd).st_dev
        return fd

    def scan_dirty(
        self, previous: dict[str, Entry], paths: set[str], trees: set[str], *,
        budget: bool = True,
    ) -> ScanResult | None:
        """Re-scan `paths` (each alone: a directory that still is one keeps its subtree,
        which its own watch covers) and walk `trees` whole; every other path keeps its
        previous entry. None when only a full scan will do (a symlink or file where a
        parent directory was, a directory on another device). Raises OSError for an
        unusable root."""
        result = ScanResult(dict(previous), deadline=self._deadline(budget), incremental=True,
                            touched=set())
        start = time.time_ns()
        chosen = [p for p in paths | trees if not _under(p, trees)]
        by_parent: dict[str, list[str]] = {}
        for path in sorted(chosen):
            parent, _, name = path.rpartition("/")
            by_parent.setdefault(parent, []).append(name)
        root_fd = self._open_root()
        try:
            for parent, names in by_parent.items():
                fd = self._open_below(root_fd, parent)
                if fd is None:
                    return None
                if fd < 0:
                    continue  # the parent is gone: its own parent's event removes it
                try:
                    self._rescan(fd, parent, names, previous, result, trees, start)
                finally:
                    os.close(fd)
        finally:
            os.close(root_fd)
        return None if result.foreign is not None else result

    def _open_below(self, root_fd: int, rel: str) -> int | None:
        """A descriptor of directory `rel`, opened component by component without following
        a link; -1 when it is missing; None when a link or file stands on the way."""
        fd = os.dup(root_fd)
        for part in rel.split("/") if rel else ():
            try:
                child = os.open(part, DIR_FLAGS, dir_fd=fd)
            except FileNotFoundError:
                os.close(fd)
                return -1
            except OSError:
                os.close(fd)
                return None
            os.close(fd)
            fd = child
        return fd

    def _rescan(
        self, fd: int, parent: str, names: list[str], previous: dict[str, Entry],
        result: ScanResult, trees: set[str], start: int,
    ) -> None:
        entries = result.entries
        touched = result.touched
        assert touched is not None
        prefix = f"{parent}/" if parent else ""
        for name in names:
            rel = prefix + name
            touched.add(rel)
            old = previous.get(rel)
            try:
                st: os.stat_result | None = os.lstat(name, dir_fd=fd)
            except FileNotFoundError:
                st = None
            if (st is not None and stat.S_ISDIR(st.st_mode) and old is not None
                    and old.kind == "d" and rel not in trees):
                mode = st.st_mode & 0o7777
                entries[rel] = old if old.mode == mode else Entry("d", mode)
                continue
            if old is not None and old.kind == "d":
                below = rel + "/"
                for gone in [p for p in entries if p.startswith(below)]:
                    del entries[gone]
                    touched.add(gone)
            entries.pop(rel, None)
            if st is not None:
                stack: list[tuple[int, str, list[str] | None]] = []
                self._directory(fd, prefix, previous, result, stack, start, [name])
                self._walk(stack, previous, result, start)

    def scan_scope(
        self, previous: dict[str, Entry], scope: list[str], *, budget: bool = True
    ) -> ScanResult | None:
        """Re-scan only these relative paths (each with its subtree and its ancestors); every
        other path keeps its previous entry. None when a symlink or a file stands where an
        ancestor directory should be (a tool resolving through it could write elsewhere:
        the caller scans everything instead). Raises OSError for an unusable root."""
        result = ScanResult(dict(previous), deadline=self._deadline(budget))
        entries = result.entries
        start = time.time_ns()
        chosen = set(scope)
        for path in [p for p in entries if _within(p, chosen)]:
            del entries[path]
        for rel in scope:
            root_fd = self._open_root()
            found = self._ancestors(root_fd, rel, previous, result)
            if found is None:
                return None
            if isinstance(found, tuple):
                fd, prefix, names = found
                self._walk([(fd, prefix, names)], previous, result, start)
        return result

    def _deadline(self, budget: bool) -> float:
        seconds = self.limits.max_read_seconds
        return time.monotonic() + seconds if budget and seconds > 0 else 0.0

    def _ancestors(
        self, fd: int, rel: str, previous: dict[str, Entry], result: ScanResult,
    ) -> tuple[int, str, list[str]] | bool | None:
        """Open the directories down to `rel`'s parent, recording them; the walk item for
        `rel` itself; False when a parent is missing; None for a link or file on the way."""
        *dirs, name = rel.split("/")
        prefix = ""
        try:
            for part in dirs:
                path = prefix + part
                try:
                    st = os.lstat(part, dir_fd=fd)
                except FileNotFoundError:
                    for gone in [p for p in result.entries if p.startswith(path + "/")]:
                        del result.entries[gone]
                    result.entries.pop(path, None)
                    os.close(fd)
                    return False
                if not stat.S_ISDIR(st.st_mode):
                    os.close(fd)
                    return None
                old = previous.get(path)
                mode = st.st_mode & 0o7777
                keep = old is not None and old.kind == "d" and old.mode == mode
                result.entries[path] = old if keep and old is not None else Entry("d", mode)
                child = os.open(part, DIR_FLAGS, dir_fd=fd)
                os.close(fd)
                fd = child
                prefix = path + "/"
        except OSError:
            os.close(fd)
            return None
        return fd, prefix, [name]

    def _walk(
        self, stack: list[tuple[int, str, list[str] | None]], previous: dict[str, Entry],
        result: ScanResult, start: int,
    ) -> None:
        self._list = scan_listing()  # (ACPD_NATIVE is read at each walk)
        try:
            while stack:
                fd, prefix, only = stack.pop()
                try:
                    self._directory(fd, prefix, previous, result, stack, start, only)
                finally:
                    os.close(fd)
        finally:
            for fd, _, _ in stack:
                os.close(fd)

    def _directory(
        self, fd: int, prefix: str, previous: dict[str, Entry], result: ScanResult,
        stack: list[tuple[int, str, list[str] | None]], start: int,
        only: list[str] | None = None,
    ) -> None:
        entries = result.entries
        if only is None and self.watcher is not None:
            self.watcher.add(fd, prefix[:-1])  # before listing: later changes are events
        limit = self.limits.max_entries
        try:
            names, stats, errors = (
                self._list(fd, prefix, previous, entries, result.multi, limit - len(entries))
                if only is None else python_listing(fd, only))
        except OSError as exc:
            result.note(f"{prefix or '.'}: cannot list ({exc.strerror}); its files are unknown")
            result.complete = False
            return
        for name, code in errors:
            result.note(f"{prefix + name}: cannot lstat ({os.strerror(code)}); not saved, "
                        "its changes are unknown")
            result.complete = False
        if len(entries) + len(names) > limit:
            names = names[: max(0, limit - len(entries))]
            if result.complete:
                result.note(f"more than {limit} entries: stopped here")
            result.complete = False
        get = previous.get
        touched = result.touched
        for name, st in zip(names, stats, strict=False):  # (names may be cut at the limit)
            rel = prefix + name
            mode = st.st_mode
            old = get(rel)
            kind = mode & _FORMAT  # stat.S_IFMT, inlined: this loop runs once per path
            if kind == stat.S_IFREG:
                if st.st_nlink > 1:
                    result.multi.add(rel)
                # The hot path, inlined: an unchanged file is one lstat and a comparison.
                # (Any chmod, write or rename moves the ctime, which no one can set back.)
                if (
                    old is not None and old.fast and old.ctime_ns == st.st_ctime_ns
                    and old.mtime_ns == st.st_mtime_ns and old.size == st.st_size
                    and old.ino == st.st_ino and old.dev == st.st_dev
                ):
                    entries[rel] = old
                else:
                    entries[rel] = made = self._file(fd, name, rel, st, result, start)
                    if touched is not None:
                        touched.add(rel)
                    if not made.fast and not made.racy:
                        result.slow.add(rel)  # not saved: read again by every scan
            elif kind == stat.S_IFDIR:
                if (st.st_dev, st.st_ino) in self.exclude:
                    continue
                if st.st_dev != self._root_dev:
                    result.foreign = rel
                if old is not None and old.kind == "d" and old.mode == mode & 0o7777:
                    entries[rel] = old
                else:
                    entries[rel] = Entry("d", mode & 0o7777)
                    if touched is not None:
                        touched.add(rel)
                self._descend(fd, name, rel, result, stack)
            elif kind == stat.S_IFLNK:
                entries[rel] = link = self._link(fd, name, st, old, result, rel)
                if link is not old and touched is not None:
                    touched.add(rel)
            else:
                result.skipped.append(rel)  # FIFO, socket or device: never opened

    def _descend(
        self, fd: int, name: str, rel: str, result: ScanResult,
        stack: list[tuple[int, str, list[str] | None]],
    ) -> None:
        try:
            stack.append((os.open(name, DIR_FLAGS, dir_fd=fd), rel + "/", None))
        except OSError as exc:
            if exc.errno in (errno.ELOOP, errno.ENOTDIR, errno.ENOENT):
                result.note(f"{rel}: replaced while it was walked; not saved")
            else:
                result.note(f"{rel}: cannot open ({exc.strerror}); its files are unknown")
            result.complete = False

    def _link(
        self, fd: int, name: str, st: StatLike, old: Entry | None, result: ScanResult,
        rel: str,
    ) -> Entry:
        if old is not None and old.kind == "l" and old.same_stat(st):
            return old
        try:
            target = os.readlink(name, dir_fd=fd)
        except OSError as exc:
            result.note(f"{rel}: cannot read the link ({exc.strerror})")
            target = ""
        return Entry("l", st.st_mode & 0o7777, st.st_size, st.st_mtime_ns, st.st_ctime_ns,
                     st.st_ino, st.st_dev, target=target)

    def _file(
        self, fd: int, name: str, rel: str, st: StatLike, result: ScanResult, start: int,
    ) -> Entry:
        if st.st_size > self.limits.max_file_bytes:
            return _unsaved(st, TOO_LARGE, fast=True)
        if result.deadline > 0 and time.monotonic() > result.deadline:
            result.deadline = -1.0  # from now on, no more reading in this scan
        if result.deadline < 0:
            result.out_of_time += 1
            return _unsaved(st, "not saved yet (checkpoint time budget)")
        result.read_files += 1
        try:
            data, fst = _read(fd, name, self.limits.max_file_bytes)
        except OSError as exc:
            return _unsaved(st, f"unreadable: {exc.strerror}")
        if fst is None:
            return _unsaved(st, "not a regular file when opened")
        if data is None:
            return _unsaved(fst, TOO_LARGE)  # it grew past the cap while it was read
        digest = self.blobs.put(data)
        if digest is None:
            if not result.store_full:
                result.store_full = True
                result.note(f"the checkpoint store is full ({self.limits.max_total_bytes} "
                            "bytes): some files were not saved")
            return _unsaved(fst, "store full")
        racy = max(fst.st_mtime_ns, fst.st_ctime_ns) >= start - RACY_NS
        return Entry("f", fst.st_mode & 0o7777, fst.st_size, fst.st_mtime_ns, fst.st_ctime_ns,
                     fst.st_ino, fst.st_dev, digest, racy=racy, fast=not racy)


TOO_LARGE = "too large to save"


def _under(path: str, trees: set[str]) -> bool:
    """`path` lies strictly below one of `trees`."""
    while "/" in path:
        path = path.rsplit("/", 1)[0]
        if path in trees:
            return True
    return False


def _within(path: str, chosen: set[str]) -> bool:
    """`path` is one of `chosen` or lies under one."""
    if path in chosen:
        return True
    while "/" in path:
        path = path.rsplit("/", 1)[0]
        if path in chosen:
            return True
    return False


def _unsaved(st: StatLike, note: str, *, fast: bool = False) -> Entry:
    return Entry("f", st.st_mode & 0o7777, st.st_size, st.st_mtime_ns, st.st_ctime_ns,
                 st.st_ino, st.st_dev, None, note=note, fast=fast)


def _read(fd: int, name: str, limit: int) -> tuple[bytes | None, os.stat_result | None]:
    """The bytes (None past `limit`: the file grew) and the stat taken before reading; a
    stat that moved while reading makes the returned one differ from the file's, so the
    next scan reads it again. (None, None): not a regular file once opened."""
    file_fd = os.open(name, FILE_FLAGS, dir_fd=fd)
    try:
        before = os.fstat(file_fd)
        if not stat.S_ISREG(before.st_mode):
            return None, None
        chunks: list[bytes] = []
        total = 0
        while True:
            chunk = os.read(file_fd, 1 << 20)
            if not chunk:
                break
            total += len(chunk)
            if total > limit:
                return None, before
            chunks.append(chunk)
        return b"".join(chunks), before
    finally:
        os.close(file_fd)
