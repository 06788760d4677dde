"""Where a `cd` lands, as bash computes it: logically by default, physically with `-P`.

bash's `cd DIR` (`-L`, the default) folds `..` against the path as written (`cd lnk/..` is
back where it started); `cd -P DIR` resolves symbolic links first, so `cd -P lnk/..` is the
parent of wherever `lnk` points (red-team B10: a write after it landed outside the workspace
while the policy believed it inside). Of `-L` and `-P`, the last one given wins (`-LP` is
physical). `set -P` / `set -o physical` make every later `cd` physical: they ask elsewhere.

Rules: the options are bash's (`-L`, `-P`, `-e`, `-@`, combined as `-Pe`); `--` ends them.
The physical form is `os.path.realpath` of the joined path, read from disk at judge time (never
cached); a target that is not known before running is not followed (the caller asks).
"""

from __future__ import annotations

import os

from acpd.policy import pathtext


def cd_operands(args: list[str]) -> tuple[list[str], bool]:
    """(the operands of `cd ARGS`, is it physical)."""
    physical = False
    k = 0
    while k < len(args):
        word = args[k]
        if word == "--":
            k += 1
            break
        if len(word) < 2 or word[0] != "-" or not set(word[1:]) <= set("LPe@"):
            break
        for letter in word[1:]:
            if letter == "P":
                physical = True
            elif letter == "L":
                physical = False
        k += 1
    return args[k:], physical


def cd_destination(base: str, target: str, physical: bool) -> str:
    """The directory `cd [-P] TARGET` run in `base` moves to."""
    joined = pathtext.join(base, target)
    return os.path.realpath(joined) if physical else pathtext.normpath(joined)
