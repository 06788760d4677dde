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
from bisect import bisect_right
from dataclasses import dataclass
from typing import Final

from acpd.policy import budget as budget_mod
from acpd.policy import pathtext
from acpd.policy.globmatch import fnmatchcase
from acpd.policy.sandbox import PathPattern, PathRules, inside, matches
from acpd.readcap import read_upto

MAX_INDEX: Final = 32 * 1024 * 1024
"""Bytes of index read at most (a 100,000-file index is about 10 MiB)."""
MAX_WALK: Final = 64
"""Directories walked up from the working directory looking for `.git`."""
MAX_SHARED: Final = 8
_LITERAL: Final = re.compile(r"[^*?\[\]]+")


class Unreadable(Exception):
    """The index (or the repository) could not be read: ask, with this reason."""


@dataclass(frozen=True, slots=True)
class Repository:
    top: str
    """The work tree's top directory (where `.git` was found)."""
    git_dir: str


_FAST_LOOKUP: Final = (os.getuid() == os.geteuid() and os.getgid() == os.getegid()
                      and os.access in os.supports_follow_symlinks)
"""A missing `.git` is told by `access` (a bool) instead of a failed `stat`: the error
`stat` raises costs more than both system calls (most of a write's judging went to the
three or four of a walk up to `/`). Exact: no entry `.git` (access F_OK without following a
link) in a directory that resolves and may be searched (access X_OK: real ids, here the
effective ones) is what stat reports as ENOENT or ENOTDIR, which the walk reads as missing;
a directory that may be searched has every directory above it searchable too, so the walk up
asks once. Anything else (a `.git` entry, a lookup that fails on the way) is stat's, as
before."""
_FAST_MAX_CHARS: Final = 1000
"""Longer: stat tells ENAMETOOLONG (PATH_MAX 4096 bytes, up to 4 bytes a character)."""


def _stat_dot_git(dot_git: str) -> os.stat_result | None:
    try:
        return os.stat(dot_git)
    except (FileNotFoundError, NotADirectoryError):
        return None
    except OSError as exc:
        raise Unreadable(f"cannot read {dot_git}: {exc.strerror}") from exc


def find_repository(start: str) -> Repository | None:
    """The repository git would use when run in `start` (absolute), or None outside one.
    Raises Unreadable when a `.git` on the way cannot be read."""
    cur = pathtext.normpath(start)
    searchable = False  # cur resolves, and every directory on its path may be searched
    for _ in range(MAX_WALK):
        dot_git = pathtext.join(cur, ".git")
        if _FAST_LOOKUP and len(dot_git) <= _FAST_MAX_CHARS and not os.access(
                dot_git, os.F_OK, follow_symlinks=False) and (
                searchable or os.access(cur, os.X_OK)):
            st = None  # no entry named .git in cur (see _FAST_LOOKUP)
            searchable = True
        else:
            st = _stat_dot_git(dot_git)
        if st is not None:
            if stat.S_ISDIR(st.st_mode):
                return Repository(cur, dot_git)
            return Repository(cur, _gitdir_file(dot_git, cur))
        parent = pathtext.dirname(cur)
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
    return pathtext.normpath(pathtext.join(top, target))


def _read(path: str) -> bytes | None:
    """The file's bytes (None when it does not exist)."""
    try:
        with open(path, "rb") as fh:
            data = read_upto(fh, MAX_INDEX)
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise Unreadable(f"cannot read {path}: {exc.strerror}") from exc
    if len(data) > MAX_INDEX:
        raise Unreadable(f"{path} is over {MAX_INDEX // (1024 * 1024)} MiB")
    return data


def _needles(patterns: list[PathPattern]) -> list[bytes] | None:
    """One literal part (case-folded) each pattern's matches must contain, or None when a
    pattern has none (then every name is checked)."""
    out: list[bytes] = []
    for pat in patterns:
        chunks = [c for part in pat.parts for c in _LITERAL.findall(part)]
        if pat.anchor == "abs":
            chunks = chunks[-1:]  # the leading ones may lie above the work tree
        if not chunks or not max(chunks, key=len).isascii():
            return None  # bytes.lower() folds ASCII only: check every name
        out.append(max(chunks, key=len).lower().encode("utf-8", "surrogateescape"))
    return out


class _Sieve:
    """Which names of an index need the full pattern match: those holding a literal part of
    a pattern that can reach beneath the work tree's top (all names when a part is in the
    top's own path, or a pattern has none)."""

    def __init__(self, top: str, rules: PathRules) -> None:
        self.patterns = tuple(p for p in rules.deny_read if may_reach(top, p, rules.roots))
        needles = _needles(list(self.patterns))
        above = top.lower().encode("utf-8", "surrogateescape") + b"/"
        self.every = needles is None or any(n in above for n in needles)
        # `bytes in bytes` (a C search per needle) is ~20x faster here than one regex
        # alternation over a megabyte of index
        unique = list(dict.fromkeys(needles or ()))
        # a needle holding another is found only where that one is (".env." and ".env")
        self.needles = tuple(n for n in unique if not any(m != n and m in n for m in unique))

    def may_hold(self, data: bytes) -> bool:
        """False only when no name of this (v2/v3) index can match: names are stored
        whole there, so a name holding a literal part holds it in the file's bytes."""
        if not self.patterns:
            return False
        if self.every:
            return True
        folded = data.lower()
        return any(n in folded for n in self.needles)

    def candidates(self, data: bytes, entries: list[tuple[bytes, bool, int]]) -> list[int]:
        """Indexes of the entries whose names hold a literal part (v2/v3: found by searching
        the file's bytes and mapping each hit to the name around it, not name by name)."""
        if self.every or data[4:8] == b"\x00\x00\x00\x04":
            return [k for k, (name, _, _) in enumerate(entries) if self.every or any(
                n in name.lower() for n in self.needles)]
        starts = [at for _, _, at in entries]
        folded = data.lower()
        hits: set[int] = set()
        for needle in self.needles:
            i = folded.find(needle)
            while i >= 0:
                k = bisect_right(starts, i) - 1
                if k >= 0 and i + len(needle) <= starts[k] + len(entries[k][0]):
                    hits.add(k)
                i = folded.find(needle, i + 1)
        return sorted(hits)


def tracked_paths(data: bytes, source: str) -> list[tuple[str, bool]]:
    """(name, is a sparse directory) of every entry of an index file's bytes.
    Raises Unreadable when the bytes are not an index git would read."""
    return [(n.decode("utf-8", "surrogateescape"), d) for n, d in tracked_names(data, source)]


def tracked_names(data: bytes, source: str) -> list[tuple[bytes, bool]]:
    """`tracked_paths` with the names as stored (bytes)."""
    return [(name, sparse) for name, sparse, _ in _parse(data, source)]


def _parse(data: bytes, source: str) -> list[tuple[bytes, bool, int]]:
    """(name, is a sparse directory, offset of the name in `data`) per entry."""
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


def _entries(data: bytes, version: int, count: int,
             hash_len: int) -> list[tuple[bytes, bool, int]]:
    """The entries' names (the loop is the cost of a big index: kept to slicing)."""
    out: list[tuple[bytes, bool, int]] = []
    append = out.append
    pos = 12
    fixed = 40 + hash_len + 2
    end = len(data) - hash_len
    previous = b""
    from_bytes = int.from_bytes
    for k in range(count):
        if not k & 4095:
            budget_mod.check()
        flags = from_bytes(data[pos + fixed - 2 : pos + fixed], "big")
        head = pos + fixed + (2 if flags & 0x4000 and version >= 3 else 0)
        if version == 4:
            strip, at = _varint(data, head)
            nul = data.index(b"\x00", at)
            if strip > len(previous):
                raise ValueError("bad prefix")
            name = previous[: len(previous) - strip] + data[at:nul]
            previous = name
            nxt = nul + 1
        else:
            length = flags & 0xFFF
            nul = head + length if length < 0xFFF else data.index(b"\x00", head)
            name = data[head:nul]
            nxt = pos + ((head - pos + len(name) + 8) & ~7)
        if nxt > end or not name or data[nul] != 0:
            raise ValueError("truncated")
        append((name, data[pos + 26] >> 4 == 4, head))  # mode 040000: a sparse directory
        pos = nxt
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
        data = _read(pathtext.join(repo.git_dir, name))
        if data is not None:
            out.append((data, name))
    return out


def denied_tracked(repo: Repository, rules: PathRules) -> list[tuple[str, str, bool]]:
    """(absolute path, deny pattern, is a sparse directory) for each index entry that
    `deny_read` names. Raises Unreadable."""
    if not rules.deny_read:
        return []
    sieve = _Sieve(repo.top, rules)
    found: list[tuple[str, str, bool]] = []
    top = repo.top.rstrip("/")
    for data, source in _index_files(repo):
        version = _header(data, source)
        if version != 4 and not sieve.may_hold(data):
            continue
        entries = _parse(data, source)
        picked = set(sieve.candidates(data, entries))
        picked.update(k for k, (_, sparse, _) in enumerate(entries) if sparse)
        for k in sorted(picked):
            raw, sparse, _ = entries[k]
            path = f"{top}/{raw.decode('utf-8', 'surrogateescape').rstrip('/')}"
            hit = matches(path, sieve.patterns, rules.roots)
            if hit is None and sparse:
                hit = "(a sparse directory: any path beneath it)"
            if hit is not None:
                found.append((path, hit, sparse))
    return found


def may_reach(spec: str, pat: PathPattern, roots: tuple[str, ...]) -> bool:
    """Could a path at or beneath `spec` (absolute; MAGIC: unknown) be one `pat` names?
    Conservative: True unless the pattern's leading components rule it out."""
    if spec == MAGIC or pat.anchor == "any":
        return True
    text = pat.text
    tail_any = text.endswith("/**")
    if "**" in (text[:-3] if tail_any else text):
        return True
    if pat.anchor == "rel":
        root = inside(spec, roots)
        if root is None:
            return any(inside(r, (spec,)) for r in roots)
        comps = [c for c in spec[len(root.rstrip("/")) + 1 :].split("/") if c]
    else:
        comps = [c for c in spec.split("/") if c]
    parts = list(pat.parts)
    if not tail_any and len(comps) > len(parts):
        return False
    return all(_meet(c, p) for c, p in zip(comps, parts, strict=False))


def _meet(comp: str, part: str) -> bool:
    if _GLOB.search(part):
        return fnmatchcase(comp.lower(), part.lower())
    return comp.lower() == part.lower()


MAGIC: Final = "\x00magic"
"""A pathspec whose reach is not computed (a glob, magic): it may cover any path."""
_GLOB: Final = re.compile(r"[*?\[]")


def _index_files(repo: Repository) -> list[tuple[bytes, str]]:
    index = pathtext.join(repo.git_dir, "index")
    out: list[tuple[bytes, str]] = []
    data = _read(index)
    if data is not None:
        out.append((data, index))
    return out + _shared_indexes(repo)
