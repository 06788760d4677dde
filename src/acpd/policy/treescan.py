"""Bounded looks at the file system for one decision, never cached across decisions.

- `denied_in_tree`: does a directory a command reads recursively (`grep -r`, `rg`, `diff -r`,
  `tar -c`, `cp -r`) hold a file `deny_read` names? The walk stops after `limit` entries: a
  tree too big to check is reported as such (the caller asks).
- `tree_facts`: how many entries a deletion removes (up to a limit) and whether a `.git` is
  among them.
- `foreign_repository`: is a directory inside a git repository other than the workspace's own
  (a `.git` between it and the workspace root)?

The deny scan follows symbolic links into directories (grep -R, rg -L, tar -h do; the bound
stops a cycle) and checks a link's own target against `deny_read`; the deletion count does
not follow them (rm -r does not either).
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable
from typing import Final, NamedTuple

from acpd.pathglob import glob_regex
from acpd.policy import globmatch, pathtext
from acpd.policy.gitdirs import is_git_directory
from acpd.policy.sandbox import PathRules, inside, matches
from acpd.readcap import read_upto

MAX_GITIGNORE: Final = 64 * 1024
Ignored = Callable[[str, bool], bool]

SCAN_LIMIT: Final = 4000


class TreeFacts:
    """What a bounded walk of a tree found. (A plain slotted class: a compiled NamedTuple
    builds itself in interpreted code.)"""

    __slots__ = ("denied", "entries", "git", "over")

    def __init__(self, entries: int, over: bool, git: str | None, denied: str | None) -> None:
        self.entries = entries
        """Entries counted (stops at the limit)."""
        self.over = over
        """The limit was reached."""
        self.git = git
        """A `.git` found among the entries (or the start itself)."""
        self.denied = denied
        """An entry `deny_read` names: (path)."""


def _walk(start: str, limit: int, hidden: bool, rules: PathRules | None,
          skip_git: bool, ignored: Ignored | None = None,
          links_only: bool = False, unhidden: frozenset[str] = frozenset()) -> TreeFacts:
    """`unhidden`: when hidden entries are skipped, the name patterns that are not (what
    `!` lines of ignore files re-include); raises _Reincluded for an ignore file met in the
    walk that re-includes more."""
    count = 0
    git: str | None = None
    denied: str | None = None
    stack = [start]
    while stack:
        top = stack.pop()
        try:
            with os.scandir(top) as it:
                for entry in it:
                    count += 1
                    if count > limit:
                        return TreeFacts(count, True, git, denied)
                    name = entry.name
                    if name == ".git":
                        git = git or entry.path
                        if skip_git:
                            continue
                    if not hidden and name.startswith("."):
                        if name in IGNORE_FILES:
                            more = _whitelists(entry.path)
                            if more is None or not more <= unhidden:
                                raise _Reincluded(more)
                        if not any(globmatch.fnmatchcase(name, p) for p in unhidden):
                            continue
                    if ignored is not None and ignored(entry.path, _is_dir(entry, True)):
                        continue
                    if rules is not None and denied is None:
                        denied = _hard_linked(entry, rules) if links_only else \
                            _denied(entry, rules)
                        if denied is not None and skip_git:
                            return TreeFacts(count, False, git, denied)
                    # the deny scan follows links into directories (grep -R, rg -L and
                    # tar -h do; a link's target may hold denied files); counts do not
                    if _is_dir(entry, rules is not None):
                        stack.append(entry.path)
        except OSError:
            continue
    return TreeFacts(count, False, git, denied)


def _is_dir(entry: os.DirEntry[str], follow: bool) -> bool:
    """False when it cannot be told: an error on one entry (a link into a directory we may
    not search) must not end the scan of the rest of its directory, which may hold a denied
    file."""
    try:
        return entry.is_dir(follow_symlinks=follow)
    except OSError:
        return False


def _denied(entry: os.DirEntry[str], rules: PathRules) -> str | None:
    path = entry.path
    forms = [path]
    try:
        if entry.is_symlink():  # a link to a denied file, or into a denied directory
            real = os.path.realpath(path)
            forms += [real, real + "/x"]
    except OSError:
        pass
    for form in forms:
        if rules.read_filter.may_match(form, rules.roots) and matches(
                form, rules.deny_read, rules.roots):
            return path if form == path else f"{path} (a link to {form.removesuffix('/x')})"
    return _hard_linked(entry, rules)


def _hard_linked(entry: os.DirEntry[str], rules: PathRules) -> str | None:
    """A regular file with other names that are denied or unseen (`hardlinks`): one stat
    per regular file of the tree, only when the policy has a deny_read list."""
    if not rules.deny_read:
        return None
    try:
        if not entry.is_file(follow_symlinks=False) or \
                entry.stat(follow_symlinks=False).st_nlink < 2:
            return None
    except OSError:
        return None
    from acpd.policy.hardlinks import hardlink_finding

    found = hardlink_finding(entry.path, "read", rules)
    return None if found is None else f"{entry.path} ({found[2]})"


def denied_in_tree(path: str, rules: PathRules, *, hidden: bool = True,
                   gitignore: bool = False, names: Ignored | None = None,
                   limit: int = SCAN_LIMIT, links_only: bool = False) -> TreeFacts | None:
    """Facts about the tree at `path` (absolute) if it is a directory, else None.
    `gitignore`: the tool skips what the workspace root's `.gitignore` ignores (rg, git add).
    `links_only`: only hard links count (under the sandbox, which masks denied names but not
    their other names)."""
    if not pathtext.isdir(path):  # a link to a directory is scanned (grep -r follows it)
        return None
    unhidden: frozenset[str] | None = frozenset()
    if gitignore or not hidden:
        unhidden = reincluded(path)
        if unhidden is None:
            hidden, gitignore = True, False
    ignored = gitignore_matcher(path, rules.roots) if gitignore else None
    if ignored is not None and unhidden:  # a `!` line may re-include what .gitignore ignores
        ignored = _unless_named(ignored, path, unhidden)
    if names is not None:
        ignored = _both(ignored, names) if ignored is not None else names
    for _ in range(MAX_RESCANS):
        try:
            return _walk(path, limit, hidden, rules, skip_git=True, ignored=ignored,
                         links_only=links_only, unhidden=unhidden or frozenset())
        except _Reincluded as more:  # a nested ignore file re-includes more hidden names
            unhidden = None if more.names is None or unhidden is None else \
                unhidden | more.names
            hidden = hidden or unhidden is None
    return _walk(path, limit, True, rules, skip_git=True, ignored=ignored,
                 links_only=links_only)


MAX_RESCANS: Final = 4


def _unless_named(ignored: Ignored, top: str, names: frozenset[str]) -> Ignored:
    """`ignored`, except for an entry that a name pattern matches, or that lies under one."""
    base = top.rstrip("/") + "/"

    def skipped(path: str, is_dir: bool) -> bool:
        if not ignored(path, is_dir):
            return False
        rel = path[len(base):] if path.startswith(base) else path
        return not any(globmatch.fnmatchcase(part, name)
                       for part in rel.split("/") for name in names)

    return skipped


class _Reincluded(Exception):
    """A walk that skips hidden entries met an ignore file that re-includes more of them."""

    def __init__(self, names: frozenset[str] | None) -> None:
        super().__init__()
        self.names = names


def reincluded(path: str) -> frozenset[str] | None:
    """The name patterns that `!` lines of the ignore files rg obeys for a walk of `path`
    re-include (rg searches a hidden file, or one .gitignore ignores, that such a line
    names); None: any name may be. Read now: `.ignore`, `.rgignore` and `.gitignore` in
    `path` and every directory above it (rg reads parents' ignore files), the repository's
    `info/exclude` and the user's global excludes files."""
    home = os.path.expanduser("~")
    xdg = os.environ.get("XDG_CONFIG_HOME") or pathtext.join(home, ".config")
    files = [pathtext.join(xdg, "git", "ignore"), *_excludes_files(home)]
    cur = path
    while True:
        files += [pathtext.join(cur, n) for n in IGNORE_FILES]
        git = pathtext.join(cur, ".git")
        if pathtext.isdir(git):
            files.append(pathtext.join(git, "info", "exclude"))
        parent = pathtext.dirname(cur)
        if parent == cur:
            break
        cur = parent
    names: frozenset[str] = frozenset()
    for file in files:
        found = _whitelists(file)
        if found is None:
            return None
        names |= found
    return names


def _excludes_files(home: str) -> list[str]:
    """core.excludesFile of the user's git config (as written: `~/` expanded)."""
    from acpd.policy.githooks import config_entries

    try:
        with open(pathtext.join(home, ".gitconfig"), "rb") as fh:
            text = read_upto(fh, MAX_GITIGNORE).decode("utf-8", "replace")
    except OSError:
        return []
    found = []
    for section, _key, value in config_entries(text, frozenset({"excludesfile"})):
        if section == "core":
            found.append(pathtext.join(home, value[2:]) if value.startswith("~/") else value)
    return found


def _whitelists(path: str) -> frozenset[str] | None:
    """The components of the `!` patterns of the ignore file at `path` (none when it is
    missing); None when it cannot be read whole, or a pattern is not a plain glob (an
    escape)."""
    try:
        with open(path, "rb") as fh:
            data = read_upto(fh, MAX_GITIGNORE)
    except (FileNotFoundError, NotADirectoryError):
        return frozenset()
    except OSError:
        return None
    if len(data) > MAX_GITIGNORE:
        return None
    names = set()
    for raw in data.decode("utf-8", "replace").split("\n"):
        line = raw.strip()
        if not line.startswith("!"):
            continue
        parts = [part for part in line[1:].split("/") if part and part != "**"]
        if not parts or any("\\" in part for part in parts):
            return None
        names.update(parts)  # a hidden directory on the way is entered too
    return frozenset(names)


def _both(first: Ignored, second: Ignored) -> Ignored:
    return lambda path, is_dir: first(path, is_dir) or second(path, is_dir)


RG_ORDERED: Final = "\x00rg"
"""First item of an include list that is rg's `-g` globs in command-line order."""


def name_filter(include: tuple[str, ...], exclude: tuple[str, ...],
                exclude_dirs: tuple[str, ...]) -> Ignored | None:
    """Skip what a search's include/exclude globs (matched on base names) leave unread.
    `include` = (RG_ORDERED, GLOB...): rg's overrides, the last matching glob deciding (`!`:
    skipped), a file no glob matches skipped when some glob is not negated."""
    if include[:1] == (RG_ORDERED,):
        return _rg_overrides(include[1:])
    if not (include or exclude or exclude_dirs):
        return None

    def skipped(path: str, is_dir: bool) -> bool:
        name = path.rpartition("/")[2]
        if is_dir:
            return any(globmatch.fnmatchcase(name, g) for g in exclude_dirs)
        if include and not any(globmatch.fnmatchcase(name, g) for g in include):
            return True
        return any(globmatch.fnmatchcase(name, g) for g in exclude)

    return skipped


def _rg_overrides(globs: tuple[str, ...]) -> Ignored:
    rules = [(g.startswith("!"), g[1:] if g.startswith("!") else g) for g in reversed(globs)]
    whitelist = any(not negated for negated, _ in rules)

    def skipped(path: str, is_dir: bool) -> bool:
        name = path.rpartition("/")[2]
        for negated, glob in rules:
            if globmatch.fnmatchcase(name, glob):
                return negated
        return whitelist and not is_dir

    return skipped


IGNORE_FILES: Final = (".gitignore", ".ignore", ".rgignore")
"""Files that can re-include (`!`) what the root's `.gitignore` ignores, for git or rg."""


def gitignore_matcher(path: str, roots: tuple[str, ...]) -> Ignored | None:
    """What the `.gitignore` at the root holding `path` ignores, read now (bounded). Only ever
    used to skip entries, so whatever could make the tool read what we would skip gives None
    (nothing is skipped) or skips less:
    - the root is not inside a git repository (rg honours .gitignore only there, and git add
      needs one);
    - a `.ignore` or `.rgignore` at the root (rg: above .gitignore, may re-include);
    - a line we cannot read exactly as git and rg do (`docs/policy.md`): a negation `!`, any
      backslash, a `[` class holding `[` (POSIX classes), `**` not a whole component, a CR
      (git keeps it in the pattern, rg strips it), bytes that are not UTF-8; an unreadable or
      oversized file.
    Leading blanks are part of a pattern; trailing spaces (only spaces) are trimmed, as git
    does. Under a directory that holds an ignore file of its own (nested `.gitignore`,
    `.ignore`, `.rgignore`: it may re-include) nothing is skipped."""
    root = inside(path, roots)
    if root is None or not _in_repository(root):
        return None
    if any(pathtext.lexists(pathtext.join(root, n)) for n in IGNORE_FILES[1:]):
        return None
    try:
        with open(pathtext.join(root, ".gitignore"), "rb") as fh:
            data = read_upto(fh, MAX_GITIGNORE)
    except OSError:
        return None
    if len(data) > MAX_GITIGNORE or b"\r" in data:
        return None
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        return None
    groups: tuple[list[str], list[str], list[str], list[str]] = ([], [], [], [])
    for raw in text.split("\n"):
        if not _gitignore_line(raw.rstrip(" "), groups):
            return None
    try:
        return _gitignore_check(root.rstrip("/") + "/", *map(_union, groups))
    except re.error:  # a class Python reads otherwise (`[!]`)
        return None


def _gitignore_line(line: str, groups: tuple[list[str], ...]) -> bool:
    """File one pattern into (anywhere, anchored, dir_any, dir_anchored); False when the line
    cannot be read exactly."""
    if not line or line.startswith("#"):
        return True
    if line.startswith("!") or "\\" in line or not _plain_classes(line):
        return False
    dir_only = line.endswith("/")
    body = line.rstrip("/")
    if not body:
        return True
    if "**" in body and not all(part == "**" or "**" not in part for part in body.split("/")):
        return False  # `a**b` is `a*b` to git; glob_regex would cross directories
    anchored = "/" in body
    groups[(2 if dir_only else 0) + anchored].append(
        glob_regex(body.lstrip("/") if anchored else body))
    return True


def _plain_classes(line: str) -> bool:
    """Every `[` opens a class that closes before any other `[` (no `[[:alpha:]]`)."""
    i = line.find("[")
    while i >= 0:
        close = line.find("]", i + 2)
        if close < 0:
            return False  # git's wildmatch never matches an unclosed class
        if "[" in line[i + 1:close]:
            return False
        i = line.find("[", close + 1)
    return True


def _in_repository(root: str) -> bool:
    """A `.git` (directory or file) at `root` or above it."""
    cur = root
    while True:
        if pathtext.lexists(pathtext.join(cur, ".git")):
            return True
        parent = pathtext.dirname(cur)
        if parent == cur:
            return False
        cur = parent


def _gitignore_check(base: str, any_re: re.Pattern[str] | None, anch_re: re.Pattern[str] | None,
                     dany_re: re.Pattern[str] | None, danch_re: re.Pattern[str] | None
                     ) -> Ignored:
    own: dict[str, bool] = {}

    def has_own(directory: str) -> bool:
        known = own.get(directory)
        if known is None:
            known = own[directory] = any(
                pathtext.lexists(pathtext.join(directory, n)) for n in IGNORE_FILES)
        return known

    def ignored(entry: str, is_dir: bool) -> bool:
        if not entry.startswith(base):
            return False
        rel = entry[len(base):]
        parent, _, name = rel.rpartition("/")
        if parent:
            parts = parent.split("/")
            if any(has_own(base + "/".join(parts[:i])) for i in range(1, len(parts) + 1)):
                return False
        if any_re is not None and any_re.fullmatch(name):
            return True
        if anch_re is not None and anch_re.fullmatch(rel):
            return True
        if is_dir:
            if dany_re is not None and dany_re.fullmatch(name):
                return True
            if danch_re is not None and danch_re.fullmatch(rel):
                return True
        return False

    return ignored


def _union(parts: list[str]) -> re.Pattern[str] | None:
    return re.compile("|".join(f"(?:{p})" for p in parts), re.DOTALL) if parts else None


class TreeNames(NamedTuple):
    paths: list[str]
    """Every entry below the directory, relative ("a", "a/b"), in no order."""
    over: bool
    """More than the limit: `paths` holds only some."""
    links: frozenset[str] = frozenset()
    """Those of `paths` that are symbolic links (a copy lands each as a link, or with -L
    as what it points to)."""


def tree_names(path: str, limit: int) -> TreeNames | None:
    """The entries under `path` if it is a directory (links to directories are listed, not
    entered below it), up to `limit`; None when it is not a directory."""
    if not pathtext.isdir(path):
        return None
    found: list[str] = []
    links: set[str] = set()
    stack = [("", path)]
    while stack:
        rel, top = stack.pop()
        try:
            with os.scandir(top) as it:
                for entry in it:
                    if len(found) >= limit:
                        return TreeNames(found, True, frozenset(links))
                    name = f"{rel}{entry.name}"
                    found.append(name)
                    if entry.is_symlink():
                        links.add(name)
                    elif _is_dir(entry, False):
                        stack.append((name + "/", entry.path))
        except OSError:
            continue
    return TreeNames(found, False, frozenset(links))


def tree_facts(path: str, limit: int) -> TreeFacts | None:
    """Entries under `path` (a directory, not followed if a link) and any `.git` among them."""
    if pathtext.islink(path) or not pathtext.isdir(path):
        return None
    return _walk(path, limit, True, None, skip_git=True)


def foreign_repository(path: str, roots: tuple[str, ...]) -> str | None:
    """The repository git would find between `path` and its workspace root (exclusive), if
    any; `path` outside every root is reported as itself. Git's discovery takes, at each
    directory upward, a `.git` entry, else the directory itself when it is shaped like a
    git directory (a bare repository: HEAD, objects/, refs/), so both count."""
    root = inside(path, roots)
    if root is None:
        return path
    cur = path
    while cur != root and len(cur) > len(root):
        marker = pathtext.join(cur, ".git")
        if pathtext.lexists(marker):
            return marker
        if is_git_directory(cur):
            return cur
        cur = pathtext.dirname(cur)
    return None
