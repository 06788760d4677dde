"""The bounded walk that finds what to mask and what to make read-only in the workspace.

Every entry is visited (no directory is skipped because of its name: `.git/objects` or
`node_modules` can hold a `deny_read` match as well as any other directory), except inside a
directory that is masked whole. Symlinks are not followed: a link whose name is denied has its
target masked (mounts act on real paths, so a link to a masked path reads the mask). The walk
stops after `limit` entries and says so (`truncated`); the caller reports the profile as
incomplete. A directory's findings are reused only while the directory is provably unchanged:
either a file watcher (inotify, watched.py) has reported no event in it since it was read
through the descriptor its watch was added on, and its parent (itself read or proven
unchanged this walk) still names the same inode; or, without a usable watcher, its inode and
ctime are unchanged (see `_listing`). Both are checks of the disk as it is now, not facts kept
from an earlier command; the first makes a 10,000-file workspace cost almost nothing, the
second a stat per directory.

A directory that holds `HEAD` and either `config` and `objects` or `commondir` is a git
directory (a workspace's `.git`, a nested repository's, a submodule's under `.git/modules`, a
bare repo, a linked worktree's admin directory under `.git/worktrees`): what git runs or obeys
in it (`GIT_CODE`) becomes read-only (a missing `hooks` or `info` becomes an empty read-only
directory), and the git directory itself is pinned
(bound onto itself: a mount point cannot be renamed, so `mv .git old && git init` fails). A
`.git` file (a pointer to a git directory elsewhere) is read-only. Every directory holding a
`.git` is noted (`work_trees`): hooks.py keeps what else git runs later (`core.hooksPath`
directories, what hooks link to, included configs).
"""

from __future__ import annotations

import os
import stat
import time
from dataclasses import dataclass, field

from acpd.sandbox import watched
from acpd.sandbox.paths import existing_real
from acpd.sandbox.rules import Matcher

GIT_CODE = ("hooks", "config", "info", "commondir", "config.worktree", "gitdir")
"""What git executes or obeys inside a git directory, read-only where it exists: hooks;
config (core.fsmonitor, core.hooksPath, aliases, filters); info (attributes naming filters);
commondir (moves config, hooks and objects to the directory it names); config.worktree (a
second config); gitdir (a linked worktree's back pointer). hooks and info are made (empty)
when missing, as `git init` would; the other names cannot be bound when missing without
creating them in the user's repository, and neither can an interrupted rebase's or
cherry-pick's state (rebase-merge, rebase-apply, sequencer: `exec` lines run by the next
`git rebase --continue`), which git in the sandbox must be able to write while the top of
the git directory is writable. A read-only git directory (`PathRules.git_writes` False,
with `GIT_WRITABLE` bound back) closes all of them (docs/sandbox.md)."""
GIT_WRITABLE = ("objects", "refs", "logs", "rr-cache", "lfs")
"""With the git directory itself read-only: the entries bound back writable (directories
only: their contents are git's data, never code or redirection). Object and ref writes work
(`git hash-object -w`, `git update-ref`, `git fetch` into refs); whatever replaces a file at
the top of the git directory (index, HEAD, packed-refs: lock file and rename) does not."""


@dataclass(slots=True)
class Found:
    mask_files: list[str] = field(default_factory=list)
    mask_dirs: list[str] = field(default_factory=list)
    read_only: list[str] = field(default_factory=list)
    empty_dirs: list[str] = field(default_factory=list)
    git_dirs: list[str] = field(default_factory=list)
    git_writable: list[str] = field(default_factory=list)
    """`GIT_WRITABLE` entries of the git directories found (real directories, not links)."""
    work_trees: list[str] = field(default_factory=list)
    """Directories holding a `.git` entry (a directory, a file or a link): hooks.py finds
    each one's repository as git would, and the hooks directories it uses."""
    walked: int = 0
    truncated: bool = False
    files: list[tuple[str, int, dict[int, list[str]]]] = field(default_factory=list)
    """Each directory walked, its device and its non-directory entries by inode (from the
    directory entries, no stat): where links.py looks for other names of a denied file."""

    def merge(self, other: Found) -> None:
        self.mask_files += other.mask_files
        self.mask_dirs += other.mask_dirs
        self.read_only += other.read_only
        self.empty_dirs += other.empty_dirs
        self.git_dirs += other.git_dirs
        self.git_writable += other.git_writable
        self.work_trees += other.work_trees
        self.walked += other.walked


@dataclass(slots=True)
class _Listing:
    """One directory's findings, reusable while the directory is provably unchanged."""

    dev: int
    ino: int
    ctime_ns: int
    deny_read: Matcher
    deny_write: Matcher
    found: Found
    subdirs: list[tuple[str, str, int]]
    """(path, rel, inode) of each subdirectory to walk."""
    inodes: dict[int, list[str]] = field(default_factory=dict)
    """Names of the entries that are neither directories nor symlinks, by inode number (an
    entry's inode changes only with the entry: an event or a ctime change on the directory)."""
    reusable: bool = True


COLLAPSE_MIN = 64
"""A directory (not a root) of at least this many entries, all denied files, is masked whole."""
RACY_NS = 1_000_000_000
"""A directory changed less than this long before it was read is read again next time."""
CACHE_DIRS = 100_000
_listings: dict[tuple[str, str], _Listing] = {}


def walk_root(root: str, deny_read: Matcher, deny_write: Matcher, found: Found,
              limit: int) -> None:
    """Visit `root` (a real, absolute directory), appending to `found`."""
    with watched.lock:
        watched.refresh()
        whole = _wholes.get(root)
        if whole is not None and _whole_holds(whole, root, deny_read, deny_write, found, limit):
            found.merge(whole.found)
            found.files += whole.found.files
            return
        _wholes.pop(root, None)
        mine, dirs, root_id = _walk(root, deny_read, deny_write, found.walked, limit)
        found.merge(mine)
        found.files += mine.files
        found.truncated |= mine.truncated
        if root_id is not None and not mine.truncated and watched.all_trusted(dirs):
            _wholes[root] = _Whole(*root_id, deny_read, deny_write, mine, dirs)


def _walk(root: str, deny_read: Matcher, deny_write: Matcher, before: int, limit: int
          ) -> tuple[Found, list[str], tuple[int, int] | None]:
    """The root's findings, the directories visited, and the root's (device, inode)."""
    mine, dirs, root_id = Found(), [], None
    stack: list[tuple[str, str, int]] = [(root, "", -1)]
    while stack:
        directory, rel, ino = stack.pop()
        listing = _listing(directory, rel, ino, deny_read, deny_write)
        if listing is None:
            continue  # gone or unreadable: the command cannot read it either
        if root_id is None and directory == root:
            root_id = (listing.dev, listing.ino)
        if before + mine.walked + listing.found.walked > limit:
            mine.truncated = True
            break
        mine.merge(listing.found)
        mine.files.append((directory, listing.dev, listing.inodes))
        dirs.append(directory)
        stack.extend(listing.subdirs)
    return mine, dirs, root_id


@dataclass(slots=True)
class _Whole:
    """A root's whole walk, every listing of it vouched for by the watcher when it ended:
    reused while every one of them still is (no event in any of its directories since) and
    the root path still names the same directory. Then no directory's entries changed, so
    each parent still names the child that was walked, and the findings are what a walk
    would find now. A walk with an unwatched listing (stat-validated, or holding a denied
    symlink) is not kept."""

    dev: int
    ino: int
    deny_read: Matcher
    deny_write: Matcher
    found: Found
    dirs: list[str]


_wholes: dict[str, _Whole] = {}


def _whole_holds(whole: _Whole, root: str, deny_read: Matcher, deny_write: Matcher,
                 found: Found, limit: int) -> bool:
    if whole.deny_read is not deny_read or whole.deny_write is not deny_write:
        return False
    if found.walked + whole.found.walked > limit or not watched.all_trusted(whole.dirs):
        return False
    try:
        st = os.stat(root, follow_symlinks=False)
    except OSError:
        return False
    return (st.st_dev, st.st_ino) == (whole.dev, whole.ino)


def _listing(directory: str, rel: str, ino: int, deny_read: Matcher, deny_write: Matcher
             ) -> _Listing | None:
    """The directory's findings: read from disk, or reused when provably unchanged.

    Watched (see watched.py): the directory had no event since it was read through the
    descriptor its watch was added on, and `ino` (what its parent names now; -1 for a root,
    which is stat'ed) is the inode that was read. Otherwise: the directory's inode and ctime
    are those of the last read. Creating, removing or renaming an entry changes the
    directory's ctime, and no process can set a ctime (utimes sets it to now), so an unchanged
    ctime means unchanged entries. The stat comes before the read (a change in between shows
    up next time), and a directory changed within RACY_NS of its read is not reused (ctime
    ticks are coarse: a second change in the same tick would not show). A listing with a
    denied symlink is never reused: its target can change without the directory changing."""
    key = (directory, rel)
    known = _listings.get(key)
    if known is not None and (known.deny_read is not deny_read
                              or known.deny_write is not deny_write):
        known = None
    if known is not None and ino >= 0 and known.ino == ino and watched.trusted(directory):
        return known
    try:
        st = os.stat(directory, follow_symlinks=False)
        if (known is not None and known.ino == st.st_ino and known.dev == st.st_dev
                and known.ctime_ns == st.st_ctime_ns):
            return known
        return _read(directory, rel, st, deny_read, deny_write)
    except OSError:
        return None


def _read(directory: str, rel: str, st: os.stat_result, deny_read: Matcher,
          deny_write: Matcher) -> _Listing | None:
    """Read the directory through a descriptor (watched first, when a watcher can be used).
    Raises OSError (a link in its place: not followed)."""
    fd = os.open(directory, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC)
    try:
        st = os.fstat(fd)  # replaced since the stat: what is read is what was opened
        watching = watched.watch(fd, directory)
        with os.scandir(fd) as it:
            entries = list(it)
    finally:
        os.close(fd)
    listing = _Listing(st.st_dev, st.st_ino, st.st_ctime_ns, deny_read, deny_write, Found(), [])
    names = {e.name for e in entries}
    if "HEAD" in names and ({"config", "objects"} <= names or "commondir" in names):
        _git_dir(directory, entries, listing.found)
    reusable = True
    for entry in entries:
        listing.found.walked += 1
        child_rel = f"{rel}/{entry.name}" if rel else entry.name
        reusable &= _visit(entry, f"{directory}/{entry.name}", child_rel, deny_read,
                           deny_write, listing.found, listing.subdirs, listing.inodes)
    if (rel and len(entries) >= COLLAPSE_MIN and len(listing.found.mask_files) == len(entries)
            and not any(_is_link(e) for e in entries)):
        # Every entry is a denied file (listed by name, not a link's target): one mask for
        # the directory instead of one per file, so that thousands of decoys stay within
        # what bubblewrap takes (the directory becomes read-only and empty in the sandbox).
        listing.found.mask_files = []
        listing.found.mask_dirs.append(directory)
    if reusable and (watching or time.time_ns() - st.st_ctime_ns > RACY_NS):
        if len(_listings) >= CACHE_DIRS:
            _listings.clear()
            _wholes.clear()
            watched.forget()
        _listings[(directory, rel)] = listing
    if watching and reusable:
        watched.trust(directory)
    return listing


def _visit(entry: os.DirEntry[str], path: str, rel: str, deny_read: Matcher,
           deny_write: Matcher, found: Found, stack: list[tuple[str, str, int]],
           inodes: dict[int, list[str]]) -> bool:
    """Record what `entry` (at `path`) needs; False when the finding depends on more than
    the entry's name and type (a symlink's target), so the listing must not be reused."""
    try:
        is_link = entry.is_symlink()
        is_dir = not is_link and entry.is_dir(follow_symlinks=False)
    except OSError:
        return False
    if entry.name == ".git":
        found.work_trees.append(os.path.dirname(path))
    if is_link:
        if deny_read.match(path, rel):
            mask_target(path, found)
            return False
        return True
    if is_dir:
        if deny_read.match(path, rel) or deny_read.covers_subtree(path, rel):
            found.mask_dirs.append(path)
            return True
        if deny_write.match(path, rel) or deny_write.covers_subtree(path, rel):
            found.read_only.append(path)
        stack.append((path, rel, entry.inode()))
        return True
    inodes.setdefault(entry.inode(), []).append(entry.name)
    if deny_read.match(path, rel):
        found.mask_files.append(path)
    elif deny_write.match(path, rel) or entry.name == ".git":
        # A `.git` file (a worktree's or submodule's pointer) names the git directory:
        # rewritten, it would point git at one the command wrote.
        found.read_only.append(path)
    return True


def _is_link(entry: os.DirEntry[str]) -> bool:
    try:
        return entry.is_symlink()
    except OSError:
        return True


def mask_target(path: str, found: Found) -> None:
    """Mask what `path` really names (a symlink's target), when it exists."""
    target = link_target(path)
    if target is not None:
        (found.mask_dirs if target[1] else found.mask_files).append(target[0])


def link_target(path: str) -> tuple[str, bool] | None:
    """What `path` really names (every link on the way resolved) and whether it is a
    directory; None when it does not exist (a dangling link: nothing to read) or is nothing
    a read returns content from (a socket)."""
    real = existing_real(path)
    if real is None:
        return None
    try:
        mode = os.stat(real).st_mode
    except OSError:
        return None
    if stat.S_ISDIR(mode):
        return real, True
    if stat.S_ISREG(mode) or stat.S_ISCHR(mode) or stat.S_ISBLK(mode) or stat.S_ISFIFO(mode):
        return real, False
    return None


def _git_dir(directory: str, entries: list[os.DirEntry[str]], found: Found) -> None:
    found.git_dirs.append(directory)
    present = {e.name: e for e in entries}
    for name in GIT_CODE:
        entry = present.get(name)
        if entry is None and name in ("hooks", "info") and "commondir" not in present:
            # Missing: an empty read-only directory takes its place (bubblewrap creates the
            # mount point, an empty directory, as `git init` would have). A linked worktree's
            # admin directory has neither: its common directory's count.
            found.empty_dirs.append(os.path.join(directory, name))
        elif entry is not None and not entry.is_symlink():
            found.read_only.append(os.path.join(directory, name))
    for name in GIT_WRITABLE:
        entry = present.get(name)
        if entry is not None and _real_dir(entry):
            found.git_writable.append(os.path.join(directory, name))


def _real_dir(entry: os.DirEntry[str]) -> bool:
    try:
        return entry.is_dir(follow_symlinks=False)
    except OSError:
        return False


def walk_pattern_prefix(prefix: str, matcher: Matcher, found: Found, limit: int) -> None:
    """Masks for an absolute glob pattern: walk its literal directory prefix (bounded)."""
    stack = [prefix]
    while stack:
        directory = stack.pop()
        try:
            with os.scandir(directory) as it:
                entries = list(it)
        except OSError:
            continue
        for entry in entries:
            found.walked += 1
            if found.walked > limit:
                found.truncated = True
                return
            if matcher.match(entry.path, None):
                mask_target(entry.path, found)
            elif entry.is_dir(follow_symlinks=False):
                if matcher.covers_subtree(entry.path, None):
                    # Real: the prefix may be a link (`~/.ssh -> ~/dotfiles/ssh`).
                    mask_target(entry.path, found)
                else:
                    stack.append(entry.path)
