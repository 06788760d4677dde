"""create_directory, delete_path, move_path, copy_path on entries opened beneath a root.

None of them follows a symlink at the path's last component: delete removes the link, move
moves it, copy copies it as a link (same target text, never dereferenced; a read through the
copy is still resolved beneath the root, so a link pointing outside stays unreadable). A
trailing slash on a symlink is refused rather than followed. Roots and their ancestors can
neither be deleted nor moved.

The call's path policy judges every path the operation changes, on real paths: a delete or a
move writes (removes) every entry of its source tree, a move or a copy writes every entry it
creates under its destination (so moving a directory to `.git/hooks` is judged as writing
`.git/hooks/<each file>`), and a move or a copy reads every file of its source.
"""

from __future__ import annotations

import contextlib
import errno
import os
import shutil
import stat

import anyio.to_thread

from acpd.tools.errors import ToolError
from acpd.tools.fs.atomic import remove_stale_temps, temp_name
from acpd.tools.fs.config import FileToolsConfig
from acpd.tools.fs.errors import blocked, failed, from_os_error
from acpd.tools.fs.params import PathParams, SourceDestinationParams
from acpd.tools.fs.pathguard import Mode
from acpd.tools.fs.sandbox import DIR_FLAGS, Entry, Sandbox, inside
from acpd.tools.fs.syscalls import rename_noreplace
from acpd.tools.fs.walk import SUBDIR_FLAGS, Budget, walk
from acpd.tools.spec import ToolContext, ToolOutput

READ_NOFOLLOW = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_NOCTTY | os.O_CLOEXEC


def existing(entry: Entry) -> os.stat_result:
    """lstat of an entry that must exist; a trailing slash must name a real directory.

    Raises ToolError: PermanentFailure when missing or not a directory, PolicyBlocked for a
    trailing slash on a symlink.
    """
    st = entry.lstat()
    if st is None:
        raise failed(f"{entry.shown}: No such file or directory")
    if entry.must_be_dir and not stat.S_ISDIR(st.st_mode):
        if stat.S_ISLNK(st.st_mode):
            raise blocked(f"{entry.shown} ends with / on a symlink: it is not followed")
        raise failed(f"{entry.shown}: Not a directory")
    return st


def _create(cfg: FileToolsConfig, ctx: ToolContext, path: str) -> tuple[str, bool]:
    """The directory's real path, and whether it was there already."""
    with cfg.sandbox(ctx) as sb:
        target = sb.locate(path)
        try:
            sb.resolve(target, DIR_FLAGS).close()
            existed = True
        except ToolError:
            existed = False
        opened = sb.make_dirs(target)
        opened.close()
        return opened.real, existed


async def create_directory(args: PathParams, ctx: ToolContext, cfg: FileToolsConfig) -> ToolOutput:
    """Create a directory and its missing parents (an existing one is fine). Raises ToolError."""
    real, existed = await anyio.to_thread.run_sync(_create, cfg, ctx, args.path)
    said = f"Directory {args.path} already exists" if existed else f"Created directory {args.path}"
    return ToolOutput(said, raw={"path": real, "created": not existed})


def check_tree(
    sb: Sandbox, cfg: FileToolsConfig, entry: Entry, st: os.stat_result,
    checks: list[tuple[Mode, str]],
) -> None:
    """Judge each (mode, base) of `checks` for `base` and, when `entry` is a directory, for
    `base/<rel>` of every entry below it (`base` is where the tree is, or will be, really).

    Raises ToolError(PolicyBlocked) for the first refusal, PermanentFailure for a tree over
    the walk limit.
    """
    if sb.guard is None:
        return
    for mode, base in checks:
        sb.check(mode, base, entry.shown)
    if not stat.S_ISDIR(st.st_mode):
        return
    fd = os.open(entry.name, SUBDIR_FLAGS, dir_fd=entry.parent.fd)
    try:
        budget = Budget(cfg.walk_limit)
        for item in walk(fd, budget):
            for mode, base in checks:
                sb.check(mode, os.path.join(base, item.rel), f"{entry.shown}/{item.rel}")
        if budget.exhausted:
            raise failed(f"{entry.shown} has more than {cfg.walk_limit} entries")
    finally:
        os.close(fd)


def _delete(cfg: FileToolsConfig, ctx: ToolContext, path: str) -> str:
    with cfg.sandbox(ctx) as sb:
        entry = sb.entry(path)
        try:
            st = existing(entry)
            check_tree(sb, cfg, entry, st, [("write", entry.real)])
            if stat.S_ISDIR(st.st_mode):
                # fd-based: shutil.rmtree with dir_fd never follows a symlink inside the tree.
                shutil.rmtree(entry.name, dir_fd=entry.parent.fd)
            else:
                os.unlink(entry.name, dir_fd=entry.parent.fd)
            return entry.real
        except OSError as exc:
            raise from_os_error(exc, path) from None
        finally:
            entry.close()


async def delete_path(args: PathParams, ctx: ToolContext, cfg: FileToolsConfig) -> ToolOutput:
    """Delete a file, a symlink (not its target) or a directory tree. Raises ToolError
    (PolicyBlocked for a root, a path above one, or one ending in . or ..)."""
    real = await anyio.to_thread.run_sync(_delete, cfg, ctx, args.path)
    return ToolOutput(f"Deleted {args.path}", raw={"path": real})


def check_readable_tree(
    sb: Sandbox, cfg: FileToolsConfig, entry: Entry, st: os.stat_result
) -> None:
    """Refuse to move or copy what the read policy hides (a rename would unhide it).

    Raises ToolError(PolicyBlocked).
    """
    if sb.policy.unrestricted:
        return
    if stat.S_ISREG(st.st_mode):
        reason = sb.policy.refusal(entry.real, entry.root.real)
        if reason is not None:
            raise blocked(reason)
    if not stat.S_ISDIR(st.st_mode):
        return
    reason = sb.policy.refusal(entry.real, entry.root.real, is_dir=True)
    if reason is not None:
        raise blocked(reason)
    fd = os.open(entry.name, SUBDIR_FLAGS, dir_fd=entry.parent.fd)
    try:
        budget = Budget(cfg.walk_limit)
        for item in walk(fd, budget):
            real = os.path.join(entry.real, item.rel)
            if item.is_dir or stat.S_ISREG(item.st.st_mode):
                reason = sb.policy.refusal(real, entry.root.real, is_dir=item.is_dir)
                if reason is not None:
                    raise blocked(f"{entry.shown} contains a refused path: {reason}")
        if budget.exhausted:
            raise failed(f"{entry.shown} has more than {cfg.walk_limit} entries")
    finally:
        os.close(fd)


def _move(cfg: FileToolsConfig, ctx: ToolContext, args: SourceDestinationParams) -> str:
    with cfg.sandbox(ctx) as sb:
        src = sb.entry(args.source)
        try:
            st = existing(src)
            check_readable_tree(sb, cfg, src, st)
            check_tree(sb, cfg, src, st, [("read", src.real), ("write", src.real),
                                          ("write", sb.would_be(args.destination))])
            dst = sb.entry(args.destination, make_parents=True)
            try:
                if stat.S_ISDIR(st.st_mode) and inside(dst.real, src.real):
                    raise failed(f"cannot move {args.source} into itself")
                check_tree(sb, cfg, src, st, [("write", dst.real)])
                rename_noreplace(src.parent.fd, src.name, dst.parent.fd, dst.name)
                return dst.real
            finally:
                dst.close()
        except FileExistsError:
            raise failed(f"{args.destination} already exists") from None
        except OSError as exc:
            if exc.errno == errno.EXDEV:
                raise failed("source and destination are on different file systems") from None
            raise from_os_error(exc, args.source) from None
        finally:
            src.close()


async def move_path(
    args: SourceDestinationParams, ctx: ToolContext, cfg: FileToolsConfig
) -> ToolOutput:
    """Rename source to destination (which must not exist). Raises ToolError."""
    real = await anyio.to_thread.run_sync(_move, cfg, ctx, args)
    return ToolOutput(f"Moved {args.source} to {args.destination}", raw={"path": real})


class Copier:
    """Copies a tree between held directory fds, checking every file it reads."""

    def __init__(self, sb: Sandbox, cfg: FileToolsConfig, src: Entry) -> None:
        self.sb, self.src = sb, src
        self.budget = Budget(cfg.walk_limit)
        self.counts = {"files": 0, "dirs": 0, "symlinks": 0}

    def copy(self, src_dir: int, name: str, dst_dir: int, dst_name: str, shown: str) -> None:
        """Raises ToolError(PolicyBlocked) for FIFOs, devices, sockets, hard-linked or refused
        files; OSError for I/O failures."""
        self.budget.visited += 1
        if self.budget.exhausted:
            raise failed(f"{self.src.shown} has more than {self.budget.limit} entries")
        st = os.stat(name, dir_fd=src_dir, follow_symlinks=False)
        if stat.S_ISLNK(st.st_mode):
            os.symlink(os.readlink(name, dir_fd=src_dir), dst_name, dir_fd=dst_dir)
            self.counts["symlinks"] += 1
        elif stat.S_ISDIR(st.st_mode):
            os.mkdir(dst_name, 0o700, dir_fd=dst_dir)
            s_fd = os.open(name, SUBDIR_FLAGS, dir_fd=src_dir)
            try:
                d_fd = os.open(dst_name, SUBDIR_FLAGS, dir_fd=dst_dir)
                try:
                    with os.scandir(s_fd) as it:
                        names = sorted(e.name for e in it)
                    for child in names:
                        self.copy(s_fd, child, d_fd, child, f"{shown}/{child}")
                    os.fchmod(d_fd, os.fstat(s_fd).st_mode & 0o777)
                finally:
                    os.close(d_fd)
            finally:
                os.close(s_fd)
            self.counts["dirs"] += 1
        elif stat.S_ISREG(st.st_mode):
            self._copy_file(src_dir, name, dst_dir, dst_name, shown)
        else:
            raise blocked(f"{shown} is a FIFO, device or socket: not copied")

    def _copy_file(self, src_dir: int, name: str, dst_dir: int, dst_name: str, shown: str) -> None:
        fd = os.open(name, READ_NOFOLLOW, dir_fd=src_dir)
        try:
            st = os.fstat(fd)
            real = self.sb.real_of(fd)
            self.sb.vet_file(st, real, self.src.root, shown)
            out = os.open(dst_name, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW
                          | os.O_CLOEXEC, 0o600, dir_fd=dst_dir)
            try:
                with os.fdopen(fd, "rb", closefd=False) as reader, \
                        os.fdopen(out, "wb", closefd=False) as writer:
                    shutil.copyfileobj(reader, writer, 1 << 20)
                os.fchmod(out, st.st_mode & 0o777)  # no suid/sgid
                os.fsync(out)
            finally:
                os.close(out)
        finally:
            os.close(fd)
        self.counts["files"] += 1


def _copy(
    cfg: FileToolsConfig, ctx: ToolContext, args: SourceDestinationParams
) -> tuple[str, dict[str, int]]:
    with cfg.sandbox(ctx) as sb:
        src = sb.entry(args.source)
        dst: Entry | None = None
        try:
            st = existing(src)
            check_tree(sb, cfg, src, st, [("write", sb.would_be(args.destination))])
            dst = sb.entry(args.destination, make_parents=True)
            if stat.S_ISDIR(st.st_mode) and inside(dst.real, src.real):
                raise failed(f"cannot copy {args.source} into itself")
            check_tree(sb, cfg, src, st, [("write", dst.real)])
            if dst.lstat() is not None:
                raise FileExistsError(errno.EEXIST, "exists", args.destination)
            copier = Copier(sb, cfg, src)
            remove_stale_temps(dst.parent.fd)
            temp = temp_name(dst.name)
            try:
                copier.copy(src.parent.fd, src.name, dst.parent.fd, temp, args.source)
                rename_noreplace(dst.parent.fd, temp, dst.parent.fd, dst.name)
            except BaseException:
                _remove(dst.parent.fd, temp)
                raise
            return dst.real, copier.counts
        except FileExistsError:
            raise failed(f"{args.destination} already exists") from None
        except OSError as exc:
            raise from_os_error(exc, args.source) from None
        finally:
            src.close()
            if dst is not None:
                dst.close()


def _remove(dir_fd: int, name: str) -> None:
    with contextlib.suppress(OSError):
        if stat.S_ISDIR(os.stat(name, dir_fd=dir_fd, follow_symlinks=False).st_mode):
            shutil.rmtree(name, dir_fd=dir_fd)
        else:
            os.unlink(name, dir_fd=dir_fd)


async def copy_path(
    args: SourceDestinationParams, ctx: ToolContext, cfg: FileToolsConfig
) -> ToolOutput:
    """Copy a file or tree to destination (which must not exist); it appears whole or not at
    all. Symlinks are copied as symlinks. Raises ToolError."""
    real, counts = await anyio.to_thread.run_sync(_copy, cfg, ctx, args)
    summary = ", ".join(f"{n} {k}" for k, n in counts.items() if n)
    return ToolOutput(f"Copied {args.source} to {args.destination} ({summary})",
                      raw={"path": real, **counts})
