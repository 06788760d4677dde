"""`os.path.join`, `dirname`, `basename`, `normpath` and the file tests (`isdir`, `isfile`,
`islink`, `lexists`) for `str` paths, as posixpath and genericpath compute them.

posixpath's functions are interpreted Python (with `os.fspath` and separator look-ups on
every call); the judge calls them on every path of every decision. These give the very same
answers (tests/policy/test_pathtext.py checks them against posixpath) and are compiled with
the judge (_native.py)."""

from __future__ import annotations

import os
import posix
from collections.abc import Callable
from stat import S_ISDIR, S_ISLNK, S_ISREG
from typing import Final

_C_NORMPATH: Final[Callable[[str], str] | None] = getattr(posix, "_path_normpath", None)
"""What posixpath.normpath calls on CPython 3.11 and later, without its interpreted wrapper."""


def join(a: str, *rest: str) -> str:
    path = a
    for b in rest:
        if b.startswith("/"):
            path = b
        elif not path or path.endswith("/"):
            path += b
        else:
            path += "/" + b
    return path


def dirname(p: str) -> str:
    i = p.rfind("/") + 1
    head = p[:i]
    if head and head != "/" * len(head):
        head = head.rstrip("/")
    return head


def basename(p: str) -> str:
    return p[p.rfind("/") + 1 :]


def normpath(p: str) -> str:
    if _C_NORMPATH is None:
        return os.path.normpath(p)
    return _C_NORMPATH(p) or "."


# The file tests: `os.path.isdir` and its kin are interpreted wrappers around one stat call;
# these give the same answers (False for a path that cannot be stat'ed, or that holds a NUL).

def _mode(p: str, follow: bool) -> int:
    """The entry's st_mode, or 0 (no file type) when it cannot be stat'ed."""
    try:
        return (os.stat(p) if follow else os.lstat(p)).st_mode
    except (OSError, ValueError):
        return 0


def isdir(p: str) -> bool:
    return S_ISDIR(_mode(p, True))


def isfile(p: str) -> bool:
    return S_ISREG(_mode(p, True))


def islink(p: str) -> bool:
    return S_ISLNK(_mode(p, False))


def lexists(p: str) -> bool:
    return _mode(p, False) != 0
