"""One directory's entries, each lstat'ed: in C when statdir.c is built, else in Python.

`scan_listing()` gives what the checkpoint scanner calls once per directory. It returns
(names, stats, errors): `stats[i]` is the lstat of `names[i]` (an os.stat_result, or the C
module's Stat with the same field names), and `errors` holds (name, errno) for the entries
that could not be lstat'ed. An entry that vanished between the listing and its lstat is left
out. Both forms make the same syscalls (getdents, then one fstatat per entry, relative to
the directory's fd). The C one lists without holding the GIL, builds only the fields the
scanner reads, and keeps unchanged regular files itself (ScanLister below), so the scan's
Python loop sees only the directories and what changed. `benchmarks/checkpoint.py`
measures the two.

`scripts/build_native.py` compiles statdir.c next to the relay client (cbuild.py). There is
no build without a C compiler and the Python headers, and then the Python form runs;
`ACPD_NATIVE=0` chooses it too (read at each scan).
"""
from __future__ import annotations

import errno
import functools
import os
from collections.abc import Callable
from types import ModuleType
from typing import TYPE_CHECKING, Protocol, cast

from acpd.cbuild import CBuild

if TYPE_CHECKING:
    from acpd.checkpoint.entries import Entry


class StatLike(Protocol):
    """The lstat fields the scanner reads (os.stat_result has them all)."""

    @property
    def st_mode(self) -> int: ...
    @property
    def st_nlink(self) -> int: ...
    @property
    def st_size(self) -> int: ...
    @property
    def st_mtime_ns(self) -> int: ...
    @property
    def st_ctime_ns(self) -> int: ...
    @property
    def st_ino(self) -> int: ...
    @property
    def st_dev(self) -> int: ...


Listing = tuple[list[str], list[StatLike], list[tuple[str, int]]]
ScanLister = Callable[[int, str, "dict[str, Entry]", "dict[str, Entry]", set[str], int], Listing]
"""(fd, prefix, previous, entries, multi, room) -> the entries left for the scanner. A lister
may keep an unchanged regular file itself (the C one does): it then stores `previous[rel]` as
`entries[rel]` (at most `room` of them), adds `rel` to `multi` when the file has several
links, and leaves the name out of what it returns. It keeps one only when the scanner's own
hot test would: `previous[rel].fast` and the same ctime, mtime, size, inode and device."""

SOURCE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "statdir.c")


@functools.cache
def extension() -> CBuild:
    """How statdir.c is built: a CPython extension for this interpreter. (Made on first use:
    sysconfig costs milliseconds to load, and scan.py is imported on the daemon's path.)"""
    import sysconfig

    return CBuild(
        SOURCE, "acpd-statdir-", suffix=sysconfig.get_config_var("EXT_SUFFIX") or ".so",
        flags=("-shared", "-fPIC", f"-I{sysconfig.get_paths()['include']}"),
    )


def python_listing(fd: int, names: list[str] | None = None) -> Listing:
    """The Python form; with `names`, those entries only (not a listing of the directory)."""
    found: list[str] = []
    stats: list[StatLike] = []
    errors: list[tuple[str, int]] = []
    lstat = os.lstat
    for name in os.listdir(fd) if names is None else names:
        try:
            st = lstat(name, dir_fd=fd)
        except FileNotFoundError:
            continue  # gone while we looked
        except OSError as exc:
            errors.append((name, exc.errno or errno.EIO))
            continue
        found.append(name)
        stats.append(st)
    return found, stats, errors


@functools.cache
def _module() -> ModuleType | None:
    path = extension().current()
    if path is None:
        return None
    import importlib.util

    try:
        spec = importlib.util.spec_from_file_location("acpd_statdir", path)
        if spec is None or spec.loader is None:
            return None
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
    except (ImportError, OSError):
        return None  # built for another interpreter, or damaged: the Python form runs
    return module


def native_listing() -> Callable[[int], Listing] | None:
    """The C form of `python_listing` when it is built and loads, else None."""
    module = _module()
    return None if module is None else cast("Callable[[int], Listing]", module.stat_dir)


def python_scan_listing(fd: int, prefix: str, previous: dict[str, Entry],
                        entries: dict[str, Entry], multi: set[str], room: int) -> Listing:
    """The Python form of what a scan lists a directory with: it keeps nothing itself."""
    return python_listing(fd)


def scan_listing() -> ScanLister:
    """What a scan lists directories with: the C form (`scan_dir` in statdir.c, which keeps
    unchanged regular files itself) unless `ACPD_NATIVE=0` or unbuilt."""
    if os.environ.get("ACPD_NATIVE", "1") != "0":
        module = _module()
        if module is not None:
            return cast("ScanLister", module.scan_dir)
    return python_scan_listing
