"""Renames and backups that give a denied file a name no pattern matches: judged as reads.

`mv secrets s3; cat s3/k.txt` reads nothing at the `mv`, yet afterwards the secret sits under
a name `deny_read` does not name; so does `cp -b x server.pem` (the old `server.pem` becomes
`server.pem~`) and `mv --exchange x server.pem` (red-team B11). So:

- the sources of `mv` are judged as reads (a rename exposes what it moves, like a copy);
- with a backup (`-b`, `--backup[=]`, `-S`/`--suffix`) or `--exchange`, the destinations of
  `cp`, `mv`, `ln` are judged as reads too: both the destination as written and, for a
  destination directory, the entry each source would replace in it;
- when the command does not run sandboxed, a source (or backed-up destination) that is a
  directory is scanned for deny_read files (the bounded, fresh tree scan the recursive readers
  use: `mv sub s6` exposes `sub/secrets/`). Under the sandbox a masked file or directory is a
  mount point: renaming it fails (EBUSY), and renaming a parent keeps the mask.

Limits: `install`, `rsync` and `git mv` have no allow rule in the default policy (they ask).
"""

from __future__ import annotations

from typing import Final

from acpd.policy import pathtext

PROGRAMS: Final = frozenset({"mv", "cp", "ln"})
_VALUE_SHORTS: Final = frozenset("St")
"""Short options of cp/mv/ln that take a value (the rest of a cluster is that value)."""


def _flags(args: list[str]) -> tuple[bool, bool]:
    """(makes backups, exchanges) for the options of a cp/mv/ln argv."""
    backup = exchange = False
    skip = False
    for word in args:
        if skip:
            skip = False
            continue
        if word == "--":
            break
        if word.startswith("--"):
            name = word[2:].split("=", 1)[0]
            if len(name) >= 1 and "backup".startswith(name):
                backup = True
            elif len(name) >= 2 and "suffix".startswith(name):
                backup = True
                skip = "=" not in word
            elif len(name) >= 1 and "exchange".startswith(name):
                exchange = True
            elif name and "target-directory".startswith(name):
                skip = "=" not in word
            continue
        if word.startswith("-") and len(word) > 1:
            for k, letter in enumerate(word[1:], 1):
                if letter == "b":
                    backup = True
                if letter in _VALUE_SHORTS:
                    if letter == "S":
                        backup = True
                    skip = k == len(word) - 1
                    break
    return backup, exchange


def exposed(program: str, args: list[str], sources: list[str],
            dests: list[str]) -> list[str]:
    """Paths `program args` exposes under another name: judge each as a read."""
    out = list(sources) if program == "mv" else []
    backup, exchange = _flags(args)
    if backup or (exchange and program == "mv"):
        for dest in dests:
            out.append(dest)
            out.extend(pathtext.join(dest, pathtext.basename(s.rstrip("/")) or s)
                       for s in sources)
    return list(dict.fromkeys(out))
