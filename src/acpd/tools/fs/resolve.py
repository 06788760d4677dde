"""Opening a path beneath a root directory fd: openat2 or, where that is missing, a walk.

Both resolvers give the same answers: symlinks are followed only while they stay beneath the
root, absolute symlinks and absolute paths are refused (EXDEV, as RESOLVE_BENEATH does), `..`
may not climb above the root (EXDEV), loops and more than 40 links fail with ELOOP.
"""

from __future__ import annotations

import errno
import os
import stat
from typing import Protocol

from acpd.tools.fs.syscalls import (
    RESOLVE_BENEATH,
    RESOLVE_NO_MAGICLINKS,
    openat2,
    openat2_available,
)

MAX_SYMLINK_HOPS = 40
EAGAIN_RETRIES = 32


class Resolver(Protocol):
    name: str

    def open(self, root_fd: int, rel: str, flags: int) -> int:
        """Open `rel` (relative, "/"-separated) beneath `root_fd` with `flags`; return the fd.

        Raises OSError: EXDEV when the path or a symlink leaves the root, ELOOP for loops,
        ENOENT/ENOTDIR/EISDIR/EACCES as open(2) does.
        """
        ...


def components(path: str) -> list[str]:
    """Split on "/" dropping empty and "." parts; ".." is kept for the resolver."""
    return [part for part in path.split("/") if part not in ("", ".")]


class Openat2Resolver:
    """The kernel resolves: openat2 with RESOLVE_BENEATH | RESOLVE_NO_MAGICLINKS."""

    name = "openat2"

    def open(self, root_fd: int, rel: str, flags: int) -> int:
        if rel.startswith("/"):
            raise OSError(errno.EXDEV, "absolute path given to a beneath-resolver", rel)
        for _ in range(EAGAIN_RETRIES):
            try:
                return openat2(
                    root_fd, rel or ".", flags | os.O_CLOEXEC,
                    resolve=RESOLVE_BENEATH | RESOLVE_NO_MAGICLINKS,
                )
            except OSError as exc:
                # A concurrent rename while resolving ".." makes the kernel give up: retry.
                if exc.errno != errno.EAGAIN:
                    raise
        raise OSError(errno.EXDEV, "the path kept changing while it was resolved", rel)


class WalkResolver:
    """One component at a time from held directory fds, never letting the kernel follow a link.

    Intermediate components are opened with O_PATH|O_NOFOLLOW and must be directories; the leaf
    with the caller's flags plus O_NOFOLLOW. A symlink met on the way is read with readlinkat
    and its (relative) target spliced into the remaining components; ".." pops the stack of
    held fds, so it can never reach above the root fd, whatever is renamed meanwhile.
    """

    name = "walk"

    def open(self, root_fd: int, rel: str, flags: int) -> int:
        if rel.startswith("/"):
            raise OSError(errno.EXDEV, "absolute path given to a beneath-resolver", rel)
        todo = list(reversed(components(rel)))
        stack = [os.dup(root_fd)]
        hops = 0
        try:
            while todo:
                name = todo.pop()
                if name == "..":
                    if len(stack) == 1:
                        raise OSError(errno.EXDEV, "'..' leaves the root", rel)
                    os.close(stack.pop())
                    continue
                if todo:
                    fd = os.open(name, os.O_PATH | os.O_NOFOLLOW | os.O_CLOEXEC, dir_fd=stack[-1])
                    mode = os.fstat(fd).st_mode
                    if stat.S_ISDIR(mode):
                        stack.append(fd)
                        continue
                    os.close(fd)
                    if not stat.S_ISLNK(mode):
                        raise OSError(errno.ENOTDIR, os.strerror(errno.ENOTDIR), rel)
                else:
                    leaf = self._open_leaf(stack[-1], name, flags)
                    if leaf is not None:
                        return leaf
                hops += 1
                if hops > MAX_SYMLINK_HOPS:
                    raise OSError(errno.ELOOP, os.strerror(errno.ELOOP), rel)
                target = _readlink(stack[-1], name)
                if target is None:  # swapped back to a non-link meanwhile: look again
                    todo.append(name)
                    continue
                if target.startswith("/"):
                    raise OSError(errno.EXDEV, "absolute symlink", rel)
                todo.extend(reversed(components(target)))
            return os.open(".", (flags & ~os.O_NOFOLLOW) | os.O_CLOEXEC, dir_fd=stack[-1])
        finally:
            for fd in stack:
                os.close(fd)

    @staticmethod
    def _open_leaf(dir_fd: int, name: str, flags: int) -> int | None:
        """The leaf's fd, or None when the leaf is a symlink (the caller follows it)."""
        try:
            fd = os.open(name, flags | os.O_NOFOLLOW | os.O_CLOEXEC, dir_fd=dir_fd)
        except OSError as exc:
            if exc.errno not in (errno.ELOOP, errno.ENOTDIR):
                raise
            try:
                if stat.S_ISLNK(os.stat(name, dir_fd=dir_fd, follow_symlinks=False).st_mode):
                    return None
            except OSError:
                pass
            raise
        if flags & os.O_PATH and stat.S_ISLNK(os.fstat(fd).st_mode):
            os.close(fd)  # O_PATH|O_NOFOLLOW opens the link itself
            return None
        return fd


def _readlink(dir_fd: int, name: str) -> str | None:
    try:
        return os.readlink(name, dir_fd=dir_fd)
    except OSError as exc:
        if exc.errno in (errno.EINVAL, errno.ENOENT):
            return None
        raise


def choose_resolver(kind: str = "auto") -> Resolver:
    """"openat2", "walk", or "auto" (openat2 when the kernel and seccomp allow it).

    Raises ValueError for an unknown kind, OSError when "openat2" is demanded but unavailable.
    """
    if kind == "walk":
        return WalkResolver()
    if kind == "openat2":
        if not openat2_available():
            raise OSError(errno.ENOSYS, "openat2 is not available here")
        return Openat2Resolver()
    if kind == "auto":
        return Openat2Resolver() if openat2_available() else WalkResolver()
    raise ValueError(f"unknown resolver {kind!r}")
