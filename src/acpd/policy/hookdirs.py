"""Writes into the hooks directory git runs: denied like writes into `.git/hooks`.

`core.hooksPath` may put the hooks directory in the work tree (husky's `.husky`, a
`.githooks` directory): the files there are code git runs on the user's next commit, checkout
or push, outside any sandbox (red-team A7). `.git/hooks` is protected by `deny_write`
(`**/.git/**`) because hooks are code; this module gives the effective hooks directory the same
protection, through every write the path policy judges (redirects, cp/mv/tee/sed -i targets,
archive members, the file tools: `sandbox.judge_path` calls it for every write).

Rules:
- The verdict is deny, as for `.git/hooks` (a deny_write pattern): writing code that runs
  later outside the command's own judgment and sandbox is not something one approval of
  this command can vouch for; the user can edit a hook themselves.
- The hooks directories are those `githooks.hook_dirs` finds (every `core.hooksPath` of the
  repository's, the user's and the system's configs and their includes), for the repository
  that holds the written path and for the one of each workspace root. Read afresh on each
  decision (memoised within one decision only); a config that cannot be read with certainty
  asks.
- A write at or beneath a hooks directory counts; when the hooks directory is the work tree's
  top (or above it), only a file directly in it named like a hook counts. So does a write of
  the file a hook links to (`.git/hooks/pre-commit -> ../../scripts/pre-commit`, a common
  set-up: the workspace file is what git runs). A hook's other hard-linked names are the
  hard-link check's (`hardlinks.py`).
- Only writes inside a workspace root are looked at (outside ones are judged as outside).
"""

from __future__ import annotations

import os

from acpd.policy import pathtext
from acpd.policy.decision import Verdict
from acpd.policy.githooks import HOOKS, Uncertain, hooks_and_includes
from acpd.policy.programs.git_index import Unreadable, find_repository
from acpd.policy.sandbox import current_decision, inside


def hooks_write(lexical: str, real: str, raw: str, roots: tuple[str, ...], *,
                entry: bool = False) -> tuple[Verdict, str, str] | None:
    """A finding when writing `lexical` (real path `real`) lands in a git hooks directory,
    changes a hook's link target or a file git's config includes. `entry`: the write
    removes or replaces the directory entry itself (a rename, a deletion, a link made in its
    place), so a directory above any of those counts too (`mv scripts old && mv evil
    scripts` swaps the hook `.git/hooks/pre-commit -> ../../scripts/pre-commit`)."""
    forms = [p for p in dict.fromkeys((lexical, real)) if inside(p, roots) is not None]
    if not forms:
        return None
    starts = dict.fromkeys([*(pathtext.dirname(p) for p in forms), *roots])
    for start in starts:
        found = _dirs(start)
        if isinstance(found, str):
            return ("ask", "path.git-hooks", f"write of {raw}: cannot tell where git's hooks "
                    f"are ({found})")
        for include in found.includes:
            if real == include or lexical == include or (entry and _above(forms, include)):
                return ("deny", "path.git-config", f"write of {raw} changes {include}, which "
                        "git's config includes: git obeys it as its config")
        for (top, hooks), (real_top, real_hooks) in zip(found.pairs, found.real, strict=True):
            for form in forms:
                if _lands(form, top, hooks) or (real_hooks != hooks and _lands(
                        form, real_top, real_hooks)):  # `.git/hooks -> ../githooks`
                    return ("deny", "path.git-hooks", f"write of {raw} lands in the git hooks "
                            f"directory {hooks} (core.hooksPath): git runs these files as code")
            if entry and (_above(forms, hooks, top) or _above(forms, real_hooks, real_top)):
                return ("deny", "path.git-hooks", f"write of {raw} replaces a directory that "
                        f"holds the git hooks directory {hooks}: git runs its files as code")
            targets = _link_targets(hooks)
            hook = targets.get(real)
            if hook is None and entry:
                hook = next((h for t, h in targets.items() if _above(forms, t)), None)
            if hook is not None:
                return ("deny", "path.git-hooks", f"write of {raw} changes the git hook "
                        f"{hook}, a link to it: git runs it as code")
    return None


def _above(forms: list[str], path: str, top: str | None = None) -> bool:
    """Is one of `forms` a directory above `path` (and below the work tree's `top`)?"""
    for form in forms:
        if path.startswith(form.rstrip("/") + "/") and (
                top is None or form.startswith(top.rstrip("/") + "/")):
            return True
    return False


def _link_targets(hooks: str) -> dict[str, str]:
    """The hooks in `hooks` that are symbolic links, by the real path they resolve to
    (`.git/hooks/pre-commit -> ../../scripts/pre-commit`: the workspace file is the hook's
    code). Read once per decision: one listing of the directory, a resolution per link."""
    current = current_decision()
    memo = None if current is None else current.hook_links
    if current is not None and memo is None:
        memo = current.hook_links = {}
    targets = None if memo is None else memo.get(hooks)
    if targets is None:
        targets = {}
        try:
            with os.scandir(hooks) as it:
                for e in it:
                    if e.name in HOOKS and e.is_symlink():
                        targets[os.path.realpath(e.path)] = e.path
        except OSError:
            pass
        if memo is not None:
            memo[hooks] = targets
    return targets


def _lands(path: str, top: str, hooks: str) -> bool:
    if not (path == hooks or path.startswith(hooks.rstrip("/") + "/")):
        return False
    if top == hooks or top.startswith(hooks.rstrip("/") + "/"):
        return pathtext.dirname(path) == hooks and pathtext.basename(path) in HOOKS
    return True


def _real_pair(top: str, hooks: str) -> tuple[str, str]:
    """(top, hooks) resolved: a link anywhere on the hooks directory's path (`.git/hooks ->
    ../githooks`, `core.hooksPath = lnk/sub/hooks` with `lnk -> real`) makes its real path
    another name for it; the top is the repository's as found from a resolved path."""
    return os.path.realpath(top), os.path.realpath(hooks)


class Found:
    """A repository's hooks directories and config includes. (A plain slotted class: a
    compiled NamedTuple builds itself in interpreted code.)"""

    __slots__ = ("includes", "pairs", "real")

    def __init__(self, pairs: tuple[tuple[str, str], ...], includes: tuple[str, ...],
                 real: tuple[tuple[str, str], ...]) -> None:
        self.pairs = pairs
        """(work tree top, hooks directory)."""
        self.includes = includes
        """Real paths of the files the configs include."""
        self.real = real
        """`pairs` with real paths (a hooks directory may be a link)."""


def _dirs(start: str) -> Found | str:
    """The hooks directories and config includes for the repository git finds from
    `start`; a string says why they cannot be told."""
    current = current_decision()
    memo = None if current is None else current.hook_dirs
    if current is not None and memo is None:
        memo = current.hook_dirs = {}
    hit = None if memo is None else memo.get(start)
    if hit is not None:
        return hit
    result: Found | str
    try:
        repo = find_repository(start)
        if repo is None:
            result = Found((), (), ())
        else:
            dirs, includes = hooks_and_includes(repo.top, repo.git_dir,
                                                os.path.expanduser("~"))
            result = Found(tuple((repo.top, d) for d in dirs),
                           tuple(os.path.realpath(i) for i in includes),
                           tuple(_real_pair(repo.top, d) for d in dirs))
    except (Unreadable, Uncertain) as exc:
        result = str(exc)
    if memo is not None:
        memo[start] = result
    return result
