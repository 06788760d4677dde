"""What a checkpoint knows about one path, and what changed between two checkpoints.

An `Entry` is a regular file (`f`: mode and the digest of its bytes), a symlink (`l`: its
target text, never followed) or a directory (`d`: its mode). FIFOs, sockets and devices are
not entries: they are skipped and noted. A file whose bytes could not be saved (larger than
the per-file cap, unreadable, the store full) has `blob = None` and a `note` saying why: such
a change is shown but can never be undone, and undo says so instead of pretending.

The stat fields (size, times, inode, device) decide whether a file must be read again at the
next checkpoint; they are compared with fresh `lstat`s every time, never trusted alone. An
entry read within RACY_NS of its own mtime or ctime is `racy` (a later write in the same
clock tick could keep the same stat) and is read again at the next checkpoint.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from acpd.checkpoint.statdir import StatLike

RACY_NS = 2_000_000_000
"""Files changed this recently before a scan are read again next time (coarse clocks)."""


@dataclass(frozen=True, slots=True)
class Entry:
    kind: str
    """"f" regular file, "l" symlink, "d" directory."""
    mode: int
    """Permission bits (st_mode & 0o7777)."""
    size: int = 0
    mtime_ns: int = 0
    ctime_ns: int = 0
    ino: int = 0
    dev: int = 0
    blob: str | None = None
    """Digest of a file's bytes in the blob store; None: not saved (see note)."""
    target: str | None = None
    """A symlink's target text."""
    note: str | None = None
    racy: bool = False
    fast: bool = False
    """A file the next scan may keep on a matching lstat alone (saved, or too large to save,
    and not racy): precomputed, because that test runs once per file per scan."""

    def same_stat(self, st: StatLike) -> bool:
        """The fresh lstat matches what this entry was made from (so its content did not
        change, unless the entry is racy)."""
        return (
            self.size == st.st_size and self.mtime_ns == st.st_mtime_ns
            and self.ctime_ns == st.st_ctime_ns and self.ino == st.st_ino
            and self.dev == st.st_dev and self.mode == st.st_mode & 0o7777
        )

    def state(self) -> tuple[Any, ...]:
        """What undo compares: the content and mode, not when or where it was written.
        A file whose bytes were not saved is compared by its stat, which is all we know."""
        if self.kind == "d":
            return ("d", self.mode)
        if self.kind == "l":
            return ("l", self.target)
        if self.blob is None:
            return ("f", self.mode, None, self.size, self.mtime_ns, self.ctime_ns, self.ino)
        return ("f", self.mode, self.blob)

    @property
    def restorable(self) -> bool:
        return self.kind != "f" or self.blob is not None

    def to_json(self) -> dict[str, Any]:
        data: dict[str, Any] = {"kind": self.kind, "mode": self.mode, "size": self.size}
        if self.kind == "f" and self.blob is None:
            data.update(mtime_ns=self.mtime_ns, ctime_ns=self.ctime_ns, ino=self.ino)
        for key in ("blob", "target", "note"):
            value = getattr(self, key)
            if value is not None:
                data[key] = value
        return data

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Entry:
        return cls(
            str(data["kind"]), int(data["mode"]), int(data.get("size", 0)),
            int(data.get("mtime_ns", 0)), int(data.get("ctime_ns", 0)), int(data.get("ino", 0)),
            0, data.get("blob"), data.get("target"), data.get("note"),
        )


@dataclass(frozen=True, slots=True)
class Change:
    path: str
    """Relative to the workspace root, "/"-separated."""
    before: Entry | None
    after: Entry | None

    @property
    def action(self) -> str:
        if self.before is None:
            return "created"
        if self.after is None:
            return "deleted"
        return "changed"

    @property
    def is_dir(self) -> bool:
        """A directory before and after (or on the side that exists)."""
        return {e.kind for e in (self.before, self.after) if e is not None} == {"d"}

    def to_json(self) -> list[Any]:
        return [
            self.path,
            self.before.to_json() if self.before is not None else None,
            self.after.to_json() if self.after is not None else None,
        ]

    @classmethod
    def from_json(cls, data: list[Any]) -> Change:
        path, before, after = data
        return cls(
            str(path),
            Entry.from_json(before) if before is not None else None,
            Entry.from_json(after) if after is not None else None,
        )


def diff_manifests(
    before: dict[str, Entry], after: dict[str, Entry], paths: set[str] | None = None,
) -> list[Change]:
    """Every path whose state differs, sorted by path; only among `paths` when given (the
    only ones that may differ)."""
    if paths is not None:
        return sorted((Change(p, before.get(p), after.get(p)) for p in paths
                       if _differs(before.get(p), after.get(p))), key=lambda c: c.path)
    get = after.get
    changes = [
        Change(path, entry, get(path))
        for path, entry in before.items()
        # The scanner hands back the very object for an unchanged path: identity first.
        if (now := get(path)) is not entry and (now is None or now.state() != entry.state())
    ]
    changes.extend(Change(path, None, entry) for path, entry in after.items()
                   if path not in before)
    changes.sort(key=lambda c: c.path)
    return changes


def _differs(first: Entry | None, second: Entry | None) -> bool:
    if first is second:
        return False
    return first is None or second is None or first.state() != second.state()


def summary(changes: list[Change]) -> dict[str, int]:
    """Counts of files (and symlinks) created, changed and deleted; directories apart."""
    counts = {"created": 0, "changed": 0, "deleted": 0, "dirs": 0}
    for change in changes:
        if change.is_dir:
            counts["dirs"] += 1
        else:
            counts[change.action] += 1
    return counts
