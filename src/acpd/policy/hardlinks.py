"""Hard links: a file's other names count when its name is judged.

`ln .env copy` gives the file `.env` names a second name that no deny pattern mentions;
reading `copy` reads `.env`. Deny patterns name paths, so for a regular file with more than
one link (`st_nlink > 1`) the judge looks for its other names:

- it scans the workspace roots (bounded: SCAN_LIMIT entries, symbolic links not followed,
  once per file per decision, never cached across decisions) for entries with the same
  (st_dev, st_ino); the scan compares the inode number `scandir` already has and stats only
  the entries whose number matches;
- a name found that the mode's deny list names: deny (the rule that names the original);
- fewer names found than `st_nlink` (another name lies outside the workspace, or the scan
  stopped at its bound): ask, since that name may be denied;
- every name found and none denied: nothing to say.

Only policies with a deny list for the mode pay for it, and only for files with several links.
The file tools apply the same rule (`tools/fs/pathguard.py`), and refuse any file with more
than one link when they open it (`tools/fs/sandbox.py`).
"""

from __future__ import annotations

import os
import stat
from typing import Final, NamedTuple

from acpd.policy.decision import Verdict
from acpd.policy.sandbox import PathRules, decision_links, file_stat, matches

SCAN_LIMIT: Final = 4000


class Names(NamedTuple):
    found: tuple[str, ...]
    complete: bool
    """The scan read every entry of the roots (within the bound)."""


def hardlink_finding(real: str, mode: str, rules: PathRules) -> tuple[Verdict, str, str] | None:
    """(verdict, rule id, reason) for the resolved path `real` when it is a regular file
    with other names the deny list of `mode` names or the judge cannot see; else None."""
    deny = rules.deny_read if mode == "read" else rules.deny_write
    if not deny:
        return None
    st = file_stat(real)
    if st is None or not stat.S_ISREG(st.st_mode) or st.st_nlink < 2:
        return None
    names = other_names(st, rules.roots)
    for name in names.found:
        if name == real:
            continue  # its own name is the caller's to judge
        hit = matches(name, deny, rules.roots)
        if hit is not None:
            return ("deny", f"path.deny-{mode}-hardlink",
                    f"a hard link to {name}, which deny_{mode} names ({hit!r})")
    if len(names.found) < st.st_nlink:
        where = "outside the workspace" if names.complete else "beyond the scan's bound"
        return ("ask", "path.hardlink",
                f"the file has {st.st_nlink} hard links, {st.st_nlink - len(names.found)} "
                f"of them {where}; another name may be one the deny list names")
    return None


def other_names(st: os.stat_result, roots: tuple[str, ...]) -> Names:
    """Every name of the file `st` under the workspace roots (bounded; memoised for the
    decision only)."""
    memo = decision_links()
    key = (st.st_dev, st.st_ino)
    if memo is not None and key in memo:
        cached = memo[key]
        assert isinstance(cached, Names)
        return cached
    names = _scan(st, roots)
    if memo is not None:
        memo[key] = names
    return names


def _scan(st: os.stat_result, roots: tuple[str, ...]) -> Names:
    found: list[str] = []
    count = 0
    stack = list(dict.fromkeys(roots))
    while stack:
        top = stack.pop()
        try:
            with os.scandir(top) as it:
                for entry in it:
                    count += 1
                    if count > SCAN_LIMIT:
                        return Names(tuple(found), False)
                    try:
                        if entry.inode() == st.st_ino and \
                                entry.stat(follow_symlinks=False).st_dev == st.st_dev:
                            found.append(entry.path)
                        elif entry.is_dir(follow_symlinks=False):
                            stack.append(entry.path)
                    except OSError:
                        continue
        except OSError:
            continue
    return Names(tuple(dict.fromkeys(found)), True)
