"""Resolving a path a model sent into a path inside the session's roots.

Lexical checks alone are not enough (a symlink inside the workspace can point anywhere), so
the path is resolved through the file system and the result must stay under a root.
"""

from __future__ import annotations

import os


class OutsideSandbox(Exception):
    pass


def resolve_in_roots(path: str, cwd: str, roots: tuple[str, ...]) -> str:
    """Return the real absolute path of `path` (relative to `cwd`) if it lies under a root.

    Raises OutsideSandbox (with the reason) when it does not, or when the path is malformed.
    Paths that do not exist yet resolve through their deepest existing ancestor.
    """
    if not path or "\x00" in path:
        raise OutsideSandbox("empty path or NUL byte in path")
    joined = os.path.join(cwd, os.path.expanduser(path)) if not path.startswith("/") else path
    real = os.path.realpath(joined)
    for root in roots:
        real_root = os.path.realpath(root)
        if real == real_root or real.startswith(real_root.rstrip("/") + "/"):
            return real
    raise OutsideSandbox(f"{path} resolves outside the workspace ({', '.join(roots)})")
