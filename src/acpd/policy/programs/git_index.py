"""Which tracked paths of a repository `deny_read` names: read from its index, per decision.

The kernel sandbox masks a denied file on disk, not git's copy of it: `git diff` prints the
staged `.env` against the masked one, `git grep` reads a blob for entries marked
assume-unchanged or skip-worktree. So a git form that prints tracked content asks when the
index holds a path the deny list names (and the form's pathspec can reach it).

Rules and limits:
- The repository is found as git finds it: from the directory git runs in, up to `/`, the
  first `.git` (a directory, or a file `gitdir: X` for worktrees and submodules). Nothing is
  cached across decisions: the index is read afresh each time it is needed.
- The index (v2, v3, v4; SHA-1 or SHA-256 entries) is read whole up to MAX_INDEX bytes. A v2/v3
  index whose bytes hold no literal part of any deny pattern cannot name a denied path (names
  are stored whole), so the common case costs one read and one case-folded search; otherwise
  each entry is parsed. A split index (`sharedindex.*`) is read too; a sparse-directory entry
  counts as every path beneath it.
- Anything that cannot be read or understood (a bad signature, an unknown version, a file over
  the bound, any OSError) is `Unreadable`: the caller asks, naming why.
"""

from __future__ import annotations

import os
import re
import stat
from dataclasses import dataclass

from acpd.policy import budget as budget_mod
from acpd.policy.sandbox import PathPattern, PathRules, matches

MAX_INDEX = 32 * 1024 * 1024
"""Bytes of index read at most (a 100,000-file index is about 10 MiB)."""
MAX_WALK = 64
"""Directories walked up from the working directory looking for `.git`."""
MAX_SHARED = 8
_LITERAL = re.compile(r"[^*?\[\]]+")


class Unreadable(Exception):
    """The index (or the repository) could not be read: ask, with this reason."""


@dataclass(frozen=True, slots=True)
class Repository:
    top: str
    """The work tree's top directory (where `.git` was found)."""
    git_dir: str


def find_repository(start: str) -> Repository | None:
    """The repository git would use when run in `start` (absolute), or None outside one.
    Raises Unreadable when a `.git` on the way cannot be read."""
    cur = os.path.normpath(start)
    for _ in range(MAX_WALK):
        dot_git = os.path.join(cur, ".git")
        try:
            st = os.stat(dot_git)
        except FileNotFoundError:
            st = None
        except NotADirectoryError:
            st = None
        except OSError as exc:
            raise Unreadable(f"cannot read {dot_git}: {exc.strerror}") from exc
        if st is not None:
            if stat.S_ISDIR(st.st_mode):
                return Repository(cur, dot_git)
            return Repository(cur, _gitdir_file(dot_git, cur))
        parent = os.path.dirname(cur)
        if parent == cur:
            return None
        cur = parent
    raise Unreadable(f"{start} is nested too deeply to find its repository")


def _gitdir_file(path: str, top: str) -> str:
    """`.git` as a file (a worktree or a submodule): `gitdir: DIR`."""
    try:
        with open(path, "rb") as fh:
            text = fh.read(4097)
    except OSError as exc:
        raise Unreadable(f"cannot read {path}: {exc.strerror}") from exc
    line = text.decode("utf-8", "replace").strip()
    if len(text) > 4096 or not line.startswith("gitdir:"):
        raise Unreadable(f"{path} is not a gitdir file")
    target = line[len("gitdir:") :].strip()
    return os.path.normpath(os.path.join(top, target))


def _read(path: str) -> bytes | None:
    """The file's bytes (None when it does not exist)."""
    try:
        with open(path, "rb") as fh:
            data = fh.read(MAX_INDEX + 1)
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise Unreadable(f"cannot read {path}: {exc.strerror}") from exc
    if len(data) > MAX_INDEX:
        raise Unreadable(f"{path} is over {MAX_INDEX // (1024 * 1024)} MiB")
    return data


def _needles(patterns: tuple[PathPattern, ...]) -> list[bytes] | None:
    """One literal part (case-folded) each pattern's matches must contain, or None when a
    pattern has none (then every index is parsed)."""
    out: list[bytes] = []
    for pat in patterns:
        chunks = [c for part in pat.parts for c in _LITERAL.findall(part)]
        if pat.anchor == "abs":
            chunks = chunks[-1:]  # the leading ones may lie above the work tree
        if not chunks:
            return None
        out.append(max(chunks, key=len).lower().encode("utf-8", "surrogateescape"))
    return out


def _may_hold(data: bytes, top: str, patterns: tuple[PathPattern, ...]) -> bool:
    """False only when no tracked name of this (v2/v3) index can match a pattern."""
    needles = _needles(patterns)
    if needles is None:
        return True
    folded = data.lower()
    above = top.lower().encode("utf-8", "surrogateescape") + b"/"
    return any(n in folded or n in above for n in needles)


def tracked_paths(data: bytes, source: str) -> list[tuple[str, bool]]:
    """(name, is a sparse directory) of every entry of an index file's bytes.
    Raises Unreadable when the bytes are not an index git would read."""
    version = _header(data, source)
    count = int.from_bytes(data[8:12], "big")
    for hash_len in (20, 32):
        try:
            return _entries(data, version, count, hash_len)
        except (IndexError, ValueError):
            continue
    raise Unreadable(f"{source} could not be parsed")


def _header(data: bytes, source: str) -> int:
    """The index version; raises Unreadable for what git would not read."""
    if len(data) < 12 or data[:4] != b"DIRC":
        raise Unreadable(f"{source} is not a git index")
    version = int.from_bytes(data[4:8], "big")
    if version not in (2, 3, 4):
        raise Unreadable(f"{source} has index version {version}")
    return version


def _entries(data: bytes, version: int, count: int, hash_len: int) -> list[tuple[str, bool]]:
    out: list[tuple[str, bool]] = []
    pos = 12
    fixed = 40 + hash_len + 2
    previous = b""
    end = len(data) - hash_len
    for k in range(count):
        if not k & 1023:
            budget_mod.check()
        if pos + fixed > end:
            raise ValueError("truncated")
        mode = int.from_bytes(data[pos + 24 : pos + 28], "big")
        flags = int.from_bytes(data[pos + fixed - 2 : pos + fixed], "big")
        head = fixed + (2 if flags & 0x4000 and version >= 3 else 0)
        if version == 4:
            strip, at = _varint(data, pos + head)
            nul = data.index(b"\x00", at)
            if strip > len(previous):
                raise ValueError("bad prefix")
            name = previous[: len(previous) - strip] + data[at:nul]
            pos = nul + 1
        else:
            nul = data.index(b"\x00", pos + head)
            name = data[pos + head : nul]
            pos += (head + len(name) + 8) & ~7
        if pos > end or not name:
            raise ValueError("truncated")
        previous = name
        out.append((name.decode("utf-8", "surrogateescape"), stat.S_ISDIR(mode)))
    return out


def _varint(data: bytes, pos: int) -> tuple[int, int]:
    """git's offset varint (index v4 name prefixes)."""
    byte = data[pos]
    value = byte & 0x7F
    while byte & 0x80:
        pos += 1
        byte = data[pos]
        value = ((value + 1) << 7) | (byte & 0x7F)
    return value, pos + 1


def _shared_indexes(repo: Repository) -> list[tuple[bytes, str]]:
    """The bases of a split index (`core.splitIndex`): every `sharedindex.*` file (git
    keeps old ones for a while; reading them all can only find more names)."""
    try:
        names = [e.name for e in os.scandir(repo.git_dir) if e.name.startswith("sharedindex.")]
    except OSError as exc:
        raise Unreadable(f"cannot list {repo.git_dir}: {exc.strerror}") from exc
    if len(names) > MAX_SHARED:
        raise Unreadable(f"the repository has {len(names)} shared index files")
    out: list[tuple[bytes, str]] = []
    for name in sorted(names):
        data = _read(os.path.join(repo.git_dir, name))
        if data is not None:
            out.append((data, name))
    return out


def denied_tracked(repo: Repository, rules: PathRules) -> list[tuple[str, str, bool]]:
    """(absolute path, deny pattern, is a sparse directory) for each index entry that
    `deny_read` names. Raises Unreadable."""
    if not rules.deny_read:
        return []
    found: list[tuple[str, str, bool]] = []
    for data, source in _index_files(repo):
        version = _header(data, source)
        if version != 4 and not _may_hold(data, repo.top, rules.deny_read):
            continue
        for name, sparse in tracked_paths(data, source):
            path = f"{repo.top.rstrip('/')}/{name.rstrip('/')}"
            hit = matches(path, rules.deny_read, rules.roots)
            if hit is None and sparse:
                hit = "(a sparse directory: any path beneath it)"
            if hit is not None:
                found.append((path, hit, sparse))
    return found


def _index_files(repo: Repository) -> list[tuple[bytes, str]]:
    index = os.path.join(repo.git_dir, "index")
    out: list[tuple[bytes, str]] = []
    data = _read(index)
    if data is not None:
        out.append((data, index))
    return out + _shared_indexes(repo)
