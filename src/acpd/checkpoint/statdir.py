"""One directory's entries, each lstat'ed: in C when statdir.c is built, else in Python.

`listing(fd)` is what the checkpoint scanner calls once per directory: (names, stats,
errors), where `stats[i]` is the lstat of `names[i]` (an os.stat_result, or the C module's
Stat with the same field names), and `errors` holds (name, errno) for the entries that could
not be lstat'ed. An entry that vanished between the listing and its lstat is left out. Both
forms make the same syscalls (getdents, then one fstatat per entry, relative to the
directory's fd); the C one builds only the fields the scanner reads, without an os.stat_result
per entry, and lists without holding the GIL. `benchmarks/checkpoint.py` measures the two.

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
from typing import Protocol, cast

from acpd.cbuild import CBuild


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
    """The C form when it is built and loads, else None."""
    module = _module()
    return None if module is None else cast("Callable[[int], Listing]", module.stat_dir)


def listing_function() -> Callable[[int], Listing]:
    """What a scan lists directories with: the C form unless `ACPD_NATIVE=0` or unbuilt."""
    if os.environ.get("ACPD_NATIVE", "1") != "0":
        native = native_listing()
        if native is not None:
            return native
    return python_listing
