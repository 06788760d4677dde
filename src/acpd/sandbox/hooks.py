"""What git runs later, outside the sandbox, kept out of the command's reach: hooks, the files
hooks are links to, and the config files that can name hooks.

A command in the sandbox must not change what the user's next `git commit`, `git switch` or
`git push` (or an editor's git integration) runs outside it. walk.py makes each git
directory's own `hooks` and `config` read-only; this module covers the rest, fresh for every
command (configs change without any event in the workspace):

- Repositories: each directory the walk found holding a `.git` (a directory, a `gitdir:` file
  or a link; the repository is found as git finds it), each root's own repository (found
  upward from the root), and every other git directory the walk found (a bare repository, a
  submodule's under `.git/modules`: its own directory stands for the work tree). A linked
  worktree's common directory counts as well (git reads its config and its hooks).
- Hooks directories and included configs: `githooks.hooks_and_includes`, the policy's own
  reader (`$GIT_DIR/hooks` and every `core.hooksPath` in the repository's config and
  config.worktree, the user's, XDG and system configs and every file they include, whatever
  the `includeIf` condition; and the list of those included files), so the sandbox keeps
  exactly what the policy guards. For a linked worktree it is asked of the common directory
  as well. One that
  lies in a writable place (a root, a write path) is bound read-only onto itself (a mount
  point cannot be removed or renamed either). A missing one: its first missing directory on
  the way (`tools` for a missing `tools/git/hooks`) becomes an empty read-only directory
  (bubblewrap makes the mount point, as it does for a missing `.git/hooks`: the empty
  directory stays; directories it made beneath one would not be pinned). A file where it
  would be is read-only (it cannot be swapped for a directory).
- Pins: a mount moves with a renamed parent (`mv tools t2 && mkdir -p tools/git/hooks`), so
  every directory between the writable place and what is kept in it is pinned (bound onto
  itself, as git directories are: a mount point cannot be renamed).
- A hooks directory that is a work tree's top, a root, or above either: only the hook names
  (`githooks.HOOKS`) in it, not the whole directory: an existing one read-only, a missing one
  made uncreatable by binding /dev/null there (`stub_files`: the mount point, an empty file
  of mode 0444, is created and stays; git does not run a hook that is not executable).
- Links: every hook (a hook name in any hooks directory, writable or not) that is a symlink
  has its real target made read-only where it lies in a writable place (missing: a stub). A
  symlink met on the way to a hooks directory, a hook or a config, that sits in a writable
  directory not made read-only (`.git/hooks -> ../githooks`: `rm .git/hooks; mkdir
  .git/hooks`), can be replaced by the command, and no mount can pin a link: the profile is
  incomplete and says so.
- Hard links: a hook that is a regular file with more than one link. A bind is per path and the
  inode is shared, so every other name the walk saw in the roots is read-only too; names
  elsewhere cannot be found without walking the disk: the profile is incomplete.
- Configs: every file the repository's, the user's, XDG and system configs include
  (`include.path`, `includeIf.*.path`, recursively: `hooks_and_includes`' list), the
  repository's config (and its common directory's), and the user's and XDG configs
  themselves, where they lie in a writable place (a dotfiles repository as the workspace, a
  repository that includes `../.gitconfig`): read-only, a missing one a stub. A command could
  otherwise name a new hooks directory there (or any other code: `core.fsmonitor`). A
  missing `config.worktree` is a stub too when the repository sets
  `extensions.worktreeConfig` (git reads it then).
- What cannot be told (a config that cannot be read or parsed with certainty, a `.git` that
  cannot be read, more than MAX_REPOSITORIES repositories): the profile is incomplete, and
  the policy then judges a command as unsandboxed (docs/sandbox.md).
"""

from __future__ import annotations

import os
import stat
from dataclasses import dataclass, field

from acpd.policy.githooks import (
    HOOKS,
    Uncertain,
    common_dir,
    config_entries,
    hooks_and_includes,
    read_config,  # the one config reader: sized, capped
)
from acpd.policy.programs.git_index import Unreadable, find_repository
from acpd.sandbox.walk import Found

MAX_REPOSITORIES = 256
"""Repositories looked at per command; past it the profile is incomplete."""
MAX_LINKS = 40
MAX_NOTES = 3
_WORKTREE_KEY = frozenset({"worktreeconfig"})


@dataclass(slots=True)
class Kept:
    read_only: list[str] = field(default_factory=list)
    empty_dirs: list[str] = field(default_factory=list)
    stub_files: list[str] = field(default_factory=list)
    pins: list[str] = field(default_factory=list)
    """Directories between a writable place and what is kept in it, bound onto themselves:
    a mount point cannot be renamed, so `mv tools t2 && mkdir -p tools/git/hooks` cannot
    put a new directory where git looks (a mount moves with a renamed parent)."""
    notes: list[str] = field(default_factory=list)
    complete: bool = True


class _Unsure(Exception):
    pass


@dataclass(slots=True)
class _Resolved:
    real: str
    """Links resolved; a missing tail kept as written."""
    st: os.stat_result | None
    """Of `real` (not following a link: none is left), when it exists."""
    anchor: str
    """When missing: the nearest existing path on the way (real)."""
    anchor_is_dir: bool
    first_missing: str = ""
    """When missing: the anchor's child on the way (the first thing that does not exist)."""


def keep_hooks(found: Found, roots: tuple[str, ...], writable: tuple[str, ...], home: str,
               git_writes: bool) -> Kept:
    """What to bind for the hooks of every repository `found` holds (see the module doc).
    `writable`: every real directory bound writable (the roots among them)."""
    keeper = _Keeper(found, roots, writable, home)
    keeper.run()
    keeper.links_and_names(git_writes)
    return keeper.kept


class _Keeper:
    def __init__(self, found: Found, roots: tuple[str, ...], writable: tuple[str, ...],
                 home: str) -> None:
        self.found = found
        self.roots = roots
        self.writable = writable
        self.home = home
        self.kept = Kept()
        self.links: list[tuple[str, str]] = []
        """(link, the real directory holding it) met on the way to anything kept."""
        self.linked: dict[tuple[int, int], tuple[str, int]] = {}
        """Hooks with more than one name: (device, inode) -> (a name, the link count)."""
        self.configs: set[str] = set()
        self.plain: set[str] = set(writable)
        """Real directories reached from `/` through no link (this build's)."""
        self.dirs: set[tuple[str, str]] = set()

    def unsure(self, why: str) -> None:
        self.kept.complete = False
        if len(self.kept.notes) < MAX_NOTES:
            self.kept.notes.append(f"git hooks: {why}")

    def run(self) -> None:
        repos = self.repositories()
        if len(repos) > MAX_REPOSITORIES:
            self.unsure(f"{len(repos)} repositories: the hooks of those past "
                        f"{MAX_REPOSITORIES} are not kept read-only")
        for top, git_dir in repos[:MAX_REPOSITORIES]:
            try:
                self.repository(top, git_dir)
            except (Uncertain, Unreadable, _Unsure) as exc:
                self.unsure(f"cannot tell where the hooks of {top} are ({exc}): they may be "
                            "writable")

    def repositories(self) -> list[tuple[str, str]]:
        """(work tree top, git directory) pairs; a git directory without a known work tree
        is its own top (git runs a bare repository's hooks there)."""
        pairs: dict[tuple[str, str], None] = {}
        for start in dict.fromkeys((*self.found.work_trees, *self.roots)):
            try:
                repo = find_repository(start)
            except Unreadable as exc:
                self.unsure(f"cannot read the repository at {start} ({exc})")
                continue
            if repo is not None:
                pairs[(repo.top, repo.git_dir)] = None
        known = {git_dir for _, git_dir in pairs}
        for git_dir in self.found.git_dirs:
            if git_dir not in known:
                pairs[(git_dir, git_dir)] = None
        return list(pairs)

    def repository(self, top: str, git_dir: str) -> None:
        # A linked worktree's admin directory: git takes config and hooks from the common
        # directory (hooks_and_includes follows `commondir` as git does).
        dirs, includes = hooks_and_includes(top, git_dir, self.home)
        configs = [os.path.join(git_dir, "config")]
        common = common_dir(git_dir)
        if common is not None:
            configs.append(os.path.join(common, "config"))
        for directory in dict.fromkeys(dirs):
            if (top, directory) not in self.dirs:
                self.dirs.add((top, directory))
                self.hooks_dir(top, directory)
        for config in configs:
            self.config(config, None)
        # With extensions.worktreeConfig git reads config.worktree too: a missing one would
        # be a config the command writes (walk.py keeps an existing one read-only).
        read = any(_worktree_config(text) for text in map(read_config, configs)
                   if text is not None)
        self.config(os.path.join(git_dir, "config.worktree"), "file" if read else None)
        xdg = os.environ.get("XDG_CONFIG_HOME") or os.path.join(self.home, ".config")
        for config in (os.path.join(self.home, ".gitconfig"),
                       os.path.join(xdg, "git", "config"), "/etc/gitconfig", *includes):
            self.config(config, "file")  # an included one missing: git would read it made

    def hooks_dir(self, top: str, directory: str) -> None:
        found = self.resolve(directory)
        real = found.real
        if found.st is None:
            self.missing(found, "dir")
            return
        whole = not any(_under(place, (real, directory)) for place in (top, *self.roots))
        if whole and self.is_writable(real):
            self.read_only(real)
        if not stat.S_ISDIR(found.st.st_mode):
            return  # a file (now read-only where writable): git finds no hook in it
        if whole:
            try:
                with os.scandir(real) as it:
                    names = [e.name for e in it if e.name in HOOKS]
            except OSError as exc:
                raise _Unsure(f"cannot list {real}: {exc.strerror}") from exc
        else:
            names = sorted(HOOKS)  # the top or above: a hook name at a time, kept one by one
        for name in names:
            self.hook(real, name, writable_dir=not whole and self.is_writable(real))

    def hook(self, directory: str, name: str, writable_dir: bool) -> None:
        """A hook name in a hooks directory (real); `writable_dir`: the directory itself is
        not made read-only, so the name is kept on its own."""
        path = os.path.join(directory, name)
        try:
            st = os.lstat(path)
        except (FileNotFoundError, NotADirectoryError):
            if writable_dir:
                self.kept.stub_files.append(path)
                self.pin_above(path)
            return
        except OSError as exc:
            raise _Unsure(f"cannot examine {path}: {exc.strerror}") from exc
        if stat.S_ISLNK(st.st_mode):
            self.keep(path, "file")  # the link is noted as met (and replaceable if writable)
            return
        if writable_dir:
            self.read_only(path)
        self.note_links(path, st)

    def keep(self, path: str, missing: str | None) -> None:
        """Make what `path` names read-only where it lies in a writable place, following
        links; a missing one: `missing` "dir" (an empty read-only directory), "file" (a
        stub) or None (nothing)."""
        found = self.resolve(path)
        if found.st is None:
            if missing is not None:
                self.missing(found, missing)
            return
        if self.is_writable(found.real):
            self.read_only(found.real)
        self.note_links(found.real, found.st)

    def missing(self, found: _Resolved, kind: str) -> None:
        """Keep a missing path from being made: its first missing directory on the way, or
        itself, becomes an empty read-only directory (or a stub: a file with its parent
        there). Directories made by the mount would not be pinned, so none is."""
        if not self.is_writable(found.anchor):
            return
        if not found.anchor_is_dir:
            # A file where a directory is needed: kept, so it cannot become that directory.
            self.read_only(found.anchor)
        elif kind == "dir" or found.first_missing != found.real:
            self.kept.empty_dirs.append(found.first_missing)
            self.pin_above(found.first_missing)
        else:
            self.kept.stub_files.append(found.real)
            self.pin_above(found.real)

    def read_only(self, path: str) -> None:
        self.kept.read_only.append(path)
        self.pin_above(path)

    def pin_above(self, path: str) -> None:
        """Pin every directory between the writable place holding `path` and `path`."""
        place = max((w for w in self.writable if _under(path, (w,))), key=len, default=None)
        if place is None:
            return
        cur = os.path.dirname(path)
        while cur != place and _under(cur, (place,)):
            self.kept.pins.append(cur)
            cur = os.path.dirname(cur)

    def note_links(self, path: str, st: os.stat_result) -> None:
        if stat.S_ISREG(st.st_mode) and st.st_nlink > 1:
            self.linked.setdefault((st.st_dev, st.st_ino), (path, st.st_nlink))

    def config(self, path: str, missing: str | None) -> None:
        """A config file git reads (or an included one): kept (`missing` as in `keep`), once
        per build."""
        if path not in self.configs:
            self.configs.add(path)
            self.keep(path, missing)

    def resolve(self, path: str) -> _Resolved:
        """`path` as the kernel resolves it, one component at a time (every link met is
        noted in `self.links`). From the deepest directory known to be reached from `/`
        without a link (a root: real, resolved for this build; a directory this build
        resolved so): only the components below it are looked at."""
        start = "/"
        if "/.." not in path:
            cur = os.path.dirname(path)
            while cur != "/" and cur not in self.plain:
                cur = os.path.dirname(cur)
            start = cur
        pending = path[len(start):].split("/")[::-1]
        plain = True
        cur, st, hops = start, None, 0
        while pending:
            name = pending.pop()
            if name in ("", "."):
                continue
            if name == "..":
                cur = os.path.dirname(cur)
                st = None
                plain = False
                continue
            nxt = f"{cur}/{name}" if cur != "/" else f"/{name}"
            try:
                st = os.lstat(nxt)
            except (FileNotFoundError, NotADirectoryError) as exc:
                tail = os.path.normpath(os.path.join(nxt, *reversed(pending)))
                return _Resolved(tail, None, cur, not isinstance(exc, NotADirectoryError),
                                 nxt)
            except OSError as exc:
                raise _Unsure(f"cannot examine {nxt}: {exc.strerror}") from exc
            if stat.S_ISLNK(st.st_mode):
                plain = False
                hops += 1
                if hops > MAX_LINKS:
                    raise _Unsure(f"too many symlinks on the way to {path}")
                self.links.append((nxt, cur))
                try:
                    target = os.readlink(nxt)
                except OSError as exc:
                    raise _Unsure(f"cannot read the link {nxt}: {exc.strerror}") from exc
                if target.startswith("/"):
                    cur = "/"
                pending.extend(target.split("/")[::-1])
                continue
            cur = nxt
            if plain and pending and stat.S_ISDIR(st.st_mode):
                self.plain.add(cur)
        if st is None:
            try:
                st = os.lstat(cur)
            except OSError as exc:
                raise _Unsure(f"cannot examine {cur}: {exc.strerror}") from exc
        return _Resolved(cur, st, cur, stat.S_ISDIR(st.st_mode))

    def is_writable(self, path: str) -> bool:
        return _under(path, self.writable)

    def links_and_names(self, git_writes: bool) -> None:
        """The links met (one in a directory the command can write can be replaced) and the
        other names of hooks with several (read-only where writable)."""
        fixed = [*self.kept.read_only, *self.found.read_only, *self.found.mask_dirs,
                 *self.kept.empty_dirs, *self.found.empty_dirs]
        if not git_writes:
            fixed += self.found.git_dirs
        for link, holder in dict.fromkeys(self.links):
            if not self.is_writable(holder) or (
                    _under(holder, fixed) and (git_writes or not _under(
                        holder, self.found.git_writable))):
                continue
            self.unsure(f"{link} is a symlink on the way to a hook or a git config, in a "
                        "directory the command can write: it can be replaced")
        if self.linked:
            self.other_names()

    def other_names(self) -> None:
        names: dict[tuple[int, int], set[str]] = {k: {p} for k, (p, _) in self.linked.items()}
        by_dev: dict[int, set[int]] = {}
        for dev, ino in self.linked:
            by_dev.setdefault(dev, set()).add(ino)
        for directory, dev, inodes in self.found.files:
            wanted = by_dev.get(dev)
            if not wanted:
                continue
            for ino in inodes.keys() & wanted:
                for name in inodes[ino]:
                    path = f"{directory}/{name}"
                    try:
                        st = os.lstat(path)
                    except OSError:
                        continue
                    if (st.st_dev, st.st_ino) == (dev, ino):
                        names[(dev, ino)].add(path)
        for key, (path, count) in self.linked.items():
            for name in sorted(names[key]):
                if self.is_writable(name):
                    self.read_only(name)
            if len(names[key]) < count:
                self.unsure(f"the hook {path} has {count - len(names[key])} more hard "
                            "link(s) outside the workspace: a write through one changes it")


def _worktree_config(text: str) -> bool:
    if "worktreeconfig" not in text.lower():
        return False
    return any(section == "extensions" and value.lower() in ("true", "yes", "on", "1")
               for section, _, value in config_entries(text, _WORKTREE_KEY))


def _under(path: str, parents: tuple[str, ...] | list[str]) -> bool:
    return any(path == p or path.startswith(p.rstrip("/") + "/") for p in parents)
