"""What the plugin scan needs before any manifest is parsed (kept apart from manifest.py, whose
pydantic models are only built when a plugin folder has a tool.toml: start-up stays lean)."""

from __future__ import annotations

import os
from pathlib import Path

from acpd.ownership import ownership_problem

MANIFEST = "tool.toml"
WORKSPACE = "{workspace}"
"""A mount host starting with this is the session's working directory."""


class ManifestError(Exception):
    """A manifest that cannot be used; the message names the file and the problem."""


def check_owned(path: Path, st: os.stat_result, kind: str) -> None:
    """The overlay checks (acpd/ownership.py). Raises ManifestError."""
    problem = ownership_problem(path, st, kind)
    if problem is not None:
        raise ManifestError(problem)


