"""Other names of a `deny_read` file: hard links, masked like the file itself.

A mask covers a path, but a file's content is reachable through every name of its inode: after
`ln .env notes.txt` (made earlier, outside acpd) a command could read `notes.txt`, or a script
it runs could. So after the walk (walk.py), each build (nothing is kept between commands: a
link count changes without any directory event near the file):

1. lstats every masked `deny_read` file, keeping the regular files with more than one link,
   and lists every masked `deny_read` directory (a bounded walk: `INSIDE_LIMIT` entries; inode
   numbers come with the directory entries, so no file there is stat'ed);
2. looks those inodes up in the workspace walk's listings (inode numbers again, no stat per
   file; each candidate is lstat'ed to confirm device and inode), and masks every other name
   found in the workspace roots;
3. compares the names found with the link count. Names the walk cannot see (outside the roots:
   another project, a backup, a cache) cannot be masked without walking the disk: the profile
   is then *incomplete* and its note names the file. The same when the bounded walk inside a
   masked directory stops early.

Symlinks need nothing here: mounts act on real paths, so a link to a masked file or into a
masked directory reads the mask. The cost is one lstat per denied file, a listing of each
masked directory, and a set intersection per workspace directory (C speed).
"""

from __future__ import annotations

import os
import stat
from dataclasses import dataclass, field

from acpd.sandbox.walk import Found

INSIDE_LIMIT = 20_000
"""Entries looked at inside masked directories per command (listed, not stat'ed)."""

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
    names: dict[Key, set[str]] = {}
    """Every name known for a denied file (its denied names, then the names found)."""
    links: dict[Key, int] = {}
    """Link counts, from an lstat: of each masked file, and of each other name found."""
    for path in found.mask_files:
        _note_file(path, names, links)
    if not _inside_dirs(mask_dirs, names):
        out.complete = False
        out.notes.append(f"more than {INSIDE_LIMIT} entries inside masked directories: "
                         "hard links to the files past that are not looked for")
    by_dev: dict[int, set[int]] = {}
    for dev, ino in names:
        by_dev.setdefault(dev, set()).add(ino)
    for directory, dev, inodes in found.files:
        wanted = by_dev.get(dev)
        if not wanted:
            continue
        for ino in inodes.keys() & wanted:
            for name in inodes[ino]:
                _other_name(f"{directory}/{name}", (dev, ino), names, links, out)
    for key, count in links.items():
        if len(names[key]) < count:
            out.complete = False
            out.notes.append(
                f"{min(names[key])} (deny_read) has {count - len(names[key])} more hard "
                "link(s) outside the workspace: those names are not masked")
    return out


def _note_file(path: str, names: dict[Key, set[str]], links: dict[Key, int]) -> None:
    try:
        st = os.lstat(path)
    except OSError:
        return
    if stat.S_ISREG(st.st_mode) and st.st_nlink > 1:
        key = (st.st_dev, st.st_ino)
        links[key] = st.st_nlink
        names.setdefault(key, set()).add(path)


def _other_name(path: str, key: Key, names: dict[Key, set[str]], links: dict[Key, int],
                out: Linked) -> None:
    """`path`'s directory entry has the inode of a denied file: mask it if it is that file."""
    if path in names[key]:
        return
    try:
        st = os.lstat(path)
    except OSError:
        return
    if (st.st_dev, st.st_ino) != key or not stat.S_ISREG(st.st_mode):
        return
    names[key].add(path)
    links[key] = st.st_nlink
    out.masks.append(path)


def _inside_dirs(mask_dirs: tuple[str, ...], names: dict[Key, set[str]]) -> bool:
    """Note every file inside the masked directories by device and inode, from the directory
    entries (one stat per directory, none per file: any of them may have a name elsewhere,
    the link count is read only for a name found). False past the bound."""
    budget = INSIDE_LIMIT
    stack = list(mask_dirs)
    while stack:
        directory = stack.pop()
        try:
            dev = os.stat(directory, follow_symlinks=False).st_dev
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
                    names.setdefault((dev, entry.inode()), set()).add(entry.path)
            except OSError:
                continue
    return True
