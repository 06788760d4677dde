"""Real paths in few system calls: the per-command build resolves a few dozen paths (roots,
caches, PATH entries, socket directories, masked files), and `os.path.realpath` lstats every
component of each. Opening the path (`O_PATH`, which follows links as any open does) and
reading back the descriptor's name from /proc asks the kernel for the same answer in three
calls. Where that does not work (no /proc, a path that does not exist, another system) the
answer is `os.path.realpath`'s. Nothing is cached: each call looks at the disk as it is now.
"""

from __future__ import annotations

import os

_O_PATH = getattr(os, "O_PATH", 0)
_DELETED = " (deleted)"


def real_path(path: str) -> str:
    """`os.path.realpath(path)`, faster for a path that exists."""
    found = _opened(path, 0)
    return found if found is not None else os.path.realpath(path)


def real_dir(path: str) -> str | None:
    """The real path of `path` when it is (or links to) an existing directory, else None."""
    if not path.startswith("/"):
        return None
    if _O_PATH == 0:
        real = os.path.realpath(path)
        return real if os.path.isdir(real) else None
    return _opened(path, os.O_DIRECTORY)


def existing_real(path: str) -> str | None:
    """The real path of what `path` names, None when it does not exist (a dangling link)."""
    if _O_PATH == 0:
        real = os.path.realpath(path)
        return real if os.path.exists(real) else None
    return _opened(path, 0)


def _opened(path: str, flags: int) -> str | None:
    if _O_PATH == 0 or not path:
        return None
    try:
        fd = os.open(path, _O_PATH | os.O_CLOEXEC | flags)
    except OSError:
        return None
    try:
        name = os.readlink(f"/proc/self/fd/{fd}")
    except OSError:
        return None
    finally:
        os.close(fd)
    if not name.startswith("/") or name.endswith(_DELETED):
        return None
    return name
