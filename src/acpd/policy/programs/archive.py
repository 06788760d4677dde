"""Where a tar extraction writes: the archive's members, listed at judge time.

The argument spec cannot see member names, and the sandbox lets a workspace command write
most of a git directory (`.git/commondir` redirects git's config to a workspace file). So
each decision on `tar -x` (`--extract`, `--get`, bundled `xf`, old-style letters) lists
the archive with `tarfile` (no subprocess), bounded in size and member count, and judges
every member path under every directory it may land in (the working directory and each
`-C`), after resolving the links on disk above it:

* `deny` (`tar-extract-git`): a member that lands under a `.git` directory (any depth,
  through an existing link as well), or a `-C` directory inside one.
* `ask` (`tar-extract-unlisted`): the archive cannot be listed (stdin, missing, a dynamic
  name, too big, a format `tarfile` does not read, more than MAX_MEMBERS members); a member
  with an absolute name, a `..` component, or that is a link (a later member could be
  written through it); a member that lands outside the workspace; `-P/--absolute-names`,
  `--transform`/`--xform`/`--strip-components` and options the table does not know
  (`--one-top-level=DIR`): the listed names no longer say where members land.

Extraction to stdout (`-O`, `--to-stdout`) writes no member. Nothing here is cached: an
archive can change between two decisions.
"""

from __future__ import annotations

import os
import tarfile
from typing import Final

from acpd.policy import pathtext
from acpd.policy.words import DYN

MAX_BYTES: Final = 8 << 20
_RENAMING: Final = frozenset({"--transform", "--xform", "--strip-components"})
MAX_MEMBERS: Final = 2000


def _is_git(path: str) -> bool:
    return ".git" in path.split(os.sep)


def extraction(args: list[str]) -> tuple[list[str], list[str], bool] | None:
    """(archives, -C directories, member names do not say where they land: -P, renaming or
    unknown options) of a tar argv that extracts members to files, else None."""
    from acpd.policy.programs.scripts import TAR, _tar_oldstyle
    from acpd.policy.programs.spec import Model, parse_argv

    model = Model("tar")
    parsed = parse_argv(TAR, _tar_oldstyle(list(args)), model)
    names = {opt.name for opt, _ in parsed.options}
    if not names & {"-x", "--extract", "--get"} or names & {"-O", "--to-stdout"}:
        return None
    # options that rename members (or that the table does not know, `--one-top-level=DIR`)
    # make the listed names say nothing about where they land
    renamed = bool(model.unknown) or bool(names & _RENAMING)
    return (parsed.values("--file"), parsed.values("--directory"),
            renamed or bool(names & {"--absolute-names"}))


def _members(archive: str) -> list[tarfile.TarInfo] | None:
    if archive in ("", "-") or DYN in archive or "\x00" in archive:
        return None
    try:
        if os.path.getsize(archive) > MAX_BYTES:
            return None
        out: list[tarfile.TarInfo] = []
        with tarfile.open(archive, "r:*") as tf:
            for info in tf:
                out.append(info)
                if len(out) > MAX_MEMBERS:
                    return None
        return out
    except (OSError, tarfile.TarError, EOFError, ValueError, RuntimeError):
        return None


def _inside(path: str, roots: tuple[str, ...]) -> bool:
    return any(path == r or path.startswith(r.rstrip("/") + "/") for r in roots)


def judge_members(args: list[str], cwd: str, roots: tuple[str, ...]) -> tuple[bool, bool]:
    """(a member lands under a .git directory, the extraction must ask) for a tar argv."""
    ext = extraction(args)
    if ext is None:
        return False, False
    archives, dirs, absolute = ext
    bases = [pathtext.normpath(pathtext.join(cwd, d)) for d in dirs if DYN not in d]
    if len(bases) != len(dirs):
        return False, True
    bases.append(cwd)
    real_roots = tuple(os.path.realpath(r) for r in roots)
    if any(_is_git(b) or _is_git(os.path.realpath(b)) for b in bases):
        return True, True
    ask = absolute or not archives
    for archive in archives:
        members = _members(pathtext.join(cwd, archive))
        if members is None:
            ask = True
            continue
        for info in members:
            name = info.name
            parts = name.split("/")
            if name.startswith("/") or ".." in parts or info.issym() or info.islnk():
                ask = True
            if ".git" in parts:
                return True, True
            for base in bases:
                target = os.path.realpath(pathtext.join(base, name))
                if _is_git(target):
                    return True, True
                if not _inside(target, real_roots):
                    ask = True
    return False, ask
