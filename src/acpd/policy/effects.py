"""What a modelled command does to the file system, judged beyond single paths.

- Deleting the home directory, `/`, or an ancestor of a workspace root is deny wherever HOME
  is (under a write root like /tmp too), by any spelling that resolves there or a glob that
  could name it.
- A deletion that removes `.git` content or more than `max_delete_files` entries asks, even
  where a rule or the mode would allow it (a bounded count per decision).
- A recursive read of a tree holding `deny_read` files asks unless the command is sandboxed
  (the sandbox masks them); a tree too big to check asks too.
- A recursive copy of a tree holding a `.git` creates a repository: ask.
- git run in (or `-C` to) a directory of another repository asks.

Every check looks at the file system afresh, within a bound; nothing is cached.
"""

from __future__ import annotations

from collections.abc import Iterable
from functools import lru_cache
from typing import Final

from acpd.policy import globmatch, pathtext
from acpd.policy.decision import Verdict
from acpd.policy.sandbox import PathRules, _normpath, entry_real, inside, resolve
from acpd.policy.treescan import Ignored, denied_in_tree, foreign_repository, tree_facts

Finding = tuple[Verdict, str, str]
_GLOB_CHARS: Final = ("*", "?", "[")


def absolute(raw: str, cwd: str) -> str:
    """`pathtext.normpath(pathtext.join(cwd, raw))` (cwd absolute), without the work for a
    path that is already normal."""
    path = raw if raw.startswith("/") else (cwd + raw if cwd.endswith("/") else
                                             f"{cwd}/{raw}")
    return _normpath(path) if path.startswith("/") else pathtext.normpath(path)


def _scan_root(raw: str, cwd: str) -> str:
    """The directory to scan for a tree word: a glob (`c*`, `src/*/x`) is replaced by the
    deepest directory above its first glob component, which holds everything it can name."""
    path = absolute(raw, cwd)
    if not any(c in path for c in _GLOB_CHARS):
        return path
    parts = path.split("/")
    for k, part in enumerate(parts):
        if any(c in part for c in _GLOB_CHARS):
            return "/".join(parts[:k]) or "/"
    return path


@lru_cache(maxsize=64)
def protected_paths(home: str, roots: tuple[str, ...]) -> frozenset[str]:
    """`/`, HOME and its ancestors, and every ancestor of a workspace root (pure: strings
    only, so memoised)."""
    out = {"/"}
    home = pathtext.normpath(home)
    out.add(home)
    for start in (home, *roots):
        cur = start
        while cur.startswith("/") and (cut := cur.rfind("/")) > 0:
            cur = cur[:cut]  # the parent of a normal absolute path
            out.add(cur)
    return frozenset(out)


def deletion_findings(deletes: Iterable[tuple[str, bool]], cwds: list[str], home: str,
                      roots: tuple[str, ...], max_files: int, *,
                      count: bool = True) -> list[Finding]:
    """Deny for HOME, `/` and ancestors of the workspace; with `count`, ask for `.git`
    content and for more than `max_files` entries."""
    found: list[Finding] = []
    protected: frozenset[str] | None = None
    removed = dict.fromkeys(cwds, 0)
    """Entries the command removes, summed over its operands (`rm many/*` names 60 files
    one by one), per cwd the line may run in."""
    for raw, recursive in deletes:
        for cwd in cwds:
            path = absolute(raw, cwd)
            if protected is None:
                protected = protected_paths(home, roots)
            hit = _protected_hit(path, protected, raw)
            if hit is not None:
                found.append(("deny", "destroy.home-or-ancestor",
                              f"deleting {raw} removes {hit} (HOME, / or an ancestor of the "
                              "workspace)"))
                continue
            if not count:
                continue
            if ".git" in path.split("/"):
                found.append(("ask", "destroy.git", f"deleting {raw} removes .git content"))
                continue
            removed[cwd] += 1
            if not recursive or (pathtext.islink(path) and entry_real(path, raw) == path):
                continue  # a link is removed, not the tree it points to
            facts = tree_facts(_scan_root(raw, cwd), max(max_files - removed[cwd], 0) + 1)
            if facts is None:
                continue
            removed[cwd] += facts.entries
            if facts.git is not None:
                found.append(("ask", "destroy.git", f"deleting {raw} removes {facts.git}"))
            elif facts.over and removed[cwd] > max_files:
                found.append(("ask", "destroy.many", f"deleting {raw} removes more than "
                              f"{max_files} files"))
    if count and any(n > max_files for n in removed.values()) and not any(
            rule == "destroy.many" for _, rule, _ in found):
        found.append(("ask", "destroy.many", f"the command removes more than {max_files} "
                      "files in all"))
    return found


def _protected_hit(path: str, protected: frozenset[str], raw: str) -> str | None:
    """`/`, HOME or an ancestor that deleting `path` removes: the entry (a link to HOME is
    removed itself), or what it points to when written `lnk/`."""
    forms = {path, entry_real(path, raw)} if "\x00" not in path else {path}
    for form in forms:
        if form in protected:
            return form
    if any(c in path for c in _GLOB_CHARS):
        for prot in protected:
            if globmatch.fnmatchcase(prot, path) or globmatch.fnmatchcase(prot + "/", path):
                return prot
    return None


def move_out_findings(sources: Iterable[str], dest: str, cwds: list[str],
                      roots: tuple[str, ...], *, dest_entry: bool = False) -> list[Finding]:
    """mv from the workspace to outside it removes the sources from the workspace (and from
    what a workspace checkpoint can restore): ask. A destination link is replaced, unless it
    points to a directory (then the sources move into it); `dest_entry` (-T): replaced."""
    found: list[Finding] = []
    for cwd in cwds:
        target = absolute(dest, cwd)
        real = entry_real(target, dest, dest=not dest_entry)
        if inside(target, roots) and inside(real, roots):
            continue
        for raw in sources:
            if inside(absolute(raw, cwd), roots):
                found.append(("ask", "destroy.move-out",
                              f"mv takes {raw} out of the workspace"))
    return found


def tree_findings(trees: Iterable[str], cwds: list[str], rules: PathRules,
                  hidden: bool, gitignore: bool = False,
                  names: Ignored | None = None, links_only: bool = False) -> list[Finding]:
    found: list[Finding] = []
    for raw in trees:
        # ":/" is git's whole work tree: every workspace root
        starts = rules.roots if raw == ":/" else tuple(_scan_root(raw, cwd) for cwd in cwds)
        for start in starts:
            facts = denied_in_tree(start, rules, hidden=hidden, gitignore=gitignore,
                                   links_only=links_only,
                                   names=names)
            if facts is None:
                continue
            if facts.denied is not None:
                found.append(("ask", "path.deny-read-tree",
                              f"{raw} holds {facts.denied}, which deny_read names"))
            elif facts.over:
                found.append(("ask", "path.tree-too-big",
                              f"{raw} is too big to check for deny_read files"))
    return found


def copy_findings(copies: Iterable[str], cwds: list[str], limit: int) -> list[Finding]:
    found: list[Finding] = []
    for raw in copies:
        for cwd in cwds:
            path = _scan_root(raw, cwd)
            if pathtext.basename(path) == ".git":
                found.append(("ask", "git.create-repository", f"copying {raw} copies a "
                              "git directory"))
                continue
            facts = tree_facts(path, limit)
            if facts is not None and facts.git is not None:
                found.append(("ask", "git.create-repository",
                              f"copying {raw} copies {facts.git} (a repository)"))
    return found


def git_repository_findings(dirs: list[str], cwds: list[str],
                            roots: tuple[str, ...]) -> list[Finding]:
    found: list[Finding] = []
    places = [absolute(d, cwd) for d in dirs for cwd in cwds] if dirs else cwds
    for place in places:
        for form in {place, resolve(place)}:
            other = foreign_repository(form, roots)
            if other is not None:
                found.append(("ask", "git.other-repository",
                              f"git runs in {place}, whose repository ({other}) is not the "
                              "workspace's own"))
                break
    return found
