"""read and list_directory on the sandbox; read goes through the editor when it serves reads."""

from __future__ import annotations

import os
import stat

import anyio.to_thread

from acpd.tools.fs.atomic import is_temp_name
from acpd.tools.fs.config import FileToolsConfig
from acpd.tools.fs.errors import failed, from_os_error
from acpd.tools.fs.params import ListDirectoryParams, ReadParams
from acpd.tools.fs.routing import editor_reads
from acpd.tools.spec import ToolContext, ToolOutput


def vet_read(cfg: FileToolsConfig, ctx: ToolContext, path: str) -> str:
    """The real path of `path` once the sandbox allows reading it. Raises ToolError."""
    with cfg.sandbox(ctx) as sb:
        opened = sb.open_file(path)
        opened.close()
        return opened.real


def read_lines(fd: int, offset: int | None, limit: int | None, shown: str) -> str:
    """Lines `offset`.. (1-based), at most `limit`, of the file open at `fd` (closed here).

    Raises ToolError(PermanentFailure) when the file is not UTF-8 text.
    """
    start = (offset or 1) - 1
    picked: list[str] = []
    with os.fdopen(fd, "rb") as handle:
        try:
            for number, raw in enumerate(handle):
                if number < start:
                    continue
                if limit is not None and len(picked) >= limit:
                    break
                picked.append(raw.decode("utf-8"))
        except UnicodeDecodeError:
            raise failed(f"{shown} is not UTF-8 text (binary?)") from None
    return "".join(picked)


def cap_text(text: str, cfg: FileToolsConfig, offset: int | None) -> tuple[str, bool]:
    if len(text) <= cfg.max_read_chars:
        return text, False
    shown = text[: cfg.max_read_chars]
    lines = shown.count("\n")
    note = (
        f"\n[truncated: showed {cfg.max_read_chars} of {len(text)} characters; "
        f"continue with offset={(offset or 1) + lines}]"
    )
    return shown + note, True


def _read_local(cfg: FileToolsConfig, ctx: ToolContext, args: ReadParams) -> tuple[str, str]:
    with cfg.sandbox(ctx) as sb:
        opened = sb.open_file(args.path)
        return read_lines(opened.fd, args.offset, args.limit, args.path), opened.real


async def read(args: ReadParams, ctx: ToolContext, cfg: FileToolsConfig) -> ToolOutput:
    """Read a text file: the editor's buffer when it serves reads, else the disk.

    Raises ToolError: PolicyBlocked for sandbox refusals, PermanentFailure for missing,
    non-text or unreadable files.
    """
    if editor_reads(ctx.fs):
        real = await anyio.to_thread.run_sync(vet_read, cfg, ctx, args.path)
        try:
            text = await ctx.fs.read_text(real, args.offset, args.limit)
        except UnicodeDecodeError:
            raise failed(f"{args.path} is not UTF-8 text (binary?)") from None
        except OSError as exc:
            raise from_os_error(exc, args.path) from None
        source = "editor"
    else:
        text, real = await anyio.to_thread.run_sync(_read_local, cfg, ctx, args)
        source = "disk"
    shown, truncated = cap_text(text, cfg, args.offset)
    return ToolOutput(shown, raw={"path": real, "source": source, "truncated": truncated})


def kind_of(mode: int) -> str:
    if stat.S_ISLNK(mode):
        return "symlink"
    if stat.S_ISDIR(mode):
        return "dir"
    if stat.S_ISREG(mode):
        return "file"
    return "other"


def _list(cfg: FileToolsConfig, ctx: ToolContext, path: str) -> tuple[list[tuple[str, str]], str]:
    with cfg.sandbox(ctx) as sb:
        opened = sb.open_dir(path)
        try:
            with os.scandir(opened.fd) as it:
                names = [e.name for e in it if not is_temp_name(e.name)]
            entries: list[tuple[str, str]] = []
            for name in names:
                try:
                    mode = os.stat(name, dir_fd=opened.fd, follow_symlinks=False).st_mode
                except FileNotFoundError:
                    continue
                entries.append((name, kind_of(mode)))
        except OSError as exc:
            raise from_os_error(exc, path) from None
        finally:
            opened.close()
        return sorted(entries, key=lambda e: (e[1] != "dir", e[0])), opened.real


async def list_directory(
    args: ListDirectoryParams, ctx: ToolContext, cfg: FileToolsConfig
) -> ToolOutput:
    """List a directory, classifying entries by lstat. Raises ToolError."""
    entries, real = await anyio.to_thread.run_sync(_list, cfg, ctx, args.path)
    lines = [f"[{kind}] {name}" for name, kind in entries]
    text = "\n".join(lines) if lines else "(empty directory)"
    return ToolOutput(text, raw={"path": real, "entries": len(entries)})
