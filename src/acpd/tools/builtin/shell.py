"""The bash tool. Where it runs (editor terminal or local process group) is the runner's job."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from acpd.tools.capabilities import Cleanup, CommandRequest, CommandResult
from acpd.tools.errors import ErrorCategory, ToolError, classify_exit
from acpd.tools.preview import Preview
from acpd.tools.spec import (
    ContentItem,
    Effect,
    Redaction,
    TerminalItem,
    TextItem,
    ToolContext,
    ToolOutput,
    ToolSpec,
)

MAX_TIMEOUT = 3600


class ShellOutputEnvelope(BaseModel):
    """A shell call's structured result (the editor's rawOutput, the audit's exit_code and
    truncated). stdout and stderr are separate where the runner can tell them apart (a local
    process); an editor terminal mixes them, so all of it is in stdout."""

    model_config = ConfigDict(extra="forbid")

    stdout: str
    stderr: str = ""
    exit_code: int | None
    """None when the command has no exit status: killed by a signal or at the timeout."""
    truncated: bool = False
    timed_out: bool = False
    rollback: list[str] | None = None
    """Transactional shell: the paths restored after a failing exit code."""
    error_category: str | None = None
    """The failure's error category (126, 127, "No such file", a timeout), else absent."""
    sandbox: str | None = None
    """How the command was confined: "bwrap", "bwrap (incomplete)" or "none: <why>"."""
    sandbox_notes: list[str] | None = None
    """What the sandbox did not enforce for this command."""

    def to_raw(self) -> dict[str, Any]:
        raw = self.model_dump()
        for key in ("rollback", "error_category", "sandbox", "sandbox_notes"):
            if raw[key] is None:
                del raw[key]
        if not self.timed_out:
            del raw["timed_out"]
        return raw


class BashParams(BaseModel):
    model_config = ConfigDict(extra="forbid")

    command: str = Field(min_length=1, description="The bash command to run")
    timeout: int | None = Field(
        None, ge=1, le=MAX_TIMEOUT, description="Seconds before the command is killed"
    )


async def bash(args: BashParams, ctx: ToolContext) -> ToolOutput:
    terminal: list[ContentItem] = []

    async def on_terminal(terminal_id: str, release: Cleanup) -> None:
        ctx.defer(release)
        terminal[:] = [TerminalItem(terminal_id)]
        await ctx.publish(list(terminal))

    async def on_output(text: str) -> None:
        # The terminal stays embedded beside the latest output (editors that render it
        # show it live; the text is for those that do not, and for the record).
        await ctx.publish([*terminal, TextItem(text)])

    request = CommandRequest(
        command=args.command,
        cwd=ctx.cwd,
        timeout=float(args.timeout or ctx.shell_timeout),
        output_byte_limit=ctx.output_byte_limit,
        roots=ctx.roots,
        call_id=ctx.tool_call_id,
        git_read_only=ctx.git_read_only,
    )
    try:
        result = await ctx.runner.run(request, on_terminal, on_output)
    except OSError as exc:
        raise ToolError(ErrorCategory.PERMANENT_FAILURE, f"cannot start bash: {exc}") from None
    return shell_output(result, request.timeout)


def card_title(command: str, cwd: str) -> str:
    """The card's title: the command as it will run (cut past 200 characters, said with
    "...") and the directory it runs in."""
    shown = command if len(command) <= 200 else command[:197] + "..."
    return f"{shown} (in {cwd})"


async def preview(args: BashParams, ctx: ToolContext, _asking: bool) -> Preview:
    """The command, its directory and its timeout on the card while it waits (and after)."""
    timeout = args.timeout or ctx.shell_timeout
    return Preview(
        title=card_title(args.command, ctx.cwd),
        raw_input={"command": args.command, "cwd": ctx.cwd, "timeout": timeout},
    )


def shell_output(result: CommandResult, timeout: float) -> ToolOutput:
    text = result.output
    notes: list[str] = []
    if result.truncated:
        notes.append("[output truncated: only the last part is shown]")
    if result.timed_out:
        notes.append(f"[timed out after {timeout:g} s; the process tree was killed]")
    if result.signal:
        notes.append(f"[killed by signal {result.signal}]")
    notes.append(f"[exit code: {result.exit_code if result.exit_code is not None else 'none'}]")
    notes.extend(result.notes)
    notes.extend(_sandbox_notes(result))
    category = classify_exit(result.exit_code, result.stderr or result.output)
    if result.timed_out:
        category = ErrorCategory.TIMEOUT
    if category is not None:
        # A classified failure reaches the model as the taxonomy's block, after the output.
        notes.append(exit_error(result, category, timeout).format_for_model())
    body = text if text.endswith("\n") or not text else text + "\n"
    envelope = ShellOutputEnvelope(
        stdout=result.output if not result.stderr else _without(result.output, result.stderr),
        stderr=result.stderr,
        exit_code=result.exit_code,
        truncated=result.truncated,
        timed_out=result.timed_out,
        rollback=result.rollback,
        error_category=category.value if category is not None else None,
        sandbox=result.sandbox,
        sandbox_notes=list(result.sandbox_notes) or None,
    )
    content: list[ContentItem] = [TerminalItem(result.terminal_id)] if result.terminal_id else []
    return ToolOutput(
        text=body + "\n".join(notes),
        raw=envelope.to_raw(),
        content=content,
        failed=result.exit_code != 0 or result.timed_out,
        body_end=len(body),  # the notes above are appended after filtering, never filtered
    )


def exit_error(result: CommandResult, category: ErrorCategory, timeout: float) -> ToolError:
    """The `[tool_error]` for a classified exit: the exit and the line that explains it."""
    if result.timed_out:
        return ToolError(category, f"the command timed out after {timeout:g} s")
    text = result.stderr or result.output
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    lowered = [line.lower() for line in lines]
    marks = ("not found", "no such file", "permission denied", "cannot execute")
    why = next((lines[i] for i, low in enumerate(lowered) if any(m in low for m in marks)), "")
    why = why or (lines[-1] if lines else "")
    message = f"exit code {result.exit_code}" + (f": {why[:300]}" if why else "")
    return ToolError(category, message)


def _sandbox_notes(result: CommandResult) -> list[str]:
    """Said in the text only when the sandbox fell short or has something to report (the raw
    output and the audit always carry `sandbox`)."""
    if result.sandbox is not None and result.sandbox.startswith("none"):
        return [f"[NOT sandboxed: {result.sandbox.removeprefix('none: ')}]"]
    notes = [f"[sandbox: {note}]" for note in result.sandbox_notes]
    if result.sandbox is not None and result.sandbox.endswith("(incomplete)") and not notes:
        notes.append(f"[sandbox: {result.sandbox}]")
    return notes


def _without(output: str, stderr: str) -> str:
    return output.replace(stderr, "", 1) if stderr in output else output


SPECS = [
    ToolSpec(
        id="core__bash",
        name="bash",
        description=(
            "Run a bash command in the workspace (the editor's terminal when it has one). "
            "Output is capped; long-running commands are killed at the timeout."
        ),
        params=BashParams,
        effect=Effect.EXTERNAL_SIDE_EFFECT,
        kind="execute",
        execute=bash,
        title=lambda a: a.command if len(a.command) <= 200 else a.command[:197] + "...",
        # The command is the call: it is logged (after the secret scan); the output is not.
        redaction=Redaction(
            frozenset({"command", "timeout"}),
            frozenset({"exit_code", "truncated", "timed_out", "rollback", "error_category",
                       "sandbox", "sandbox_notes"}),
        ),
        output_model=ShellOutputEnvelope,
        preview=preview,
    ),
]
