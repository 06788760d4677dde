"""ctypes bindings for the two Linux calls Python does not wrap: openat2(2) and renameat2(2).

openat2 is syscall 437 on x86-64 and aarch64 (the unified syscall table). Where it is absent
(old kernel, other architecture) or refused (seccomp answers ENOSYS or EPERM), callers fall back
to a component walk; `openat2_available()` says which.
"""

from __future__ import annotations

import ctypes
import errno
import functools
import os
import platform

SYS_OPENAT2 = 437
_OPENAT2_ARCHES = frozenset({"x86_64", "aarch64", "arm64"})

RESOLVE_NO_XDEV = 0x01
RESOLVE_NO_MAGICLINKS = 0x02
RESOLVE_NO_SYMLINKS = 0x04
RESOLVE_BENEATH = 0x08
RESOLVE_IN_ROOT = 0x10

RENAME_NOREPLACE = 1


class OpenHow(ctypes.Structure):
    """struct open_how {u64 flags; u64 mode; u64 resolve;}"""

    _fields_ = (
        ("flags", ctypes.c_uint64),
        ("mode", ctypes.c_uint64),
        ("resolve", ctypes.c_uint64),
    )


@functools.cache
def _libc() -> ctypes.CDLL:
    return ctypes.CDLL(None, use_errno=True)


def openat2(dir_fd: int, path: str, flags: int, mode: int = 0, resolve: int = 0) -> int:
    """Call openat2(dir_fd, path, {flags, mode, resolve}) and return the new fd.

    Raises OSError with the kernel's errno (ENOSYS where the call does not exist, EXDEV for an
    escape under RESOLVE_BENEATH, ELOOP for loops and refused magic links, ...).
    """
    if platform.machine() not in _OPENAT2_ARCHES:
        raise OSError(errno.ENOSYS, "openat2 is not wired for this architecture")
    libc = _libc()
    syscall = libc.syscall
    syscall.restype = ctypes.c_long
    how = OpenHow(flags, mode, resolve)
    ctypes.set_errno(0)
    fd = syscall(
        ctypes.c_long(SYS_OPENAT2),
        ctypes.c_int(dir_fd),
        ctypes.c_char_p(os.fsencode(path)),
        ctypes.byref(how),
        ctypes.c_size_t(ctypes.sizeof(how)),
    )
    if fd < 0:
        err = ctypes.get_errno()
        raise OSError(err, os.strerror(err), path)
    return int(fd)


@functools.cache
def openat2_available() -> bool:
    """True when openat2 works here; False on ENOSYS (no such call) or EPERM (seccomp)."""
    root = os.open("/", os.O_PATH | os.O_DIRECTORY | os.O_CLOEXEC)
    try:
        fd = openat2(
            root, ".", os.O_PATH | os.O_DIRECTORY | os.O_CLOEXEC,
            resolve=RESOLVE_BENEATH | RESOLVE_NO_MAGICLINKS,
        )
    except OSError as exc:
        if exc.errno in (errno.ENOSYS, errno.EPERM, errno.EINVAL):
            return False
        raise
    finally:
        os.close(root)
    os.close(fd)
    return True


def rename_noreplace(src_dir_fd: int, src: str, dst_dir_fd: int, dst: str) -> None:
    """renameat2(..., RENAME_NOREPLACE): move `src` to `dst` unless `dst` exists.

    Falls back to a link-free check-then-rename where renameat2 is missing (old libc) or
    unsupported by the file system (EINVAL); that fallback has a small race window.
    Raises FileExistsError when `dst` exists, OSError otherwise.
    """
    func = getattr(_libc(), "renameat2", None)
    if func is not None:
        func.restype = ctypes.c_int
        ctypes.set_errno(0)
        rc = func(
            ctypes.c_int(src_dir_fd), ctypes.c_char_p(os.fsencode(src)),
            ctypes.c_int(dst_dir_fd), ctypes.c_char_p(os.fsencode(dst)),
            ctypes.c_uint(RENAME_NOREPLACE),
        )
        if rc == 0:
            return
        err = ctypes.get_errno()
        if err not in (errno.ENOSYS, errno.EINVAL):
            raise OSError(err, os.strerror(err), dst)
    try:
        os.stat(dst, dir_fd=dst_dir_fd, follow_symlinks=False)
    except FileNotFoundError:
        os.rename(src, dst, src_dir_fd=src_dir_fd, dst_dir_fd=dst_dir_fd)
        return
    raise FileExistsError(errno.EEXIST, os.strerror(errno.EEXIST), dst)
