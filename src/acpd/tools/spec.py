"""What a tool is: its id, its schema (derived from a pydantic model), its effect and kind."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from enum import Enum
from typing import TYPE_CHECKING, Any, Literal

if TYPE_CHECKING:
    from pydantic import BaseModel

    from acpd.tools.capabilities import CommandRunner, FileSystem
    from acpd.tools.overflow import OverflowAccess
    from acpd.tools.preview import PreviewFn

ToolKind = Literal[
    "read", "edit", "delete", "move", "search", "execute", "think", "fetch", "switch_mode", "other"
]


class Effect(Enum):
    READ_ONLY = "read_only"
    STATE_CHANGE = "state_change"
    EXTERNAL_SIDE_EFFECT = "external_side_effect"


# --- what the editor is shown about a call ---------------------------------------------------


@dataclass(frozen=True, slots=True)
class TextItem:
    text: str


@dataclass(frozen=True, slots=True)
class DiffItem:
    path: str
    old_text: str | None
    new_text: str


@dataclass(frozen=True, slots=True)
class TerminalItem:
    terminal_id: str


ContentItem = TextItem | DiffItem | TerminalItem
CallStatus = Literal["pending", "in_progress", "completed", "failed"]


@dataclass(slots=True)
class ToolCallView:
    """The editor's card for one call. Every publish sends it whole: content replaces."""

    tool_call_id: str
    title: str
    kind: ToolKind
    status: CallStatus = "pending"
    content: list[ContentItem] = field(default_factory=list)
    locations: list[str] = field(default_factory=list)
    lines: list[int | None] = field(default_factory=list)
    """The line of each location, by index (missing or None: the whole file)."""
    raw_input: Any = None
    raw_output: Any = None


# --- what a tool returns ------------------------------------------------------------------


@dataclass(slots=True)
class ToolOutput:
    text: str
    """What the model reads."""
    raw: Any = None
    """Structured output for the editor's rawOutput (e.g. the shell envelope)."""
    content: list[ContentItem] = field(default_factory=list)
    """Extra content for the editor card besides the text (diffs, terminals)."""
    failed: bool = False
    """The tool ran but its outcome is a failure (non-zero exit): the card shows failed."""
    body_end: int | None = None
    """`text[:body_end]` is what the command printed, which the output filters may shorten;
    the rest are the tool's own notes (exit code, timeout), kept verbatim after filtering.
    None: all of `text` is output."""
    locations: list[tuple[str, int | None]] | None = None
    """(path, line) pairs that replace the card's locations when the call ends (the
    diagnostics a checker found); None keeps those the arguments named."""


@dataclass(frozen=True, slots=True)
class FormAnswer:
    """What the user did with a form (daemon/elicitation.py checked `content`)."""

    action: str
    """accept, decline, cancel; invalid (an answer that does not fit the form) or error."""
    content: dict[str, Any] = field(default_factory=dict)
    reason: str = ""


Elicit = Callable[[str, str, dict[str, Any]], Awaitable[FormAnswer]]
"""(tool_call_id, message, requested JSON schema) -> the user's answer, through the editor."""


@dataclass(slots=True)
class ToolContext:
    tool_call_id: str
    cwd: str
    roots: tuple[str, ...]
    fs: FileSystem
    runner: CommandRunner
    publish: Callable[[list[ContentItem]], Awaitable[None]]
    """Replace the card's content while the call runs (terminal embedding, streaming)."""
    defer: Callable[[Callable[[], Awaitable[None]]], None]
    """Register cleanup that runs after the final tool_call_update, however the call ends."""
    shell_timeout: float = 120.0
    output_byte_limit: int = 1 << 20
    overflow: OverflowAccess | None = None
    """This session's stored overflow entries (read_overflow); None where nothing is stored."""
    approved: bool = False
    """The user approved this call (now, or with an earlier "always allow"): what the policy
    asks about and the tool meets again while it runs (a path outside the workspace) is
    covered; anything else that would ask is refused at run time."""
    elicit: Elicit | None = None
    """Ask the user for values with a form in the editor; None when the editor has none."""
    expected: object | None = None
    """What the user was shown before approving (tools/preview.py): the tool re-checks it
    before it acts and refuses to act on a stale approval."""
    session_id: str = ""
    """The calling session ("cli" for `acpd tools run`): what the native tools key on."""
    git_read_only: bool = False
    """The shell policy allowed this call only because it runs sandboxed (opaque code: a
    script, a build, an unmodelled option): its sandbox makes git directories read-only but
    for git's data (docs/sandbox.md), so it cannot plant what git obeys (commondir...)."""


Executor = Callable[[Any, ToolContext], Awaitable[ToolOutput]]
TitleFn = Callable[[Any], str]
LocationsFn = Callable[[Any, str], list[str]]


@dataclass(frozen=True, slots=True)
class Redaction:
    """What of a call may be logged verbatim (audit, telemetry): an allowlist per tool.

    Argument fields not in `args` are logged as a size only; result fields (keys of the
    tool's structured output) not in `result` are left out. Every string that is kept still
    goes through the secret scanner. A tool without a Redaction cannot be registered.
    """

    args: frozenset[str] = frozenset()
    result: frozenset[str] = frozenset()


def redaction(args: tuple[str, ...] = (), result: tuple[str, ...] = ()) -> Redaction:
    return Redaction(frozenset(args), frozenset(result))


@dataclass(slots=True)
class ToolInvocationRecord:
    """What happened in one call, redacted: what the audit log and the CLI report."""

    tool_call_id: str
    name: str
    args: dict[str, Any]
    """The redacted arguments (TAFC fields never included)."""
    result: dict[str, Any] | None
    """A redacted summary of the output; None when the call never ran."""
    error: dict[str, str] | None
    """{"category", "message"} of a failed call."""
    started_at: float
    ended_at: float

    def to_dict(self) -> dict[str, Any]:
        return {
            "toolCallId": self.tool_call_id, "name": self.name, "args": self.args,
            "result": self.result, "error": self.error, "startedAt": self.started_at,
            "endedAt": self.ended_at,
        }


@dataclass(frozen=True, slots=True)
class ToolSpec:
    id: str
    """Namespaced and unique: core__read, mcp__<server>__<tool>, plugin__<name>."""
    name: str
    """The short name the model and the slash commands use."""
    description: str
    params: type[BaseModel]
    effect: Effect
    kind: ToolKind
    execute: Executor
    title: TitleFn
    locations: LocationsFn = field(default=lambda _args, _cwd: [])
    redaction: Redaction | None = None
    """Required at registration (None is refused there, never treated as "log nothing")."""
    output_model: type[BaseModel] | None = None
    """When set, the tool's structured output (`ToolOutput.raw`) is validated against it."""
    retry_safe: bool | None = None
    """May the runner re-run it after a transient failure? None: only when read-only."""
    network: bool = False
    """It reaches the network: refused unless the shell policy's `allow_network` is true."""
    workspace_files: bool = True
    """May it change files in the workspace? False for tools whose state lives in acpd's data
    directory (memory, scheduler, knowledge): no workspace checkpoint is taken for them."""
    precheck: Callable[[Any], None] | None = None
    """Called with the validated arguments before the policy decision; raises ToolError to
    refuse a call that can never run (fetch: a URL the SSRF wall refuses without I/O)."""
    preview: PreviewFn | None = None
    """What the card shows before the call runs (a diff, what a delete takes away, the
    command and its directory): see tools/preview.py."""
    commands: Callable[[dict[str, Any], str], list[str]] | None = None
    """The shell command lines a call with these arguments (in this cwd) will run: the
    shell policy judges each as it judges bash's, and the strictest verdict counts."""

    def input_schema(self) -> dict[str, Any]:
        """The restricted JSON Schema (see tools/schema.py); raises SchemaError outside it."""
        from acpd.tools.schema import render_schema

        return render_schema(self.params)

    @property
    def can_retry(self) -> bool:
        return self.effect is Effect.READ_ONLY if self.retry_safe is None else self.retry_safe


def kind_for(name: str) -> ToolKind:
    """The seeds' mapping from tool name to ACP kind."""
    return _KINDS.get(name, "other")


_KINDS: dict[str, ToolKind] = {
    "bash": "execute",
    "shell": "execute",
    "read": "read",
    "list_directory": "read",
    "write": "edit",
    "edit": "edit",
    "grep": "search",
    "find": "search",
    "find_path": "search",
    "search": "search",
    "fetch": "fetch",
    "web_scrape": "fetch",
    "delete_path": "delete",
    "move_path": "move",
    "update_plan": "think",
}
