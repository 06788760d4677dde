"""File tools: read, list_directory. Paths are resolved inside the session's roots first."""

from __future__ import annotations

import os

from pydantic import BaseModel, ConfigDict, Field

from acpd.policy.paths import OutsideSandbox, resolve_in_roots
from acpd.tools.errors import ErrorCategory, ToolError
from acpd.tools.spec import Effect, ToolContext, ToolOutput, ToolSpec

MAX_READ_CHARS = 256 * 1024


class ToolParams(BaseModel):
    model_config = ConfigDict(extra="forbid")


class ReadParams(ToolParams):
    path: str = Field(description="File to read, relative to the workspace or absolute inside it")
    offset: int | None = Field(None, ge=1, description="First line to read (1-based)")
    limit: int | None = Field(None, ge=1, description="Maximum number of lines to read")


class ListDirectoryParams(ToolParams):
    path: str = Field(".", description="Directory to list, relative to the workspace")


def absolute(path: str, cwd: str) -> str:
    return os.path.normpath(os.path.join(cwd, path))


def sandboxed(path: str, ctx: ToolContext) -> str:
    try:
        return resolve_in_roots(path, ctx.cwd, ctx.roots)
    except OutsideSandbox as exc:
        raise ToolError(ErrorCategory.POLICY_BLOCKED, str(exc)) from None


def os_error(exc: OSError | UnicodeDecodeError, path: str) -> ToolError:
    if isinstance(exc, UnicodeDecodeError):
        return ToolError(ErrorCategory.PERMANENT_FAILURE, f"{path} is not UTF-8 text")
    reason = exc.strerror or type(exc).__name__
    return ToolError(ErrorCategory.PERMANENT_FAILURE, f"{path}: {reason}")


async def read(args: ReadParams, ctx: ToolContext) -> ToolOutput:
    path = sandboxed(args.path, ctx)
    try:
        text = await ctx.fs.read_text(path, args.offset, args.limit)
    except (OSError, UnicodeDecodeError) as exc:
        raise os_error(exc, args.path) from None
    if len(text) > MAX_READ_CHARS:
        shown = text[:MAX_READ_CHARS]
        lines = shown.count("\n")
        note = (
            f"\n[truncated: showed {MAX_READ_CHARS} of {len(text)} characters; "
            f"continue with offset={(args.offset or 1) + lines}]"
        )
        return ToolOutput(shown + note, raw={"path": path, "truncated": True})
    return ToolOutput(text, raw={"path": path, "truncated": False})


async def list_directory(args: ListDirectoryParams, ctx: ToolContext) -> ToolOutput:
    path = sandboxed(args.path, ctx)
    try:
        entries = await ctx.fs.list_dir(path)
    except OSError as exc:
        raise os_error(exc, args.path) from None
    lines = [f"[{kind}] {name}" for name, kind in entries]
    return ToolOutput("\n".join(lines) if lines else "(empty directory)", raw={"path": path})


SPECS = [
    ToolSpec(
        id="core__read",
        name="read",
        description="Read a text file. Use offset and limit for large files.",
        params=ReadParams,
        effect=Effect.READ_ONLY,
        kind="read",
        execute=read,
        title=lambda a: f"Read {a.path}",
        locations=lambda a, cwd: [absolute(a.path, cwd)],
    ),
    ToolSpec(
        id="core__list_directory",
        name="list_directory",
        description="List a directory; entries are marked [dir], [file] or [symlink].",
        params=ListDirectoryParams,
        effect=Effect.READ_ONLY,
        kind="read",
        execute=list_directory,
        title=lambda a: f"List {a.path}",
        locations=lambda a, cwd: [absolute(a.path, cwd)],
    ),
]
