"""The path sandbox: every file tool opens through here, relative to a held fd of a root.

A path the model sends is mapped lexically onto one allowed root (never through realpath), and
the rest is resolved by the kernel beneath that root's fd (openat2 RESOLVE_BENEATH |
RESOLVE_NO_MAGICLINKS) or by the component walk of `resolve.WalkResolver`. The opened fd's real
path (`/proc/self/fd/N`) is then checked once more and matched against deny_read/allow_read
and the call's path policy (`PathGuard`: the shell's `[paths]` and the permission rules).
Nothing is opened by path name after the check, so a symlink swapped in meanwhile cannot
redirect the open.

With a path policy, a path outside every root is not refused outright: it is opened from "/"
(openat2 RESOLVE_NO_MAGICLINKS, symlinks followed) and its real path is judged like any other
(read_roots/write_roots, then outside_read/outside_write, "ask" only with the call approved).
"""

from __future__ import annotations

import contextlib
import errno
import os
import re
import stat
from collections.abc import Iterator, Sequence
from dataclasses import dataclass

from acpd.tools.errors import ToolError
from acpd.tools.fs.errors import blocked, failed, from_os_error, invalid
from acpd.tools.fs.globs import ReadPolicy
from acpd.tools.fs.pathguard import Mode, PathGuard
from acpd.tools.fs.resolve import MAX_SYMLINK_HOPS, Resolver, choose_resolver
from acpd.tools.fs.syscalls import RESOLVE_NO_MAGICLINKS, openat2, openat2_available

DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC
READ_FLAGS = os.O_RDONLY | os.O_NONBLOCK | os.O_NOCTTY | os.O_CLOEXEC


@dataclass(frozen=True, slots=True)
class Root:
    given: str
    real: str
    fd: int
    outside: bool = False
    """The file-system root, for paths outside the workspace (judged by the path policy)."""


@dataclass(frozen=True, slots=True)
class Target:
    """A path mapped onto a root: `parts` relative to it (".." left for the resolver)."""

    root: Root
    parts: tuple[str, ...]
    must_be_dir: bool
    shown: str

    @property
    def rel(self) -> str:
        return "/".join(self.parts)


@dataclass(slots=True)
class Opened:
    """An fd whose real path was checked to be inside `root`."""

    fd: int
    real: str
    st: os.stat_result
    root: Root

    def close(self) -> None:
        if self.fd >= 0:
            os.close(self.fd)
            self.fd = -1


@dataclass(slots=True)
class Entry:
    """A name in an opened parent directory; the name itself is never followed."""

    parent: Opened
    name: str
    shown: str
    must_be_dir: bool = False
    """The path ended with "/" (or "/."): only a real directory may be meant."""

    @property
    def real(self) -> str:
        return os.path.join(self.parent.real, self.name)

    @property
    def root(self) -> Root:
        return self.parent.root

    def lstat(self) -> os.stat_result | None:
        """The entry's lstat, or None when it does not exist. Raises OSError otherwise."""
        try:
            return os.stat(self.name, dir_fd=self.parent.fd, follow_symlinks=False)
        except FileNotFoundError:
            return None

    def close(self) -> None:
        self.parent.close()


def inside(real: str, root_real: str) -> bool:
    return real == root_real or real.startswith(root_real.rstrip("/") + "/")


def clean_path(path: str) -> str:
    """Collapse repeated slashes: normpath('//etc/shadow') keeps both, this does not."""
    return re.sub("/{2,}", "/", path)


class Sandbox:
    """Holds an fd per allowed root; use as a context manager (closes them)."""

    def __init__(
        self, roots: Sequence[str], cwd: str, policy: ReadPolicy | None = None,
        resolver: Resolver | None = None, guard: PathGuard | None = None,
    ) -> None:
        """Raises ToolError(PolicyBlocked) when no root can be opened."""
        self.policy = policy or ReadPolicy()
        self.guard = guard
        self._outside: Root | None = None
        self.resolver = resolver or choose_resolver()
        self.cwd = clean_path(os.path.abspath(cwd))
        self.roots: list[Root] = []
        try:
            for given in roots:
                path = clean_path(os.path.abspath(os.path.join(self.cwd, given)))
                fd = os.open(path, os.O_PATH | os.O_DIRECTORY | os.O_CLOEXEC)
                self.roots.append(Root(path, self.real_of(fd), fd))
        except OSError as exc:
            self.close()
            raise blocked(
                f"workspace root {exc.filename} cannot be opened: {exc.strerror}"
            ) from None
        except BaseException:
            self.close()
            raise
        if not self.roots:
            raise blocked("no workspace root is configured")
        self.roots.sort(key=lambda r: len(r.given), reverse=True)
        self.cwd_real = os.path.realpath(self.cwd)

    def __enter__(self) -> Sandbox:
        return self

    def __exit__(self, *_exc: object) -> None:
        self.close()

    def close(self) -> None:
        for root in [*self.roots, *([self._outside] if self._outside else [])]:
            with contextlib.suppress(OSError):
                os.close(root.fd)
        self.roots = []
        self._outside = None

    def check(self, mode: Mode, real: str, shown: str) -> None:
        """The call's path policy on a real path. Raises ToolError(PolicyBlocked)."""
        if self.guard is not None:
            self.guard.check(mode, real, shown)

    def would_be(self, path: str | Target) -> str:
        """Where `path` would be, by realpath: only to refuse early, before a call creates
        parent directories; the check that counts is made on what is then opened."""
        target = path if isinstance(path, Target) else self.locate(path)
        return os.path.realpath(os.path.join(target.root.real, target.rel))

    def precheck(self, mode: Mode, path: str | Target) -> None:
        """The path policy on `would_be(path)`. Raises ToolError(PolicyBlocked)."""
        if self.guard is not None:
            target = path if isinstance(path, Target) else self.locate(path)
            self.guard.check(mode, self.would_be(target), target.shown)

    def outside_root(self) -> Root:
        if self._outside is None:
            fd = os.open("/", os.O_PATH | os.O_DIRECTORY | os.O_CLOEXEC)
            self._outside = Root("/", "/", fd, outside=True)
        return self._outside

    # --- mapping ------------------------------------------------------------------------

    def locate(self, path: str) -> Target:
        """Map `path` (relative to the cwd, or absolute) onto a root, lexically.

        Raises ToolError: InvalidParameters for an empty path or a NUL byte, PolicyBlocked when
        the path lies under no root.
        """
        if not path or "\x00" in path:
            raise invalid("the path is empty or contains a NUL byte")
        if path == "~" or path.startswith("~/"):
            path = os.path.expanduser(path)
        absolute = clean_path(path if path.startswith("/") else f"{self.cwd}/{path}")
        raw = absolute.split("/")
        must_be_dir = absolute.endswith("/") or raw[-1] in (".", "..")
        for root in self.roots:
            for prefix in dict.fromkeys((root.given, root.real)):
                if inside(absolute, prefix):
                    rest = absolute[len(prefix) :].split("/")
                    parts = tuple(p for p in rest if p)
                    return Target(root, parts, must_be_dir and bool(parts), path)
        if self.guard is not None and self.guard.reaches_outside:
            parts = tuple(p for p in absolute.split("/") if p)
            return Target(self.outside_root(), parts, must_be_dir and bool(parts), path)
        shown = ", ".join(r.given for r in self.roots)
        raise blocked(f"{path} is outside the workspace ({shown})")

    def target_in(self, root: Root, rel: str, shown: str) -> Target:
        parts = tuple(p for p in rel.split("/") if p)
        return Target(root, parts, rel.endswith("/"), shown)

    def display(self, real: str) -> str:
        """How a real path is shown to the model: relative to the cwd when under it."""
        if inside(real, self.cwd_real):
            return os.path.relpath(real, self.cwd_real)
        return real

    # --- opening ------------------------------------------------------------------------

    def _from_outside(self, target: Target) -> Target:
        """The same path, taken from "/" (the root's real path, then the parts)."""
        parts = tuple(p for p in target.root.real.split("/") if p) + target.parts
        return Target(self.outside_root(), parts, target.must_be_dir, target.shown)

    def real_of(self, fd: int) -> str:
        """The kernel's path for `fd`. Raises ToolError when it cannot be known."""
        try:
            real = os.readlink(f"/proc/self/fd/{fd}")
        except OSError:
            raise blocked("cannot verify a real path: /proc is not available") from None
        if not real.startswith("/") or real.endswith(" (deleted)"):
            raise failed(f"{real}: the file was removed while it was opened")
        return real

    def resolve(self, target: Target, flags: int) -> Opened:
        """Open `target` beneath its root with `flags` and check where it landed.

        Raises ToolError: PolicyBlocked for escapes, loops and magic links, PermanentFailure
        for missing files and other OS errors.
        """
        if target.must_be_dir:
            flags |= os.O_DIRECTORY
        try:
            if target.root.outside:
                fd = _open_outside(target.root.fd, target.rel, flags)
            else:
                fd = self.resolver.open(target.root.fd, target.rel, flags)
        except OSError as exc:
            if exc.errno == errno.EXDEV and self.guard is not None and (
                    self.guard.reaches_outside):
                # A link out of the workspace: what it reaches is judged by the path policy
                # (outside_read/outside_write, deny patterns) on the real path of the fd.
                return self.resolve(self._from_outside(target), flags)
            raise from_os_error(exc, target.shown) from None
        try:
            real = self.real_of(fd)
            if not inside(real, target.root.real):
                raise blocked(f"{target.shown} resolves outside the workspace ({real})")
            return Opened(fd, real, os.fstat(fd), target.root)
        except BaseException:
            os.close(fd)
            raise

    def open_file(self, path: str | Target) -> Opened:
        """Open a file for reading after every check: a regular file, one link, read policy.

        The file is first opened with O_PATH (no side effects, never blocks: FIFOs and devices
        are refused before anything reads them), then reopened through its own fd.
        Raises ToolError (PolicyBlocked / PermanentFailure).
        """
        target = path if isinstance(path, Target) else self.locate(path)
        handle = self.resolve(target, os.O_PATH)
        try:
            self.vet_file(handle.st, handle.real, handle.root, target.shown)
            try:
                fd = os.open(f"/proc/self/fd/{handle.fd}", READ_FLAGS)
            except OSError as exc:
                raise from_os_error(exc, target.shown) from None
            st = os.fstat(fd)
            if (st.st_dev, st.st_ino) != (handle.st.st_dev, handle.st.st_ino):
                os.close(fd)
                raise blocked(f"{target.shown} changed while it was opened")
            return Opened(fd, handle.real, st, handle.root)
        finally:
            handle.close()

    def vet_file(self, st: os.stat_result, real: str, root: Root, shown: str) -> None:
        """Raises ToolError unless `st` is a readable regular file with one link."""
        if stat.S_ISDIR(st.st_mode):
            raise failed(f"{shown} is a directory")
        if not stat.S_ISREG(st.st_mode):
            raise blocked(f"{shown} is not a regular file (FIFO, device or socket): refused")
        if st.st_nlink > 1:
            raise blocked(
                f"{shown} has {st.st_nlink} hard links: refused (another link may be outside "
                "the workspace)"
            )
        reason = self.policy.refusal(real, root.real)
        if reason is not None:
            raise blocked(reason)
        self.check("read", real, shown)

    def open_dir(self, path: str | Target, *, check_policy: bool = True) -> Opened:
        """Open a directory (O_RDONLY, for listing and as a dir_fd).

        Raises ToolError: PermanentFailure when it is missing or not a directory, PolicyBlocked
        for escapes or when deny_read matches it.
        """
        target = path if isinstance(path, Target) else self.locate(path)
        opened = self.resolve(target, DIR_FLAGS)
        if check_policy:
            reason = self.policy.refusal(opened.real, opened.root.real, is_dir=True)
            try:
                if reason is not None:
                    raise blocked(reason)
                self.check("read", opened.real, target.shown)
            except ToolError:
                opened.close()
                raise
        return opened

    def entry(self, path: str | Target, *, make_parents: bool = False) -> Entry:
        """Open the parent of `path` beneath its root; the last name is left unresolved.

        Raises ToolError: PolicyBlocked when the path is a root, lies above one, or ends in
        "." or ".."; PermanentFailure when the parent is missing (unless `make_parents`).
        """
        target = path if isinstance(path, Target) else self.locate(path)
        if not target.parts or target.parts[-1] in (".", ".."):
            raise blocked(f"{target.shown} must name an entry inside the workspace")
        parent = Target(target.root, target.parts[:-1], False, target.shown)
        if make_parents:
            self.make_dirs(parent).close()
        opened = self.resolve(parent, DIR_FLAGS)
        entry = Entry(opened, target.parts[-1], target.shown, target.must_be_dir)
        for root in self.roots:
            if inside(root.real, entry.real):
                entry.close()
                raise blocked(f"{target.shown} is a workspace root or lies above one")
        return entry

    def write_target(self, path: str | Target, *, make_parents: bool = False) -> Entry:
        """The entry a write replaces, following a symlinked leaf while it stays beneath.

        Raises ToolError: PolicyBlocked for absolute or escaping symlinks, FIFOs, devices and
        files with several links; PermanentFailure for directories.
        """
        target = path if isinstance(path, Target) else self.locate(path)
        if make_parents:
            self.precheck("write", target)
        for _ in range(MAX_SYMLINK_HOPS):
            entry = self.entry(target, make_parents=make_parents)
            try:
                st = entry.lstat()
                if st is None:
                    if target.must_be_dir:
                        raise failed(f"{target.shown} ends with / but is not a directory")
                    self.check("write", entry.real, target.shown)
                    return entry
                if stat.S_ISLNK(st.st_mode):
                    link = os.readlink(entry.name, dir_fd=entry.parent.fd)
                    if link.startswith("/"):
                        if self.guard is None or not self.guard.reaches_outside:
                            raise blocked(
                                f"{target.shown} is a symlink to an absolute path: refused")
                        # judged on where it lands, like any path outside the workspace
                        target = self.target_in(self.outside_root(), link, target.shown)
                        entry.close()
                        continue
                    rel = os.path.relpath(entry.parent.real, entry.root.real)
                    target = self.target_in(entry.root, f"{rel}/{link}", target.shown)
                    entry.close()
                    continue
                if stat.S_ISDIR(st.st_mode):
                    raise failed(f"{target.shown} is a directory")
                if not stat.S_ISREG(st.st_mode):
                    raise blocked(f"{target.shown} is not a regular file: refused")
                if st.st_nlink > 1:
                    raise blocked(f"{target.shown} has {st.st_nlink} hard links: refused")
                self.check("write", entry.real, target.shown)
                return entry
            except ToolError:
                entry.close()
                raise
            except OSError as exc:
                entry.close()
                raise from_os_error(exc, target.shown) from None
        raise blocked(f"{target.shown}: too many symlinks")

    def make_dirs(self, path: str | Target) -> Opened:
        """Open the directory, creating missing components one by one beneath the root.

        Raises ToolError like `resolve`; PermanentFailure when a component is a file or the
        path uses ".." in its missing part.
        """
        target = path if isinstance(path, Target) else self.locate(path)
        with contextlib.suppress(ToolError):
            return self.resolve(target, DIR_FLAGS)
        self.precheck("write", target)
        for i in range(1, len(target.parts) + 1):
            step = Target(target.root, target.parts[:i], False, target.shown)
            try:
                self.resolve(step, DIR_FLAGS).close()
                continue
            except ToolError:
                if target.parts[i - 1] == "..":
                    raise
            parent = self.resolve(Target(target.root, target.parts[: i - 1], False, target.shown),
                                  DIR_FLAGS)
            try:
                self.check("write", os.path.join(parent.real, target.parts[i - 1]), target.shown)
                os.mkdir(target.parts[i - 1], 0o777, dir_fd=parent.fd)
            except FileExistsError:
                pass
            except OSError as exc:
                raise from_os_error(exc, target.shown) from None
            finally:
                parent.close()
        return self.resolve(target, DIR_FLAGS)


def _open_outside(root_fd: int, rel: str, flags: int) -> int:
    """Open a path outside the workspace from "/": symlinks are followed (what counts is the
    real path of the fd, judged afterwards), /proc magic links are not."""
    if openat2_available():
        return openat2(root_fd, rel or ".", flags | os.O_CLOEXEC, resolve=RESOLVE_NO_MAGICLINKS)
    return os.open("/" + rel, flags | os.O_CLOEXEC)


@contextlib.contextmanager
def os_errors(shown: str) -> Iterator[None]:
    """Translate OSError raised inside the block into a ToolError for `shown`."""
    try:
        yield
    except OSError as exc:
        raise from_os_error(exc, shown) from None
