"""What a tool may ask of the world. The daemon injects an implementation of each.

The editor-backed and the local implementations honour the same contract, so a tool cannot
tell, and the policy cannot differ, between running in the editor and running locally.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Protocol

from acpd.sandbox.rules import PathRules


@dataclass(frozen=True, slots=True)
class CommandRequest:
    command: str
    cwd: str
    timeout: float
    output_byte_limit: int
    env: dict[str, str] = field(default_factory=dict)
    roots: tuple[str, ...] = ()
    """The workspace roots: a runner refuses a cwd outside them (empty: no check). The
    sandbox makes them (or the cwd, when empty) the only writable places besides its /tmp."""
    sandbox: PathRules | None = None
    """The policy's path rules the kernel sandbox enforces for this command (deny_read,
    deny_write, write_roots, allow_network). None: the runner asks its own rules source (the
    live policy of the cwd); a runner without one still confines to the roots, no network."""
    call_id: str = ""
    """The tool call that runs it: a runner that shows the output live names it (a display
    terminal of the v1 `_meta` convention belongs to its call)."""
    git_read_only: bool = False
    """Git directories read-only in its sandbox but for git's data (`PathRules.git_writes`
    False): the policy allowed it only because it is sandboxed."""


@dataclass(slots=True)
class CommandResult:
    output: str
    """Combined stdout and stderr as the user would see them in a terminal."""
    exit_code: int | None
    signal: str | None = None
    timed_out: bool = False
    truncated: bool = False
    stderr: str = ""
    """Stderr alone where the runner can separate it (the local runner can, a terminal cannot)."""
    terminal_id: str | None = None
    notes: list[str] = field(default_factory=list)
    """Lines the runner adds after the output (a rollback, a missing snapshot)."""
    rollback: list[str] | None = None
    """The paths a transactional rollback restored (["failed"] when it could not)."""
    sandbox: str | None = None
    """How the command was confined: "bwrap", "bwrap (incomplete)", "none: <why>"; None when
    the runner does not say (a runner that predates the sandbox)."""
    sandbox_notes: tuple[str, ...] = ()
    """What the sandbox did not enforce for this command, and why."""


Cleanup = Callable[[], Awaitable[None]]

OnTerminal = Callable[[str, Cleanup], Awaitable[None]]
"""Called as soon as an editor terminal exists, with its id (to embed it in the card) and the
function that releases it, which must run only after the call's final tool_call_update."""

OnOutput = Callable[[str], Awaitable[None]]
"""Called with the output so far while a local command runs."""


class CommandRunner(Protocol):
    async def run(
        self, request: CommandRequest, on_terminal: OnTerminal, on_output: OnOutput
    ) -> CommandResult:
        """Run `request.command` with bash; cancellation kills the whole process tree.

        Raises OSError when the command cannot be started at all.
        """
        ...


class FileSystem(Protocol):
    @property
    def serves_reads(self) -> bool:
        """True when reads go to the editor (its buffers, unsaved edits included)."""
        ...

    @property
    def serves_writes(self) -> bool:
        """True when writes go to the editor."""
        ...

    async def read_text(self, path: str, line: int | None = None, limit: int | None = None) -> str:
        """Return the file's text from 1-based `line`, at most `limit` lines.

        The editor's buffer is returned when the editor serves files, so unsaved edits count.

        Raises FileNotFoundError, IsADirectoryError, PermissionError or UnicodeDecodeError.
        """
        ...

    async def write_text(self, path: str, content: str) -> None: ...

