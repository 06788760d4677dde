"""`additionalDirectories`: the extra workspace roots an editor asks for, checked.

An accepted root becomes one more entry of `Session.roots`, the tuple every part of acpd
already takes as "the workspace": the shell policy judges paths against it (`roots=`), the
file tools open files beneath it (tools/fs: openat2 RESOLVE_BENEATH per root), the kernel
sandbox binds it writable and masks its deny_read matches, the local runner refuses a cwd
outside it. So an extra root gets exactly the cwd's sandbox and policy, nothing more.

A root is refused, with an error naming it and the reason (never dropped quietly, never
widened), when it is: not a string, empty, relative, holding a NUL; not an existing
directory (after symlinks); `/`, `//` or `/tmp`; the home directory or one of its
ancestors; an ancestor of the cwd (that would widen the cwd itself); a system tree (/proc,
/sys, /dev, /boot, /etc, /usr, /bin, /sbin, /lib*, /var, /run, /snap); inside a `.git`
directory (the policy's .git rules are relative to each root); acpd's own config, plugin or
data directory, or one of their ancestors or descendants (the agent must not edit the rules
that bind it); matched, with any of its ancestors, by a deny_read pattern of the shell
policy or the file tools (~/.ssh, ~/.aws...). More than MAX_ROOTS are refused too.

Kept as given after these checks, in the real (symlink-free) form, in order, duplicates
and roots inside the cwd (already covered) left out. The list is stored with the session so
`session/list` can report it; on load and resume the request's list replaces it (ACP: an
omitted list activates no extra root).
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Sequence
from typing import Any

from acpd.protocol.errors import invalid_params
from acpd.sandbox.rules import compile_matcher

MAX_ROOTS = 32
SYSTEM_TREES = (
    "/proc", "/sys", "/dev", "/boot", "/etc", "/usr", "/bin", "/sbin", "/lib", "/lib32",
    "/lib64", "/libx32", "/var", "/run", "/snap",
)


def check_roots(
    requested: Any, cwd: str, *, deny_read: Iterable[str] = (),
    protected: Sequence[str] = (), home: str | None = None,
) -> tuple[str, ...]:
    """The accepted extra roots (real paths). Raises RpcError (-32602) naming the first bad
    one. `protected`: acpd's config and data directories."""
    if requested is None:
        return ()
    if not isinstance(requested, list):
        raise invalid_params("additionalDirectories must be a list of absolute paths")
    if len(requested) > MAX_ROOTS:
        raise invalid_params(f"additionalDirectories: at most {MAX_ROOTS} directories")
    home_real = os.path.realpath(home or os.path.expanduser("~"))
    cwd_real = os.path.realpath(cwd)
    matcher = compile_matcher(tuple(deny_read), home_real)
    guarded = [os.path.realpath(p) for p in protected]
    accepted: list[str] = []
    for raw in requested:
        real = _checked(raw, cwd_real, home_real, guarded, matcher)
        if real == cwd_real or _inside(real, cwd_real) or real in accepted:
            continue
        accepted.append(real)
    return tuple(accepted)


def _checked(raw: Any, cwd: str, home: str, guarded: list[str], matcher: Any) -> str:
    if not isinstance(raw, str) or not raw.strip() or "\0" in raw:
        raise invalid_params("additionalDirectories: each entry must be a non-empty path")
    shown = raw[:300]
    if not os.path.isabs(raw):
        raise invalid_params(f"additionalDirectories: {shown!r} is not an absolute path")
    real = os.path.realpath(raw)
    if not os.path.isdir(real):
        raise invalid_params(f"additionalDirectories: {shown!r} is not an existing directory")
    reason = _too_broad(real, cwd, home, guarded) or _denied(real, matcher)
    if reason:
        named = shown if real == raw else f"{shown} (that is {real[:300]})"
        raise invalid_params(f"additionalDirectories: refused {named}: {reason}")
    return real


def _too_broad(real: str, cwd: str, home: str, guarded: list[str]) -> str | None:
    if not real.strip("/"):  # "/" and "//" (POSIX keeps two leading slashes)
        return "the whole file system cannot be a workspace root"
    if real == "/tmp":
        return "/tmp is shared by every user and program (name a directory inside it)"
    if real == home or _inside(home, real):
        return "it is your home directory or contains it"
    if _inside(cwd, real):
        return "it contains the session's cwd (that would widen the cwd itself)"
    if ".git" in real.split("/"):
        # The policy's .git rules are relative to each root: a root inside .git would
        # make its hooks and config ordinary files of the workspace.
        return "it is inside a .git directory"
    for tree in SYSTEM_TREES:
        if real == tree or _inside(real, tree):
            return f"{tree} is a system directory"
    for place in guarded:
        if real == place or _inside(real, place) or _inside(place, real):
            return "it holds acpd's own configuration or data"
    return None


def _denied(real: str, matcher: Any) -> str | None:
    path = real
    while path != "/":
        if matcher.match(path, None) or matcher.covers_subtree(path, None):
            return f"{path} is matched by a deny_read pattern"
        path = os.path.dirname(path)
    return None


def _inside(path: str, root: str) -> bool:
    """`path` strictly below `root` (both real, normalised)."""
    return path != root and path.startswith(root.rstrip("/") + "/")
