"""Who may have written a file acpd trusts as configuration (policy overlays, plugin folders
and manifests): a real file or directory, owned by you or root, not writable by group or
others. Anyone else who can write it could change what acpd allows."""

from __future__ import annotations

import os
import stat
from pathlib import Path


def ownership_problem(path: Path, st: os.stat_result, kind: str, want: int = 0) -> str | None:
    """What is wrong with `path` (its lstat `st`) as a trusted `kind` ("file" or "directory"),
    or None. `want`: mode bits its owner must have (e.g. 0o400 to read it)."""
    mode = st.st_mode
    if stat.S_ISLNK(mode):
        return f"{path}: is a symlink; a trusted {kind} must be real"
    if not (stat.S_ISDIR(mode) if kind == "directory" else stat.S_ISREG(mode)):
        return f"{path}: not a {kind}"
    if st.st_uid not in (os.getuid(), 0):
        return f"{path}: owned by uid {st.st_uid}, not by you or root"
    if mode & 0o022:
        return f"{path}: writable by group or others (mode {mode & 0o777:o})"
    if mode & want != want:
        return f"{path}: not readable by its owner (mode {mode & 0o777:o})"
    return None
