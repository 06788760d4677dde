"""What the plugin scan needs before any manifest is parsed (kept apart from manifest.py, whose
pydantic models are only built when a plugin folder has a tool.toml: start-up stays lean)."""

from __future__ import annotations

import os
import stat
from pathlib import Path

MANIFEST = "tool.toml"
WORKSPACE = "{workspace}"
"""A mount host starting with this is the session's working directory."""


class ManifestError(Exception):
    """A manifest that cannot be used; the message names the file and the problem."""


def check_owned(path: Path, st: os.stat_result, kind: str) -> None:
    """The overlay checks: a real file or directory, yours or root's, not group/other
    writable. Raises ManifestError."""
    if stat.S_ISLNK(st.st_mode):
        raise ManifestError(f"{path}: is a symlink; plugin {kind}s must be real")
    is_kind = stat.S_ISDIR(st.st_mode) if kind == "directory" else stat.S_ISREG(st.st_mode)
    if not is_kind:
        raise ManifestError(f"{path}: not a {kind}")
    if st.st_uid not in (os.getuid(), 0):
        raise ManifestError(f"{path}: owned by uid {st.st_uid}, not by you or root")
    if st.st_mode & 0o022:
        raise ManifestError(f"{path}: writable by group or others (mode "
                            f"{st.st_mode & 0o777:o})")


