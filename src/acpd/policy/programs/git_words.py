"""git: what its words mean, lexically (no file system): option sets of the diff family,
REV:path and :path words, revisions that name a commit by their syntax, pathspec coverage.
Used by `git_history`."""

from __future__ import annotations

import re
from typing import Final

from acpd.policy.programs.git_index import MAGIC

PATCH: Final = frozenset({
    "-p", "-u", "--patch", "-U", "--unified", "--patch-with-raw", "--patch-with-stat",
    "--word-diff", "--word-diff-regex", "--color-words", "--cc", "-c", "--combined-all-paths",
    "-m", "--diff-merges", "--remerge-diff", "--dd", "-G", "-S", "--find-object",
    "--pickaxe-all", "--pickaxe-regex", "--check", "-W", "--function-context",
    "--inter-hunk-context", "--textconv", "--ext-diff", "-L", "--binary", "--full-diff",
    "--output"})
"""Options that print file contents (a patch, checked lines) or test them (-G, -S)."""
NO_CONTENT: Final = frozenset({
    "--stat", "--numstat", "--shortstat", "--name-only", "--name-status", "--raw", "--summary",
    "--dirstat", "--dirstat-by-file", "--compact-summary", "-s", "--no-patch", "--quiet", "-X"})
"""Output formats that replace the patch with names and counts."""
LOG_LIKE: Final = frozenset({"log", "whatchanged", "shortlog", "reflog"})
QUIET_SUBS: Final = frozenset({
    "status", "rev-parse", "ls-files", "describe", "switch", "remote", "config", "branch",
    "tag", "for-each-ref", "checkout", "restore", "reset", "merge", "rebase", "cherry-pick",
    "revert", "pull", "fetch", "push", "clone", "init", "rm", "clean", "gc", "prune",
    "ls-tree", "ls-remote", "name-rev", "merge-base", "show-ref", "symbolic-ref",
    "update-ref", "count-objects", "var", "version", "help", "check-ignore", "check-attr",
    "check-ref-format", "rev-list", "show-branch", "cherry", "maintenance", "hash-object",
    "write-tree", "blame", "add", "commit", "stash"})
"""Subcommands that print no file content (but see `_Judge.quiet` for their exceptions).
Not here: `mv` (renames a denied file to a name no pattern names), `fsck` (--lost-found writes
blobs under .git/lost-found), `worktree`, `checkout-index`, `unpack-file` (write files out of
the object store), `notes`, `archive`, `bundle`... they ask."""
_COMMIT_FORCED: Final = re.compile(r"(?:[~^]\d*|\^\{commit\}|\^[!@-]\d*)+$")
GLOB: Final = re.compile(r"[*?\[]")
STAGE_PREFIX: Final = re.compile(r":[0-3]:")
"""`:N:path`: a path in the index at stage N."""



def short_value(sub: str, arg: str) -> bool:
    """`-m msg`-like clusters where the letter found is a value, not an option
    (`git commit -mpv` is the message "pv")."""
    if sub != "commit":
        return False
    for k, c in enumerate(arg[1:], 1):
        if c in "mFCctS":
            return all(x not in "pv" for x in arg[1:k])
    return False


def dashdash_index(after: int | None, pos: list[str]) -> int:
    """Index in `pos` of the first positional after `--` (len(pos) when there is none);
    `after`: how many words follow the separator (see `git_history._separator`)."""
    return len(pos) if after is None else max(0, len(pos) - after)


def object_colon(word: str) -> int:
    """Position of the `:` of REV:path or :path (outside `@{...}`), or -1."""
    if word.startswith(("-", ":/", ":(", ":!", ":^")) or "://" in word:
        return -1
    depth = 0
    for k, ch in enumerate(word):
        if ch == "{":
            depth += 1
        elif ch == "}":
            depth = max(0, depth - 1)
        elif ch == ":" and depth == 0:
            return k
    return -1


def object_path(word: str) -> str:
    if STAGE_PREFIX.match(word):
        return word[3:]
    return word[object_colon(word) + 1 :]


def commit_by_syntax(rev: str) -> bool:
    """A revision that names a commit whatever refs hold: HEAD, @, a range, X~n, X^, X^{commit},
    a reflog entry of HEAD."""
    if rev in ("HEAD", "@") or rev.startswith(("HEAD@{", "@{", "^", ":/")):
        return True
    if ".." in rev:
        return True
    return bool(_COMMIT_FORCED.search(rev)) and not rev.endswith("^{}")


def spec_covers(spec: str, path: str, sparse: bool) -> bool:
    """Does the pathspec `spec` (absolute, or MAGIC) reach the tracked `path`? Compared
    without case (`--icase-pathspecs`, core.ignoreCase)."""
    if spec == MAGIC:
        return True
    spec, path = spec.lower(), path.lower()
    if sparse and (spec == path or spec.startswith(path + "/")):
        return True
    return path == spec or path.startswith(spec.rstrip("/") + "/")
