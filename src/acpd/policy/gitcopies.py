"""Committed secrets: the sandbox masks a denied file on disk, not git's copy of it.

Code the policy cannot see into (a workspace script, a build, a test run, a program with
options the spec does not model) is allowed when it runs sandboxed: the sandbox masks every
`deny_read` file, so the worst it can print is what the workspace shows. But when the
repository's index tracks a path `deny_read` names, git's copy of that file (the index, the
object store, packfiles, the stash) stays readable inside the sandbox, and such code can run
`git show HEAD:secrets/k.txt` (red-team A6). So a sandboxed decision in such a repository does
not get what only the sandbox lifts: it is judged as unsandboxed, with a reason saying why.

Rules:
- Looked at once per decision, only for a sandboxed decision in a workspace that is not
  trusted (a trusted workspace's code may already run unsandboxed), and only when the
  sandboxed verdict is allow (the sandbox lifts only towards allow).
- The repositories are those git finds from the working directory and from each workspace
  root; their index is read afresh (`programs/git_index.denied_tracked`: one read and one
  search in the common case). An index that cannot be read counts as tracking a secret.
- Limit: a secret committed once and untracked since lives only in history (objects, packs,
  reflogs): finding it means reading every tree of history, which no decision can afford. Such
  a repository is not detected; docs/policy.md says so.
"""

from __future__ import annotations

import os

from acpd.policy.programs import git_index
from acpd.policy.programs.git_index import Unreadable, find_repository
from acpd.policy.sandbox import PathRules, matches

_SIEVES: dict[tuple[str, int], tuple[PathRules, git_index._Sieve]] = {}
"""Sieves by (work tree top, rules): a pure function of the two texts (no file-system fact),
kept because building one costs more than reading a small index."""


def committed_secret(cwd: str, rules: PathRules) -> str | None:
    """Why the sandbox cannot hide a denied file's content from code run in `cwd` (None:
    the indexes track no path deny_read names)."""
    if not rules.deny_read:
        return None
    seen: set[str] = set()
    for start in (cwd, *rules.roots):
        try:
            repo = find_repository(start)
            if repo is None or repo.git_dir in seen:
                continue
            seen.add(repo.git_dir)
            found = _tracked(repo, rules)
        except Unreadable as exc:
            return (f"cannot tell whether git tracks a denied file ({exc}); judged as if the "
                    "command ran unsandboxed")
        if found:
            shown = os.path.relpath(found[0], repo.top)
            return (f"the repository tracks {shown} (a deny_read path): the sandbox masks "
                    "the file, not git's copy of it, so this command is judged as if it ran "
                    "unsandboxed")
    return None


def _tracked(repo: git_index.Repository, rules: PathRules) -> list[str]:
    """The index entries deny_read names (git_index.denied_tracked with a kept sieve)."""
    key = (repo.top, id(rules))
    kept = _SIEVES.get(key)
    if kept is None or kept[0] is not rules:
        if len(_SIEVES) > 64:
            _SIEVES.clear()
        kept = _SIEVES[key] = (rules, git_index._Sieve(repo.top, rules))
    sieve = kept[1]
    top = repo.top.rstrip("/")
    for data, source in git_index._index_files(repo):
        if git_index._header(data, source) != 4 and not sieve.may_hold(data):
            continue
        entries = git_index._parse(data, source)
        picked = set(sieve.candidates(data, entries))
        picked.update(k for k, (_, sparse, _) in enumerate(entries) if sparse)
        for k in sorted(picked):
            raw, sparse, _ = entries[k]
            path = f"{top}/{raw.decode('utf-8', 'surrogateescape').rstrip('/')}"
            if sparse or matches(path, sieve.patterns, rules.roots) is not None:
                return [path]
    return []
