"""Other paths of a masked file or directory through other mounts of the same file system.

The sandbox sees the whole host file system (`--ro-bind / /`, recursive), so a bind mount of the
workspace elsewhere (`mount --bind ~/proj /mnt/p`, a container's volume, the same disk mounted
twice) shows `.env` again under another path, where the mask (which covers one path) is not.
For each masked path, `aliases` reads /proc/self/mountinfo: the mount holding the path gives
its path inside the file system (the mount's root plus the rest), and every other mount of the
same file system (same device number) whose root lies above it shows it again at `mount point
+ remainder`. Each candidate is lstat'ed and kept only when it is the same file (device and
inode) as the masked path. Read fresh for every build (mounts change); a few dozen lines.

Not found: overlay and FUSE views of the same files (another device number), and mounts made
while the command runs. Paths under /tmp, /proc, /dev and /sys are skipped: the sandbox has its
own there.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass

MOUNTINFO = "/proc/self/mountinfo"
OWN = ("/tmp", "/proc", "/dev", "/sys")
"""Replaced in the sandbox: a host alias there is not reachable from inside."""
_ESCAPE = re.compile(r"\\([0-7]{3})")


@dataclass(frozen=True, slots=True)
class Mount:
    dev: str
    root: str
    point: str


def read_mounts(path: str = MOUNTINFO) -> list[Mount]:
    """The mounts in order (a later one at the same point lies on top); [] when unreadable."""
    try:
        with open(path, encoding="utf-8", errors="surrogateescape") as handle:
            lines = handle.read().splitlines()
    except OSError:
        return []
    mounts = []
    for line in lines:
        fields = line.split(" ")
        if len(fields) >= 5:
            mounts.append(Mount(fields[2], _unescape(fields[3]), _unescape(fields[4])))
    return mounts


def aliases(paths: list[str], mounts: list[Mount]) -> list[str]:
    """The other paths (through other mounts) of each of `paths` (real, absolute)."""
    shared = _shared_devices(mounts)
    if not shared:
        return []
    out: list[str] = []
    for path in paths:
        holder = _holder(path, mounts)
        if holder is None or holder.dev not in shared:
            continue
        inner = _join(holder.root, _rest(path, holder.point))
        try:
            st = os.lstat(path)
        except OSError:
            continue
        for mount in mounts:
            if mount is holder or mount.dev != holder.dev or not _under(inner, mount.root):
                continue
            alias = _join(mount.point, _rest(inner, mount.root))
            if alias == path or any(_under(alias, own) for own in OWN):
                continue
            if _same(alias, st) and alias not in out:
                out.append(alias)
    return out


def _shared_devices(mounts: list[Mount]) -> set[str]:
    seen: set[str] = set()
    shared: set[str] = set()
    for mount in mounts:
        (shared if mount.dev in seen else seen).add(mount.dev)
    return shared


def _holder(path: str, mounts: list[Mount]) -> Mount | None:
    best: Mount | None = None
    for mount in mounts:
        if _under(path, mount.point) and (best is None or len(mount.point) >= len(best.point)):
            best = mount
    return best


def _same(path: str, st: os.stat_result) -> bool:
    try:
        other = os.lstat(path)
    except OSError:
        return False
    return (other.st_dev, other.st_ino) == (st.st_dev, st.st_ino)


def _under(path: str, parent: str) -> bool:
    return parent == "/" or path == parent or path.startswith(parent + "/")


def _rest(path: str, parent: str) -> str:
    return "" if path == parent else path[len(parent.rstrip("/")):]


def _join(base: str, rest: str) -> str:
    return (base.rstrip("/") + rest) or "/"


def _unescape(text: str) -> str:
    return _ESCAPE.sub(lambda m: chr(int(m.group(1), 8)), text)
