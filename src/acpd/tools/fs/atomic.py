"""Atomic replacement inside an opened directory: temp file (O_EXCL), fsync, renameat.

A reader, or a crash at any instant, sees the old file or the new one, never a torn mix. A
crash can leave a temp file behind; its name carries the writer's pid
(`.NAME.acpd-PID-RANDOM.tmp`), and the next write into the same directory removes temp files
whose writer is no longer alive. The searching tools never report temp files.
"""

from __future__ import annotations

import contextlib
import os
import re
import secrets
import shutil
import stat

TEMP_NAME = re.compile(r"^\..*\.acpd-(\d+)-[0-9a-f]{8}\.tmp$", re.DOTALL)
NEW_FILE_MODE = 0o644


def temp_name(name: str) -> str:
    return f".{name[:120]}.acpd-{os.getpid()}-{secrets.token_hex(4)}.tmp"


def is_temp_name(name: str) -> bool:
    return TEMP_NAME.match(name) is not None


def _alive(pid: int) -> bool:
    if pid == os.getpid():
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def remove_stale_temps(dir_fd: int) -> list[str]:
    """Remove temp files and dirs in `dir_fd` left by writers that died; return their names."""
    removed: list[str] = []
    with os.scandir(dir_fd) as it:
        names = [e.name for e in it if e.name.startswith(".")]
    for name in names:
        match = TEMP_NAME.match(name)
        if match is None or _alive(int(match.group(1))):
            continue
        with contextlib.suppress(OSError):
            mode = os.stat(name, dir_fd=dir_fd, follow_symlinks=False).st_mode
            if stat.S_ISDIR(mode):
                shutil.rmtree(name, dir_fd=dir_fd)
            else:
                os.unlink(name, dir_fd=dir_fd)
            removed.append(name)
    return removed


def write_atomic(dir_fd: int, name: str, data: bytes, mode: int | None = None) -> None:
    """Replace `name` in `dir_fd` with `data` atomically (mode kept, or 0644 for new files).

    Raises OSError; the temp file is removed on failure.
    """
    remove_stale_temps(dir_fd)
    temp = temp_name(name)
    fd = os.open(
        temp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600,
        dir_fd=dir_fd,
    )
    try:
        try:
            view = memoryview(data)
            while view:
                view = view[os.write(fd, view) :]
            os.fchmod(fd, NEW_FILE_MODE if mode is None else mode & 0o777)  # no suid/sgid
            os.fsync(fd)
        finally:
            os.close(fd)
        os.replace(temp, name, src_dir_fd=dir_fd, dst_dir_fd=dir_fd)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(temp, dir_fd=dir_fd)
        raise
    with contextlib.suppress(OSError):
        os.fsync(dir_fd)  # make the rename itself durable
