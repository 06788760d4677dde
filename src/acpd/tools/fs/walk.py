"""Walking a directory tree from a held fd without ever following a symlink.

Every subdirectory is opened with O_NOFOLLOW relative to its parent's fd, so a symlink inside
the tree (or one swapped in while walking) is reported as an entry and never entered: the walk
cannot leave the directory it started in, and symlink loops cannot make it spin.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Callable, Iterator
from dataclasses import dataclass

SUBDIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
MAX_DEPTH = 128


@dataclass(slots=True)
class Budget:
    """How many entries a walk may visit before it stops (and says so)."""

    limit: int
    visited: int = 0

    @property
    def exhausted(self) -> bool:
        return self.visited >= self.limit


@dataclass(frozen=True, slots=True)
class Item:
    rel: str
    """Path relative to the top of the walk ("/"-separated)."""
    name: str
    dir_fd: int
    """The fd of the directory holding the entry, valid while the walk is at this item."""
    st: os.stat_result
    """lstat of the entry."""

    @property
    def is_dir(self) -> bool:
        return stat.S_ISDIR(self.st.st_mode)

    @property
    def is_link(self) -> bool:
        return stat.S_ISLNK(self.st.st_mode)


def walk(
    dir_fd: int, budget: Budget, descend: Callable[[Item], bool] = lambda _item: True,
    rel: str = "", depth: int = 0,
) -> Iterator[Item]:
    """Yield every entry below `dir_fd` (sorted by name, parents before children).

    A directory is entered after it was yielded and only when `descend(item)` says so.
    Entries that vanish during the walk are skipped. Raises OSError when `dir_fd` cannot be read.
    """
    with os.scandir(dir_fd) as it:
        names = sorted(entry.name for entry in it)
    for name in names:
        if budget.exhausted:
            return
        try:
            st = os.stat(name, dir_fd=dir_fd, follow_symlinks=False)
        except OSError:
            continue
        budget.visited += 1
        item = Item(f"{rel}/{name}" if rel else name, name, dir_fd, st)
        yield item
        if not item.is_dir or depth >= MAX_DEPTH or not descend(item):
            continue
        try:
            sub = os.open(name, SUBDIR_FLAGS, dir_fd=dir_fd)
        except OSError:
            continue  # replaced by a symlink or removed meanwhile
        try:
            yield from walk(sub, budget, descend, item.rel, depth + 1)
        except OSError:
            continue
        finally:
            os.close(sub)
