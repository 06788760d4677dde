"""The Linux system calls the sandbox parent needs that Python 3.11 does not wrap (ctypes).

Only for `sandbox/server.py`, which runs inside bubblewrap with namespaced capabilities:
unshare, mount and the new mount API (open_tree, move_mount, mount_setattr), prctl and
capset to drop every capability before a command runs. Each raises OSError with the errno.
The new-mount-API numbers are the same on x86-64 and aarch64 (the unified syscall table).
"""

from __future__ import annotations

import ctypes
import os

CLONE_NEWNS = 0x00020000
CLONE_NEWIPC = 0x08000000
CLONE_NEWNET = 0x40000000
CLONE_NEWPID = 0x20000000

MS_RDONLY = 1
MS_NOSUID = 2
MS_NODEV = 4
MS_REMOUNT = 32
MS_BIND = 4096
MS_REC = 16384
MS_PRIVATE = 1 << 18
MS_SLAVE = 1 << 19

MOUNT_ATTR_RDONLY = 0x1
MOUNT_ATTR_NOSUID = 0x2
MOUNT_ATTR_NODEV = 0x4
AT_EMPTY_PATH = 0x1000
AT_RECURSIVE = 0x8000
OPEN_TREE_CLONE = 1
OPEN_TREE_CLOEXEC = os.O_CLOEXEC
MOVE_MOUNT_F_EMPTY_PATH = 0x4
MOVE_MOUNT_T_EMPTY_PATH = 0x40
AT_FDCWD = -100

SYS_CLONE = {"x86_64": 56, "aarch64": 220}.get(os.uname().machine, -1)
SYS_OPEN_TREE = 428
SYS_MOVE_MOUNT = 429
SYS_MOUNT_SETATTR = 442
SYS_CAPSET = {"x86_64": 126, "aarch64": 91}.get(os.uname().machine, -1)

PR_SET_NO_NEW_PRIVS = 38
PR_CAPBSET_READ = 23
PR_CAPBSET_DROP = 24
PR_CAP_AMBIENT = 47
PR_CAP_AMBIENT_CLEAR_ALL = 4
PR_SET_DUMPABLE = 4
_LINUX_CAPABILITY_VERSION_3 = 0x20080522

_libc = ctypes.CDLL(None, use_errno=True)
_libc.syscall.restype = ctypes.c_long
_libc.mount.argtypes = (ctypes.c_char_p, ctypes.c_char_p, ctypes.c_char_p, ctypes.c_ulong,
                        ctypes.c_char_p)


class _MountAttr(ctypes.Structure):
    _fields_ = (("attr_set", ctypes.c_uint64), ("attr_clr", ctypes.c_uint64),
                ("propagation", ctypes.c_uint64), ("userns_fd", ctypes.c_uint64))


def _check(result: int, what: str) -> int:
    if result < 0:
        err = ctypes.get_errno()
        raise OSError(err, f"{what}: {os.strerror(err)}")
    return result


def unshare(flags: int) -> None:
    _check(_libc.unshare(ctypes.c_int(flags)), "unshare")


def clone(flags: int) -> int:
    """A fork into new namespaces (`flags`: CLONE_NEW* | SIGCHLD), as the raw system call:
    the child returns 0 on a copy of the caller's stack. Python's own fork bookkeeping is
    skipped, so only a single-threaded caller may use it (server.py is one)."""
    return _check(_libc.syscall(ctypes.c_long(SYS_CLONE), ctypes.c_ulong(flags),
                                ctypes.c_ulong(0), ctypes.c_ulong(0), ctypes.c_ulong(0),
                                ctypes.c_ulong(0)), "clone")


def mount(source: str | None, target: str, fstype: str | None, flags: int,
          data: str | None = None) -> None:
    _check(_libc.mount(_b(source), _b(target), _b(fstype), flags, _b(data)),
           f"mount {target}")


def open_tree(dirfd: int, path: str, flags: int) -> int:
    return _check(_libc.syscall(ctypes.c_long(SYS_OPEN_TREE), ctypes.c_int(dirfd),
                                _b(path), ctypes.c_uint(flags)), f"open_tree {path}")


def move_mount(from_fd: int, from_path: str, to_fd: int, to_path: str, flags: int) -> None:
    _check(_libc.syscall(ctypes.c_long(SYS_MOVE_MOUNT), ctypes.c_int(from_fd), _b(from_path),
                         ctypes.c_int(to_fd), _b(to_path), ctypes.c_uint(flags)),
           f"move_mount {to_path}")


def mount_setattr(dirfd: int, path: str, flags: int, attr_set: int) -> None:
    attr = _MountAttr(attr_set, 0, 0, 0)
    _check(_libc.syscall(ctypes.c_long(SYS_MOUNT_SETATTR), ctypes.c_int(dirfd), _b(path),
                         ctypes.c_uint(flags), ctypes.byref(attr),
                         ctypes.c_size_t(ctypes.sizeof(attr))), f"mount_setattr {path}")


def prctl(option: int, arg: int = 0, arg3: int = 0) -> None:
    _check(_libc.prctl(ctypes.c_int(option), ctypes.c_ulong(arg), ctypes.c_ulong(arg3),
                       ctypes.c_ulong(0), ctypes.c_ulong(0)), f"prctl {option}")


def capbset_read(cap: int) -> bool:
    return _check(_libc.prctl(ctypes.c_int(PR_CAPBSET_READ), ctypes.c_ulong(cap),
                              ctypes.c_ulong(0), ctypes.c_ulong(0), ctypes.c_ulong(0)),
                  "prctl") == 1


def drop_all_capabilities(bounding: tuple[int, ...]) -> None:
    """No new privileges, an empty bounding set (`bounding`: the capabilities still in it),
    no ambient capabilities, and empty effective, permitted and inheritable sets: nothing an
    exec can give back (a uid 0 inside the user namespace included: its exec gets bounding
    and inheritable, both empty)."""
    prctl(PR_SET_NO_NEW_PRIVS, 1)
    for cap in bounding:
        prctl(PR_CAPBSET_DROP, cap)
    prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL)
    header = (ctypes.c_uint32 * 2)(_LINUX_CAPABILITY_VERSION_3, 0)
    data = (ctypes.c_uint32 * 6)()
    _check(_libc.syscall(ctypes.c_long(SYS_CAPSET), header, data), "capset")


def _b(text: str | None) -> bytes | None:
    return None if text is None else os.fsencode(text)
