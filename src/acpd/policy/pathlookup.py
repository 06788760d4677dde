"""Which file a command name runs: PATH entries the command line can write.

bash finds `cat` on PATH when the line runs, and the policy judges the name. With a workspace
directory on the daemon's PATH (commands inherit it: an activated `.venv/bin`, direnv's
`PATH_add`, `node_modules/.bin`), or a relative or empty entry (the command's own
directory), `cp /usr/bin/dash .venv/bin/cat; cat x.sh` runs a file the line just wrote
(red-team B1d). So a program name whose lookup passes through such an entry before reaching
an entry that holds the program is workspace code: judged like a workspace script (allowed
when trusted or sandboxed, ask otherwise; commands.py decides).

Rules:
- Builtins and keywords are not looked up (bash runs its own), nor are functions of the line.
- An entry is writable by the line when it is empty or relative, or when (as written,
  normalised) it lies inside a workspace root. Limit: an entry under a write root (`/tmp`)
  is not counted (a checkout's `.venv/bin` there would make every command ask). Which
  entries those are is a pure function of PATH and the roots' text (no file-system fact):
  it is computed per call.
- Only when some entry is writable is the name looked up: one `os.stat` per entry, in PATH
  order, until the first entry that holds an executable file of that name. A writable entry met
  first (whether or not it holds the name now: an earlier command may put it there) decides.
- Limit: an entry outside the roots that is a symbolic link into them is taken as written.
"""

from __future__ import annotations

import os
import stat
from typing import Final

from acpd.policy import pathtext
from acpd.policy.sandbox import PathRules, inside

BASH_BUILTINS: Final = frozenset({
    ".", ":", "[", "alias", "bg", "bind", "break", "builtin", "caller", "cd", "command",
    "compgen", "complete", "compopt", "continue", "declare", "dirs", "disown", "echo",
    "enable", "eval", "exec", "exit", "export", "false", "fc", "fg", "getopts", "hash", "help",
    "history", "jobs", "kill", "let", "local", "logout", "mapfile", "popd", "printf", "pushd",
    "pwd", "read", "readarray", "readonly", "return", "set", "shift", "shopt", "source",
    "suspend", "test", "times", "trap", "true", "type", "typeset", "ulimit", "umask",
    "unalias", "unset", "wait", "if", "then", "else", "elif", "fi", "case", "esac", "for",
    "select", "while", "until", "do", "done", "in", "function", "time", "{", "}", "!", "[[",
    "]]", "coproc",
})


def writable_entries(path_var: str, rules: PathRules) -> list[tuple[str, bool]]:
    """(entry, can the line write it) for each entry of `path_var`, in order."""
    out: list[tuple[str, bool]] = []
    for entry in path_var.split(":"):
        if not entry.startswith("/"):
            out.append((entry, True))
            continue
        norm = pathtext.normpath(entry)
        # Write roots (/tmp/**) are left out: a checkout's .venv/bin under /tmp on PATH would
        # make every command ask (a limit, docs/policy.md).
        out.append((norm, inside(norm, rules.roots) is not None))
    return out


def shadow_finding(name: str, rules: PathRules, path_var: str | None = None) -> str | None:
    """Why the program `name` may be a file the command line wrote (None: it cannot)."""
    if name in BASH_BUILTINS or not name:
        return None
    entries = writable_entries(os.environ.get("PATH", os.defpath) if path_var is None
                               else path_var, rules)
    if not any(w for _, w in entries):
        return None
    for entry, writable in entries:
        if writable:
            shown = entry or "(the current directory)"
            return (f"{name} is looked up on PATH through {shown}, a directory the command can "
                    "write: it may run a file the line put there; the workspace is not trusted")
        try:
            st = os.stat(pathtext.join(entry, name))
        except (OSError, ValueError):
            continue
        if stat.S_ISREG(st.st_mode) and st.st_mode & 0o111:
            return None
    return None
