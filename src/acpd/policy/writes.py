"""What a command line may write: redirect targets and the path operands of write commands.

For the transactional shell, which snapshots these before the command runs. It reuses the
policy's parser, word computation, wrapper peeling and path grammar, so `env X=1 tee -a f`,
`sh -c 'rm f'` and `> f` all name `f`. False negatives are acceptable (the snapshot is a
convenience, the policy is the boundary); a target that cannot be computed sets `dynamic`.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field

from acpd.policy.argspec import path_args
from acpd.policy.parse import parse
from acpd.policy.text import strip_line_continuations
from acpd.policy.words import literal
from acpd.policy.wrappers import unwrap

WRITE_INDICATORS = frozenset({
    "rm", "rmdir", "unlink", "shred", "mv", "cp", "install", "ln", "dd", "truncate", "tee",
    "touch", "mkdir", "chmod", "chown", "chgrp", "patch", "sed", "perl", "tar", "unzip",
    "gzip", "gunzip", "git", "sort", "rsync",
})
READ_REDIRECTS = frozenset({"<", "<&", "<<", "<<-", "<<<"})
MAX_DEPTH = 4


@dataclass(slots=True)
class WritePlan:
    writes: bool = False
    """A write redirect or a write-indicator command was found."""
    targets: list[str] = field(default_factory=list)
    """Absolute, normalised paths, in order, without repeats."""
    dynamic: bool = False
    """Some write target could not be computed (a variable, a glob, a substitution)."""

    def add(self, raw: str | None, cwd: str) -> None:
        if raw is None or not raw or any(c in raw for c in "*?["):
            self.dynamic = True
            return
        path = os.path.normpath(os.path.join(cwd, raw))
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
    for cmd in script.commands:
        for red in cmd.redirects:
            if red.kind != "file" or red.op in READ_REDIRECTS or red.target is None:
                continue
            if red.op in (">&", "<&") and red.target.isdigit():
                continue  # 2>&1 duplicates a descriptor, it names no file
            plan.writes = True
            plan.add(literal(red.target, home), cwd)
        words = [literal(w, home) for w in cmd.words]
        if not words or words[0] is None:
            continue
        argv = [w if w is not None else "\0" for w in words]
        res = unwrap(argv)
        for payload in res.payloads:
            _collect(payload, cwd, home, plan, depth + 1)
        for target in res.writes:
            plan.writes = True
            plan.add(target, cwd)
        if not res.argv:
            continue
        name = os.path.basename(res.argv[0])
        written = path_args(name, res.argv[1:]).writes
        if name in WRITE_INDICATORS or written:
            plan.writes = True
        for target in written:
            plan.add(None if "\0" in target else target, cwd)
