"""write and edit: atomic local writes, or the editor's fs/write_text_file after the same checks.

With the editor, the sandbox still resolves and vets the path (parents created beneath the
root, symlinked leaves followed only beneath it, FIFOs and hard-linked files refused) and the
editor receives the vetted absolute path. The editor opens that path itself, so a symlink
swapped into it after the check is outside our control: that window is the editor's.
"""

from __future__ import annotations

import os

import anyio.to_thread

from acpd.tools.errors import ToolError
from acpd.tools.fs.atomic import write_atomic
from acpd.tools.fs.config import FileToolsConfig
from acpd.tools.fs.errors import failed, from_os_error, invalid
from acpd.tools.fs.params import EditParams, WriteParams
from acpd.tools.fs.routing import editor_reads, editor_writes
from acpd.tools.fs.sandbox import Opened, Sandbox
from acpd.tools.spec import DiffItem, ToolContext, ToolOutput


def read_whole(opened: Opened, cfg: FileToolsConfig, shown: str) -> str:
    """The UTF-8 text of the file open at `opened` (closed here). Raises ToolError."""
    try:
        if opened.st.st_size > cfg.max_file_bytes:
            raise failed(f"{shown} is larger than {cfg.max_file_bytes} bytes")
        with os.fdopen(opened.fd, "rb") as handle:
            opened.fd = -1
            data = handle.read(cfg.max_file_bytes + 1)
    finally:
        opened.close()
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        raise failed(f"{shown} is not UTF-8 text (binary?)") from None


def _old_text(sb: Sandbox, cfg: FileToolsConfig, real: str) -> str | None:
    """The current text for the diff, when the read policy lets the model see it."""
    try:
        return read_whole(sb.open_file(real), cfg, real)
    except ToolError:
        return None


def _write_local(
    cfg: FileToolsConfig, ctx: ToolContext, path: str, content: str
) -> tuple[str, str | None]:
    with cfg.sandbox(ctx) as sb:
        entry = sb.write_target(path, make_parents=True)
        try:
            st = entry.lstat()
            old = _old_text(sb, cfg, entry.real) if st is not None else None
            write_atomic(entry.parent.fd, entry.name, content.encode("utf-8"),
                         st.st_mode if st is not None else None)
            return entry.real, old
        except OSError as exc:
            raise from_os_error(exc, path) from None
        finally:
            entry.close()


def _vet_write(cfg: FileToolsConfig, ctx: ToolContext, path: str) -> tuple[str, bool]:
    """(vetted real path, whether it exists and the policy lets its old text be shown)."""
    with cfg.sandbox(ctx) as sb:
        entry = sb.write_target(path, make_parents=True)
        try:
            exists = entry.lstat() is not None
        except OSError as exc:
            raise from_os_error(exc, path) from None
        finally:
            entry.close()
        readable = exists and sb.policy.refusal(entry.real, entry.root.real) is None and (
            sb.guard is None or sb.guard.allows("read", entry.real))
        return entry.real, readable


async def write(args: WriteParams, ctx: ToolContext, cfg: FileToolsConfig) -> ToolOutput:
    """Create or replace a file (parents created). Raises ToolError."""
    if editor_writes(ctx.fs):
        real, readable = await anyio.to_thread.run_sync(_vet_write, cfg, ctx, args.path)
        old: str | None = None
        if readable and editor_reads(ctx.fs):
            try:
                old = await ctx.fs.read_text(real)
            except (OSError, UnicodeDecodeError):
                old = None
        try:
            await ctx.fs.write_text(real, args.content)
        except OSError as exc:
            raise from_os_error(exc, args.path) from None
        target = "editor"
    else:
        real, old = await anyio.to_thread.run_sync(_write_local, cfg, ctx, args.path, args.content)
        target = "disk"
    size = len(args.content.encode("utf-8"))
    verb = "Created" if old is None else "Wrote"
    return ToolOutput(
        f"{verb} {args.path} ({size} bytes)",
        raw={"path": real, "bytes": size, "target": target},
        content=[DiffItem(real, old, args.content)],
    )


def replace_once(text: str, args: EditParams) -> str:
    """`text` with the single occurrence of old_string replaced. Raises ToolError."""
    count = text.count(args.old_string)
    if count == 0:
        raise failed(
            f"old_string was not found in {args.path}",
            "Read the file and copy old_string exactly, whitespace included.",
        )
    if count > 1:
        raise failed(
            f"old_string occurs {count} times in {args.path}; it must be unique",
            "Include more surrounding lines in old_string so that it matches once.",
        )
    return text.replace(args.old_string, args.new_string, 1)


def _edit_local(cfg: FileToolsConfig, ctx: ToolContext, args: EditParams) -> tuple[str, str, str]:
    with cfg.sandbox(ctx) as sb:
        opened = sb.open_file(args.path)
        real, identity, mode = opened.real, (opened.st.st_dev, opened.st.st_ino), opened.st.st_mode
        old = read_whole(opened, cfg, args.path)
        new = replace_once(old, args)
        entry = sb.write_target(real)
        try:
            st = entry.lstat()
            if st is None or (st.st_dev, st.st_ino) != identity:
                raise failed(f"{args.path} changed while it was edited", "Read it again.")
            write_atomic(entry.parent.fd, entry.name, new.encode("utf-8"), mode)
        except OSError as exc:
            raise from_os_error(exc, args.path) from None
        finally:
            entry.close()
        return real, old, new


def _vet_edit(cfg: FileToolsConfig, ctx: ToolContext, path: str) -> str:
    with cfg.sandbox(ctx) as sb:
        opened = sb.open_file(path)
        opened.close()
        sb.write_target(opened.real).close()
        return opened.real


async def edit(args: EditParams, ctx: ToolContext, cfg: FileToolsConfig) -> ToolOutput:
    """Replace the unique occurrence of old_string; the output carries the diff.

    Raises ToolError: PermanentFailure when old_string matches 0 or several times,
    InvalidParameters when it equals new_string, sandbox refusals as PolicyBlocked.
    """
    if args.old_string == args.new_string:
        raise invalid("old_string and new_string are the same")
    if editor_writes(ctx.fs):
        real = await anyio.to_thread.run_sync(_vet_edit, cfg, ctx, args.path)
        try:
            if editor_reads(ctx.fs):
                old = await ctx.fs.read_text(real)
            else:
                old = await anyio.to_thread.run_sync(_read_vetted, cfg, ctx, real)
            new = replace_once(old, args)
            await ctx.fs.write_text(real, new)
        except UnicodeDecodeError:
            raise failed(f"{args.path} is not UTF-8 text (binary?)") from None
        except OSError as exc:
            raise from_os_error(exc, args.path) from None
    else:
        real, old, new = await anyio.to_thread.run_sync(_edit_local, cfg, ctx, args)
    return ToolOutput(
        f"Edited {args.path}: replaced 1 occurrence",
        raw={"path": real},
        content=[DiffItem(real, old, new)],
    )


def _read_vetted(cfg: FileToolsConfig, ctx: ToolContext, path: str) -> str:
    with cfg.sandbox(ctx) as sb:
        return read_whole(sb.open_file(path), cfg, path)
