"""Settings of the file tools (the `[tools.file]` section once the config carries it)."""

from __future__ import annotations

import functools
from dataclasses import dataclass, field
from typing import Literal

from acpd.tools.fs.globs import ReadPolicy
from acpd.tools.fs.pathguard import PathGuard, PathSource
from acpd.tools.fs.resolve import choose_resolver
from acpd.tools.fs.sandbox import Sandbox
from acpd.tools.spec import ToolContext


@functools.lru_cache(maxsize=32)
def _read_policy(deny: tuple[str, ...], allow: tuple[str, ...]) -> ReadPolicy:
    return ReadPolicy(deny, allow)


@dataclass(frozen=True)
class FileToolsConfig:
    allowed_paths: tuple[str, ...] = ()
    """Roots the tools may touch; empty means the session's roots (its cwd)."""
    deny_read: tuple[str, ...] = ()
    allow_read: tuple[str, ...] = ()
    resolver: Literal["auto", "openat2", "walk"] = "auto"
    max_read_chars: int = 256 * 1024
    """Characters of a read shown to the model before it is cut (with a note to continue)."""
    max_file_bytes: int = 16 * 1024 * 1024
    """Largest file read whole (edit, write's diff, copy is streamed and not limited)."""
    find_limit: int = 200
    grep_limit: int = 200
    grep_max_file_bytes: int = 4 * 1024 * 1024
    walk_limit: int = 100_000
    """Entries a find_path, grep, copy_path or move_path check may visit."""
    paths: PathSource | None = field(default=None, compare=False)
    """Where each call gets its path policy (the shell's `[paths]` and the permission rules,
    current at the call); None: only deny_read/allow_read and the roots apply."""
    guard: PathGuard | None = field(default=None, compare=False)
    """The path policy of the call being run (set per call from `paths`)."""
    policy: ReadPolicy = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "policy", _read_policy(self.deny_read, self.allow_read))

    def roots_for(self, ctx: ToolContext) -> tuple[str, ...]:
        return self.allowed_paths or ctx.roots or (ctx.cwd,)

    def sandbox(self, ctx: ToolContext) -> Sandbox:
        """A sandbox over `allowed_paths` (or the session's roots, or its cwd).

        Raises ToolError(PolicyBlocked) when no root can be opened.
        """
        return Sandbox(self.roots_for(ctx), ctx.cwd, self.policy,
                       choose_resolver(self.resolver), guard=self.guard)
