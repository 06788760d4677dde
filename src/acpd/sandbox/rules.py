"""The part of the shell policy the kernel sandbox enforces, and its path patterns.

`PathRules` is what a runner needs from the policy: `deny_read`, `deny_write`, `write_roots` and
`allow_network`, copied out of the policy object (duck-typed: this package imports nothing from
the policy or the daemon, so the launcher stays light). Patterns follow the policy's glob syntax
(policy/sandbox.py): `**` crosses directories, `*` and `?` do not, `[...]` is a class, matching
is case-insensitive; `~/` is HOME; a pattern starting with `/` is absolute, one starting with
`**/` matches anywhere, any other is relative to each workspace root.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from acpd.pathglob import glob_regex

GIT_WHOLE = frozenset({".git", ".git/**", "**/.git", "**/.git/**"})
"""deny_write patterns naming a whole git directory. The policy uses them against tools
writing into `.git` (`cp x .git/`), never against git itself, whose commits must write objects,
refs and the index. In the sandbox every process is confined alike, so these are left to the
git-directory rules (walk.py `GIT_CODE` read-only, the directory pinned; with
`git_writes` False the whole directory read-only but `GIT_WRITABLE`), not bound read-only
whole."""


@dataclass(frozen=True, slots=True)
class PathRules:
    deny_read: tuple[str, ...] = ()
    deny_write: tuple[str, ...] = ()
    write_roots: tuple[str, ...] = ()
    allow_network: bool = False
    git_writes: bool = True
    """False: every git directory in the roots is read-only except `walk.GIT_WRITABLE`
    (objects, refs, logs...): a command can neither create nor change what git obeys
    (`commondir`, `config.worktree`, rebase state...), and cannot update the index or HEAD
    either. For commands allowed only because they are sandboxed (opaque code). True: the top
    of a git directory stays writable (git add/commit/switch), what exists of `GIT_CODE` is
    read-only."""

    @classmethod
    def of(cls, policy: Any) -> PathRules:
        """From a policy: a `CompiledPolicy` (has `.policy`) or its `Policy` model (has
        `.paths` and `.policy.allow_network`)."""
        model = policy.policy if hasattr(policy, "hash") else policy
        paths = model.paths
        return cls(
            tuple(paths.deny_read), tuple(p for p in paths.deny_write if p not in GIT_WHOLE),
            tuple(paths.write_roots), bool(model.policy.allow_network),
        )


_GLOB = re.compile(r"[*?\[]")


def expand_home(pattern: str, home: str) -> str:
    if pattern == "~" or pattern.startswith("~/"):
        return home.rstrip("/") + pattern[1:]
    return pattern


@dataclass(frozen=True, slots=True)
class Matcher:
    """A pattern list as four regexes, each None when it has no pattern: `names` for `**/NAME`
    patterns (matched against the last component only: the walk's hot path), `anywhere` for
    the other `**/` patterns and `absolute` for absolute ones (both against the absolute
    path), `relative` against the path relative to a workspace root."""

    names: re.Pattern[str] | None
    anywhere: re.Pattern[str] | None
    absolute: re.Pattern[str] | None
    relative: re.Pattern[str] | None

    def match(self, abs_path: str, rel_path: str | None) -> bool:
        name = abs_path.rsplit("/", 1)[-1]
        if self.names is not None and self.names.match(name):
            return True
        for regex in (self.anywhere, self.absolute):
            if regex is not None and regex.match(abs_path):
                return True
        return rel_path is not None and self.relative is not None and bool(
            self.relative.match(rel_path))

    def covers_subtree(self, abs_path: str, rel_path: str | None) -> bool:
        """True when every path under the directory matches (so the directory can be masked
        whole): a child and a grandchild with names no pattern could single out both match."""
        probe = "\x01acpd-probe"
        child = (abs_path + "/" + probe, None if rel_path is None else rel_path + "/" + probe)
        deep = (child[0] + "/" + probe, None if child[1] is None else child[1] + "/" + probe)
        return self.match(*child) and self.match(*deep)


def compile_matcher(patterns: tuple[str, ...], home: str) -> Matcher:
    groups: dict[str, list[str]] = {"names": [], "anywhere": [], "absolute": [], "relative": []}
    for raw in patterns:
        text = expand_home(raw, home)
        if text.startswith("/"):
            groups["absolute"].append("^" + glob_regex(text) + "$")
        elif text.startswith("**/"):
            body = text[3:]
            if "/" in body or "**" in body:
                groups["anywhere"].append("(?:^|.*/)" + glob_regex(body) + "$")
            else:
                groups["names"].append("^" + glob_regex(body) + "$")
        else:
            groups["relative"].append("^" + glob_regex(text.removeprefix("./")) + "$")
    flags = re.IGNORECASE | re.DOTALL

    def union(items: list[str]) -> re.Pattern[str] | None:
        return re.compile("|".join(f"(?:{p})" for p in items), flags) if items else None

    return Matcher(union(groups["names"]), union(groups["anywhere"]),
                   union(groups["absolute"]), union(groups["relative"]))


def literal_prefix(pattern: str) -> str:
    """The directory part of an absolute pattern before its first glob component."""
    parts = pattern.split("/")
    fixed: list[str] = []
    for part in parts:
        if _GLOB.search(part):
            break
        fixed.append(part)
    return "/".join(fixed) or "/"


def has_glob(text: str) -> bool:
    return _GLOB.search(text) is not None
