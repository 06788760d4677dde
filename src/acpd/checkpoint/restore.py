"""Putting paths back to their recorded state, from directory fds, never through a symlink.

Every parent directory is opened component by component from the workspace root with
O_NOFOLLOW: a symlink (or a file) where a directory should be stops the restore of that path
with a reason, it is never followed out of the workspace. A symlink is restored as a link
(its target text), a file by writing its saved bytes to a temporary name in the same
directory and renaming it over the path (so each path changes at once), with its permission
bits. Missing parent directories are created.

Order: first remove what must go (created paths and paths whose kind changed), deepest
first; a directory is only removed when it is empty (whatever else is in it stays, and is
reported); then directories, shallowest first; then files and symlinks; then directory
modes, deepest first (a read-only directory last, or its files could not be written).
"""

from __future__ import annotations

import contextlib
import errno
import itertools
import os
import stat

from acpd.checkpoint.blobs import BlobStore
from acpd.checkpoint.entries import Entry

_counter = itertools.count()
DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
NEW_DIR_MODE = 0o755


class Restorer:
    def __init__(self, root: str, blobs: BlobStore) -> None:
        self.root = root
        self.blobs = blobs
        self.failures: list[tuple[str, str]] = []

    def apply(self, targets: dict[str, Entry | None]) -> list[tuple[str, str]]:
        """Make each path match its entry (None: absent). Returns (path, reason) for each
        path that could not be restored."""
        self.failures = []
        root_fd = os.open(self.root, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
        try:
            deepest = sorted(targets, key=lambda p: p.count("/"), reverse=True)
            for path in deepest:
                self._clear(root_fd, path, targets[path])
            for path in reversed(deepest):
                entry = targets[path]
                if entry is not None and entry.kind == "d":
                    self._guard(path, lambda p=path: self._make_dir(root_fd, p))
            for path in reversed(deepest):
                entry = targets[path]
                if entry is not None and entry.kind != "d":
                    self._guard(path, lambda p=path, e=entry: self._put(root_fd, p, e))
            for path in deepest:
                entry = targets[path]
                if entry is not None and entry.kind == "d":
                    self._guard(path, lambda p=path, e=entry: self._chmod_dir(root_fd, p, e))
        finally:
            os.close(root_fd)
        return self.failures

    def _guard(self, path: str, action: object) -> None:
        if any(p == path for p, _ in self.failures):
            return
        try:
            action()  # type: ignore[operator]
        except (OSError, ValueError) as exc:
            reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
            if isinstance(exc, OSError) and exc.errno in (errno.ENOTDIR, errno.ELOOP):
                reason = f"a symlink or file stands where a directory was ({reason})"
            self.failures.append((path, reason))

    def _clear(self, root_fd: int, path: str, entry: Entry | None) -> None:
        """Remove what is at `path` when the target is absent or of another kind."""
        try:
            parent, name = self._parent(root_fd, path, create=False)
        except OSError as exc:
            if exc.errno in (errno.ENOENT, errno.ENOTDIR, errno.ELOOP):
                # Nothing of ours is there: no parent, or a link or file in a directory's
                # place (restored by its own target if the call made it, else the writes
                # below stop at it and say so).
                return
            self.failures.append((path, exc.strerror or str(exc)))
            return
        try:
            self._remove(parent, name, path, entry)
        except OSError as exc:
            self.failures.append((path, exc.strerror or str(exc)))
        finally:
            os.close(parent)

    def _remove(self, parent: int, name: str, path: str, entry: Entry | None) -> None:
        try:
            st = os.stat(name, dir_fd=parent, follow_symlinks=False)
        except FileNotFoundError:
            return
        mode = st.st_mode
        kind = "d" if stat.S_ISDIR(mode) else "l" if stat.S_ISLNK(mode) else "f"
        if entry is not None and entry.kind == kind:
            return
        if kind != "d":
            os.unlink(name, dir_fd=parent)
            return
        try:
            os.rmdir(name, dir_fd=parent)
        except OSError as exc:
            if exc.errno not in (errno.ENOTEMPTY, errno.EEXIST):
                raise
            self.failures.append((path, "a directory that is not empty (kept)"))

    def _make_dir(self, root_fd: int, path: str) -> None:
        parent, name = self._parent(root_fd, path, create=True)
        try:
            with contextlib.suppress(FileExistsError):
                os.mkdir(name, 0o700, dir_fd=parent)
            st = os.stat(name, dir_fd=parent, follow_symlinks=False)
            if not stat.S_ISDIR(st.st_mode):
                raise OSError(errno.ENOTDIR, "something else is in the way")
        finally:
            os.close(parent)

    def _chmod_dir(self, root_fd: int, path: str, entry: Entry) -> None:
        fd = self._open_dir(root_fd, path)
        try:
            os.fchmod(fd, entry.mode)
        finally:
            os.close(fd)

    def _put(self, root_fd: int, path: str, entry: Entry) -> None:
        parent, name = self._parent(root_fd, path, create=True)
        # A short name of our own: the path's name may already be as long as a name can be.
        temp = f".acpd-undo-{os.getpid()}-{next(_counter)}"
        try:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(temp, dir_fd=parent)
            if entry.kind == "l":
                os.symlink(entry.target or "", temp, dir_fd=parent)
            else:
                self._write(parent, temp, entry)
            try:
                os.rename(temp, name, src_dir_fd=parent, dst_dir_fd=parent)
            except OSError:
                with contextlib.suppress(OSError):
                    os.unlink(temp, dir_fd=parent)
                raise
        finally:
            os.close(parent)

    def _write(self, parent: int, temp: str, entry: Entry) -> None:
        if entry.blob is None:
            raise ValueError(f"its bytes were not saved ({entry.note or 'unknown reason'})")
        data = self.blobs.get(entry.blob)
        flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
        fd = os.open(temp, flags, 0o600, dir_fd=parent)
        try:
            view = memoryview(data)
            while view:
                view = view[os.write(fd, view):]
            os.fchmod(fd, entry.mode)
            os.fsync(fd)
        except BaseException:
            os.close(fd)
            with contextlib.suppress(OSError):
                os.unlink(temp, dir_fd=parent)
            raise
        os.close(fd)

    def _parent(self, root_fd: int, path: str, *, create: bool) -> tuple[int, str]:
        """An fd of the directory holding `path` (the caller closes it) and the last name.
        Raises OSError (ELOOP/ENOTDIR for a symlink or a file in the way)."""
        *dirs, name = path.split("/")
        fd = os.dup(root_fd)
        try:
            for part in dirs:
                if create:
                    with contextlib.suppress(FileExistsError):
                        os.mkdir(part, NEW_DIR_MODE, dir_fd=fd)
                child = os.open(part, DIR_FLAGS, dir_fd=fd)
                os.close(fd)
                fd = child
        except BaseException:
            os.close(fd)
            raise
        return fd, name

    def _open_dir(self, root_fd: int, path: str) -> int:
        parent, name = self._parent(root_fd, path, create=False)
        try:
            return os.open(name, DIR_FLAGS, dir_fd=parent)
        finally:
            os.close(parent)
