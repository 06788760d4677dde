"""Other names of a `deny_read` file: hard links, masked like the file itself; and what the
symlinks inside a masked directory point to.

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

Symlinks *to* a masked path need nothing: mounts act on real paths, so a link to a masked
file or into a masked directory reads the mask. Symlinks *inside* a masked directory do: the
mask hides the link, not what it points to. With GNU stow and an existing `~/.aws`,
`~/.aws/credentials -> ~/dotfiles/aws/credentials`: `~/.aws` is masked, yet the dotfiles
workspace's `aws/credentials` holds the secret under a name no pattern denies. So every symlink
met while listing the masked directories (step 1) has its real target masked wherever it lies
(the whole chain of links resolved): a file like a denied file (its hard links looked for as
well), a directory like a denied directory (listed in turn, for its own links and hard links).
A target that is a workspace root or holds one (a link to `/`, to HOME holding the workspace)
cannot be masked without hiding the workspace: the profile is then *incomplete*, and says so.

The cost is one lstat per denied file, a listing of each masked directory (and of each
directory a link there points to), a realpath per link found, and a set intersection per
workspace directory (C speed).
"""

from __future__ import annotations

import os
import stat
from dataclasses import dataclass, field

from acpd.sandbox.walk import Found, link_target

INSIDE_LIMIT = 20_000
"""Entries looked at inside masked directories per command (listed, not stat'ed)."""

Key = tuple[int, int]
"""(device, inode)."""


@dataclass(slots=True)
class Linked:
    masks: list[str] = field(default_factory=list)
    """Other names of denied files inside the workspace roots, and the files symlinks inside
    masked directories point to: mask them too."""
    mask_dirs: list[str] = field(default_factory=list)
    """The directories symlinks inside masked directories point to (real): mask them too."""
    notes: list[str] = field(default_factory=list)
    complete: bool = True


def linked_names(found: Found, mask_dirs: tuple[str, ...], roots: tuple[str, ...]) -> Linked:
    """The other names of the denied files in `found` (files, and inside `mask_dirs`), and
    what the symlinks inside `mask_dirs` point to. `roots`: the workspace roots (real)."""
    out = Linked()
    names: dict[Key, set[str]] = {}
    """Every name known for a denied file (its denied names, then the names found)."""
    links: dict[Key, int] = {}
    """Link counts, from an lstat: of each masked file, and of each other name found."""
    for path in found.mask_files:
        _note_file(path, names, links)
    if not _inside_dirs(mask_dirs, roots, names, links, out):
        out.complete = False
        out.notes.append(f"more than {INSIDE_LIMIT} entries inside masked directories: "
                         "hard links to the files past that, and what symlinks there point "
                         "to, are not looked for")
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


def _inside_dirs(mask_dirs: tuple[str, ...], roots: tuple[str, ...],
                 names: dict[Key, set[str]], links: dict[Key, int], out: Linked) -> bool:
    """Note every file inside the masked directories by device and inode, from the directory
    entries (one stat per directory, none per file: any of them may have a name elsewhere,
    the link count is read only for a name found), and mask what each symlink there points
    to (a directory is listed in turn). False past the bound."""
    budget = INSIDE_LIMIT
    stack = list(mask_dirs)
    listed: set[str] = set()
    while stack:
        directory = stack.pop()
        if directory in listed:
            continue  # a link back to a directory already listed (a cycle, a second link)
        listed.add(directory)
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
                elif entry.is_symlink():
                    _mask_link_target(entry.path, roots, names, links, stack, out)
                else:
                    names.setdefault((dev, entry.inode()), set()).add(entry.path)
            except OSError:
                continue
    return True


def _mask_link_target(path: str, roots: tuple[str, ...], names: dict[Key, set[str]],
                      links: dict[Key, int], stack: list[str], out: Linked) -> None:
    """`path`, a symlink inside a masked directory: mask its real target (a dangling link
    has none to read)."""
    target = link_target(path)
    if target is None:
        return
    real, is_dir = target
    if not is_dir:
        out.masks.append(real)
        _note_file(real, names, links)
        return
    if any(root == real or root.startswith(real.rstrip("/") + "/") for root in roots):
        out.complete = False
        out.notes.append(f"{path} (in a masked directory) links to {real}, which holds the "
                         "workspace: it cannot be masked")
        return
    out.mask_dirs.append(real)
    stack.append(real)
