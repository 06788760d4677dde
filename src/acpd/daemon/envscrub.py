"""Blocked environment names kept from commands run in the editor's terminal.

A local command gets the daemon's environment minus `[tools.shell] env_blocklist`
(local.py `child_env`). A command in the editor's terminal gets the *editor's* environment,
which holds whatever the user's login shell exported when the editor started
(`OPENAI_API_KEY`, `GITHUB_TOKEN`, ...), and `terminal/create` can only add variables, not
remove them. So what the editor runs is a short bash script in front of the launcher: it
lists the environment's names, and execs `env -u NAME...` for every name the blocklist
matches (case-insensitively, as `child_env` does), which execs the launcher. The names are
gone from the environment block of every process after it: bubblewrap, its init (PID 1 in
the sandbox, whose /proc/1/environ a command can read) and the command. Unsetting them in
the command's own shell was not enough: a process's initial environment block stays
readable in /proc/PID/environ whatever the shell does with its variables.

Each step execs the next, so the process the editor started (and kills on `terminal/kill`)
is the one that ends up running bubblewrap. The names come from /proc/self/environ on Linux;
elsewhere from `compgen -e`, which lists shell identifiers only (a name like `A-B_TOKEN`
then passes: documented in docs/sandbox.md). Costs a bash start, and an `env` exec when a
blocked name is present: about 1.5 ms.

The scrub runs as `bash -p` (privileged mode: no BASH_ENV, no functions imported from the
environment, SHELLOPTS and BASHOPTS ignored), so nothing in the editor's environment runs
before the names are gone, and it execs `env` and the launcher by absolute path: a relative
PATH entry (`node_modules/.bin`, `.`) would otherwise find a program the agent planted in
the workspace, outside the sandbox.
"""

from __future__ import annotations

import functools
import os
import shlex
from collections.abc import Iterable, Sequence

SCRUB = """shopt -s nocasematch
x=()
if [ -r /proc/self/environ ]; then
mapfile -d '' e </proc/self/environ
else
e=($(compgen -e))
fi
for n in "${{e[@]%%=*}}"; do
case $n in
'') ;;
{keep}{blocked}) x+=(-u "$n") ;;
esac
done
[ "${{#x[@]}}" -eq 0 ] || {{ exec {env} "${{x[@]}}" "$@"; exit 126; }}
exec "$@"
"""
NAME = "acpd-scrub"
"""`$0` of the script (what `ps` shows until it execs)."""


def scrubbed(argv: Sequence[str], blocklist: Sequence[str], keep: Iterable[str] = ()
             ) -> list[str]:
    """`argv` run without the blocked names (`argv` itself when nothing is blocked).
    `blocklist` holds config-validated names or globs (letters, digits, `_ * ? [ ] ! -`),
    which mean the same in a `case` pattern as in fnmatch; names in `keep` (what the runner
    itself sets) are left alone."""
    if not blocklist:
        return list(argv)
    kept = "|".join(shlex.quote(name) for name in keep)
    script = SCRUB.format(keep=f"{kept}) ;;\n" if kept else "", blocked="|".join(blocklist),
                          env=shlex.quote(absolute("env")))
    return [absolute("bash"), "-p", "-c", script, NAME, *argv]


SYSTEM_DIRS = ("/usr/bin", "/bin")


@functools.cache
def absolute(program: str) -> str:
    """`program` in the system's directories, else on the daemon's PATH with relative
    entries (`.`, ``, `node_modules/.bin`) skipped: the editor would resolve those from the
    workspace, and a PATH entry such as an activated `.venv/bin` can lie in one, where
    sandboxed commands write. Found once per daemon. The bare name when it is nowhere (the
    editor then says so)."""
    entries = os.environ.get("PATH", os.defpath).split(os.pathsep)
    for entry in (*SYSTEM_DIRS, *entries):
        if os.path.isabs(entry):
            path = os.path.join(entry, program)
            if os.path.isfile(path) and os.access(path, os.X_OK):
                return path
    return program

