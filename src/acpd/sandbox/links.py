"""Other names of a `deny_read` file: hard links, masked like the file itself.

A mask covers a path, but a file's content is reachable through every name of its inode: after
`ln .env notes.txt` (made earlier, outside acpd) a command could read `notes.txt`, or a script
it runs could. So after the walk (walk.py), each build (nothing is kept between commands: a
link count changes without any directory event near the file):

1. lstats every masked `deny_read` file, and every file inside a masked `deny_read` directory
   (a bounded walk: `INSIDE_LIMIT` entries), keeping the regular files with more than one link;
2. looks their inodes up in the workspace walk's listings (inode numbers come with the
   directory entries, no stat per file; each candidate is lstat'ed to confirm device and
   inode), and masks every other name found in the workspace roots;
3. compares the names found with the link count. Names the walk cannot see (outside the roots:
   another project, a backup, a cache) cannot be masked without walking the disk: the profile
   is then *incomplete* and its note names the file. The same when the bounded walk inside a
   masked directory stops early.

Symlinks need nothing here: mounts act on real paths, so a link to a masked file or into a
masked directory reads the mask. The cost is one lstat per denied file (and per file inside a
masked directory); the lookup runs only when a denied file has several links.
"""

from __future__ import annotations

import os
import stat
from dataclasses import dataclass, field

from acpd.sandbox.walk import Found

INSIDE_LIMIT = 2000
"""Entries looked at inside masked directories per command (each file is lstat'ed)."""

Key = tuple[int, int]
"""(device, inode)."""


@dataclass(slots=True)
class Linked:
    masks: list[str] = field(default_factory=list)
    """Other names of denied files inside the workspace roots: mask them too."""
    notes: list[str] = field(default_factory=list)
    complete: bool = True


def linked_names(found: Found, mask_dirs: tuple[str, ...]) -> Linked:
    """The other names of the denied files in `found` (files, and inside `mask_dirs`)."""
    out = Linked()
    wanted: dict[Key, int] = {}
    names: dict[Key, set[str]] = {}
    for path in found.mask_files:
        _note_file(path, wanted, names)
    if not _inside_dirs(mask_dirs, wanted, names):
        out.complete = False
        out.notes.append(f"more than {INSIDE_LIMIT} entries inside masked directories: "
                         "hard links to the files past that are not looked for")
    if not wanted:
        return out
    by_dev: dict[int, list[int]] = {}
    for dev, ino in wanted:
        by_dev.setdefault(dev, []).append(ino)
    for directory, dev, inodes in found.files:
        for ino in by_dev.get(dev, ()):
            for name in inodes.get(ino, ()):
                path = f"{directory}/{name}"
                if _key(path) == (dev, ino) and path not in names[(dev, ino)]:
                    names[(dev, ino)].add(path)
                    out.masks.append(path)
    for key, links in wanted.items():
        if len(names[key]) < links:
            out.complete = False
            first = min(names[key])
            out.notes.append(
                f"{first} (deny_read) has {links - len(names[key])} more hard link(s) outside "
                "the workspace: those names are not masked")
    return out


def _note_file(path: str, wanted: dict[Key, int], names: dict[Key, set[str]]) -> None:
    try:
        st = os.lstat(path)
    except OSError:
        return
    if stat.S_ISREG(st.st_mode) and st.st_nlink > 1:
        key = (st.st_dev, st.st_ino)
        wanted[key] = st.st_nlink
        names.setdefault(key, set()).add(path)


def _inside_dirs(mask_dirs: tuple[str, ...], wanted: dict[Key, int],
                 names: dict[Key, set[str]]) -> bool:
    """Note the multiply-linked files inside masked directories; False past the bound."""
    budget = INSIDE_LIMIT
    stack = list(mask_dirs)
    while stack:
        directory = stack.pop()
        try:
            with os.scandir(directory) as it:
                entries = list(it)
        except OSError:
            continue
        budget -= len(entries)
        if budget < 0:
            return False
        for entry in entries:
            try:
                if entry.is_dir(follow_symlinks=False):
                    stack.append(entry.path)
                elif not entry.is_symlink():
                    _note_file(entry.path, wanted, names)
            except OSError:
                continue
    return True


def _key(path: str) -> Key | None:
    try:
        st = os.lstat(path)
    except OSError:
        return None
    return (st.st_dev, st.st_ino)
