"""Writes into git directories found by what they hold, not by the name `.git`.

git takes a directory as a git directory when it holds a `HEAD` and an object store and refs
(`objects/` and `refs/`, or a `commondir` naming where they are): a `--separate-git-dir`
target (`sub/.git` then says `gitdir: ../gd`), a bare repository (`x.git`, or any name), the
workspace root itself once those files appear in it (red-team 11, F3/F4/F7). Such a
directory's `config` is obeyed (`core.fsmonitor`, `core.pager`, filters, aliases) and its
`hooks` run, by any git that reaches it: the user's `git status`, an editor's git
integration, an allowed `git` command of a later line. `deny_write`'s `**/.git/**` knows only
the name, so this module judges every write the path policy judges (`sandbox.judge_path`:
redirects, program arguments, archive members, the file tools).

Rules:
- A write of what git obeys or runs inside a git directory (`config`, `config.worktree`,
  `commondir`, `gitdir`, anything under `hooks/` or `info/`) is denied, as for `.git`. The
  directory is recognised afresh on each decision: `HEAD` present, and `objects/` with
  `refs/` or a `commondir` file beside it.
- A write of a file named `HEAD` asks, wherever it lands: with an object store and refs
  beside it (which plain `mkdir` makes), it turns its directory into a git directory whose
  config the same line, or any later git there, obeys. git's own commands keep their
  `HEAD` under `.git`, which `deny_write` already covers; a project file named `HEAD` is
  rare.
- Only the path as written and its real path are looked at; a directory that becomes a git
  directory later by other means is the sandbox's (read-only git code) and the card's
  (`daemon/confine.py` notes a root that became one) concern.
"""

from __future__ import annotations

from typing import Final

from acpd.policy import pathtext
from acpd.policy.decision import Verdict

CODE_FILES: Final = frozenset({"config", "config.worktree", "commondir", "gitdir"})
CODE_DIRS: Final = frozenset({"hooks", "info"})


def git_dir_write(lexical: str, real: str, raw: str) -> tuple[Verdict, str, str] | None:
    """A finding when writing `lexical` (real path `real`) changes git's code or makes a
    git directory."""
    for form in dict.fromkeys((lexical, real)):
        if pathtext.basename(form) == "HEAD":
            return ("ask", "path.git-head", f"write of {raw}: a file named HEAD, with objects/ "
                    "and refs/ beside it, makes its directory a git directory, whose config "
                    "and hooks git then obeys and runs")
        found = code_in_git_dir(form)
        if found is not None:
            return ("deny", "path.git-directory", f"write of {raw} changes {found[1]} of the "
                    f"git directory {found[0]}: git obeys its config and runs its hooks")
    return None


def code_in_git_dir(path: str) -> tuple[str, str] | None:
    """(git directory, what) when `path` is one of git's code files or lies under its
    hooks/info directory in a directory that is a git directory now."""
    parent, name = pathtext.dirname(path), pathtext.basename(path)
    if name in CODE_FILES and is_git_directory(parent):
        return parent, name
    parts = path.split("/")
    for k in range(1, len(parts)):  # the hooks/info entry itself too (moved, replaced)
        if parts[k] in CODE_DIRS:
            candidate = "/".join(parts[:k]) or "/"
            if is_git_directory(candidate):
                return candidate, f"{parts[k]}/"
    return None


def is_git_directory(path: str) -> bool:
    """What git's discovery accepts (setup.c `is_git_directory`), read now and looser (any
    `HEAD`, entries of any type): a `HEAD`, and `objects` with `refs`, or a `commondir`
    naming where they are."""
    if not pathtext.lexists(pathtext.join(path, "HEAD")):
        return False
    if pathtext.lexists(pathtext.join(path, "commondir")):
        return True
    return pathtext.lexists(pathtext.join(path, "objects")) and \
        pathtext.lexists(pathtext.join(path, "refs"))
