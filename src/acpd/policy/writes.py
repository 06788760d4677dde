"""What a command line may write: redirect targets and the path operands of write commands.

For the transactional shell, which snapshots these before the command runs. It reuses the
policy's parser, word computation, wrapper peeling and path grammar, so `env X=1 tee -a f`,
`sh -c 'rm f'` and `> f` all name `f`. False negatives are acceptable (the snapshot is a
convenience, the policy is the boundary); a target that cannot be computed sets `dynamic`, and so
does a directory change (`cd`, `pushd`, `popd`, `env -C`, `git -C`) the text does not pin down
and a write command whose targets its words do not name (git, tar, patch, ...).
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import Final

from acpd.policy import pathtext
from acpd.policy.argspec import path_args
from acpd.policy.parse import parse
from acpd.policy.text import strip_line_continuations
from acpd.policy.words import literal
from acpd.policy.wrappers import unwrap

WRITE_INDICATORS: Final = frozenset({
    "rm", "rmdir", "unlink", "shred", "mv", "cp", "install", "ln", "dd", "truncate", "tee",
    "touch", "mkdir", "chmod", "chown", "chgrp", "patch", "sed", "perl", "tar", "unzip",
    "gzip", "gunzip", "git", "sort", "rsync",
})
READ_REDIRECTS: Final = frozenset({"<", "<&", "<<", "<<-", "<<<"})
MAX_DEPTH: Final = 4


@dataclass(slots=True)
class WritePlan:
    writes: bool = False
    """A write redirect or a write-indicator command was found."""
    targets: list[str] = field(default_factory=list)
    """Absolute, normalised paths, in order, without repeats."""
    dynamic: bool = False
    """Some write target could not be computed (a variable, a glob, a substitution)."""

    def merge(self, other: WritePlan, *, dynamic: bool) -> None:
        """Take a payload's plan; `dynamic`: it ran in a directory the text does not give."""
        self.writes = self.writes or other.writes
        self.dynamic = self.dynamic or other.dynamic or (dynamic and other.writes)
        self.targets.extend(t for t in other.targets if t not in self.targets)

    def add(self, raw: str | None, cwd: str) -> None:
        if raw is None or not raw or any(c in raw for c in "*?["):
            self.dynamic = True
            return
        path = pathtext.normpath(pathtext.join(cwd, raw))
        if path not in self.targets and not path.startswith("/dev/"):
            self.targets.append(path)


def write_targets(command: str, cwd: str, home: str | None = None) -> WritePlan:
    """The files and directories `command` (run in `cwd`) may write, as far as it can tell."""
    plan = WritePlan()
    _collect(strip_line_continuations(command), cwd, home or os.path.expanduser("~"), plan, 0)
    return plan


def _collect(source: str, cwd: str, home: str, plan: WritePlan, depth: int) -> None:
    if depth > MAX_DEPTH:
        plan.dynamic = True
        return
    try:
        script = parse(source)
    except ValueError:
        plan.dynamic = True  # cannot tell what it writes: the caller treats it as unknown
        return
    # Every directory the line may run a command in, first: the walk does not see in
    # which order (or group) a redirect's command runs relative to a `cd` (tree-sitter hangs
    # `> f` of `cd sub && echo x > f` on the whole list), so each target is computed in each.
    dirs = _Dirs(cwd)
    lines = [[literal(w, home) for w in cmd.words] for cmd in script.commands]
    for words in lines:
        if words and words[0] is not None:
            dirs.change([w if w is not None else "\0" for w in words], home)
    for cmd, words in zip(script.commands, lines, strict=True):
        for red in cmd.redirects:
            if red.kind != "file" or red.op in READ_REDIRECTS or red.target is None:
                continue
            if red.op in (">&", "<&") and red.target.isdigit():
                continue  # 2>&1 duplicates a descriptor, it names no file
            plan.writes = True
            for where in dirs.now:
                plan.add(literal(red.target, home), where)
        if not words or words[0] is None:
            continue
        argv = [w if w is not None else "\0" for w in words]
        if pathtext.basename(argv[0]) in CD_COMMANDS:
            continue
        res = unwrap(argv)
        moved = _moved(argv, res.argv)
        for payload in res.payloads:
            inner = WritePlan()
            for where in dirs.now:
                _collect(payload, where, home, inner, depth + 1)
            plan.merge(inner, dynamic=moved)
        for target in res.writes:
            plan.writes = True
            for where in dirs.now:
                plan.add(target, where)
        if not res.argv:
            continue
        name = pathtext.basename(res.argv[0])
        written = path_args(name, res.argv[1:]).writes
        if name in WRITE_INDICATORS or written:
            plan.writes = True
            if name in UNKNOWN_WRITES or moved:
                plan.dynamic = True  # it writes, but not (only) at paths its words name
        for target in written:
            for where in dirs.now:
                plan.add(None if "\0" in target else target, where)
    if dirs.unknown:
        plan.dynamic = True


CD_COMMANDS: Final = frozenset({"cd", "pushd", "popd", "chdir"})
UNKNOWN_WRITES: Final = frozenset({"git", "perl", "tar", "unzip", "patch", "rsync", "install"})
"""Write commands whose targets their words do not name (git's work tree and .git, an
archive's members, a patch's files): a plan that holds one cannot be complete."""
SAME_SHELL_CODE: Final = frozenset({"eval", "source", "."})
CHDIR_OPTIONS: Final = ("-C", "--chdir", "-D", "--directory")
MAX_DIRS: Final = 8


class _Dirs:
    """The directories a line may run its commands in. The walk does not see grouping:
    `cd sub && x` moves the rest of the line, `(cd sub && x); y` does not. So a literal `cd`
    adds its directory to those already possible instead of replacing them, and targets are
    computed in each (a superset is harmless: the rollback restores only what changed). A
    `cd` whose directory cannot be computed makes the targets unknown."""

    def __init__(self, cwd: str) -> None:
        self.now = [cwd]
        self.unknown = False
        self._pushed = False

    def change(self, argv: list[str], home: str) -> None:
        """Apply `argv` when it changes directory."""
        while len(argv) > 1 and argv[0] in ("builtin", "command"):
            argv = argv[1:]  # `builtin cd sub` is `cd sub`
        name = pathtext.basename(argv[0])
        if name in SAME_SHELL_CODE:
            # `eval 'cd sub'`, `source env.sh`: code run in this very shell may move it.
            if name != "eval" or any(w in CD_COMMANDS for a in argv[1:] for w in a.split()):
                self.unknown = True
            return
        if name not in CD_COMMANDS:
            return
        args = [a for a in argv[1:] if a not in ("-L", "-P", "-e", "-@", "--")]
        if name == "popd":
            # Back to a directory pushed earlier on this line (already possible), or to one
            # pushed before the command started (unknown).
            self.unknown = self.unknown or not self._pushed
            return
        target = args[0] if args else (home if name != "pushd" else None)
        relative = target is not None and not target.startswith("/")
        if (target is None or "\0" in target or target == "-" or target.startswith("+")
                or (relative and os.environ.get("CDPATH"))):
            self.unknown = True  # OLDPWD, the stack, a variable, CDPATH: not from the text
            return
        self._pushed = self._pushed or name == "pushd"
        moved = [pathtext.normpath(pathtext.join(d, target)) for d in self.now]
        self.now = list(dict.fromkeys([*self.now, *moved]))
        if len(self.now) > MAX_DIRS:
            self.unknown = True
            self.now = self.now[:MAX_DIRS]


def _moved(argv: list[str], inner: list[str]) -> bool:
    """A wrapper ran the command in another directory (`env -C dir`, `sudo -D dir`), or the
    command itself takes one (`git -C`, `make -C`, `tar --directory`)."""
    wrapper = argv[: max(0, len(argv) - len(inner))]
    words = [*wrapper, *inner[1:]]
    return any(w in CHDIR_OPTIONS or w.startswith(("--chdir=", "--directory=")) for w in words)
