"""write and edit: atomic local writes, or the editor's fs/write_text_file after the same checks.

With the editor, the sandbox still resolves and vets the path (parents created beneath the
root, symlinked leaves followed only beneath it, FIFOs and hard-linked files refused) and the
editor receives the vetted absolute path. The editor opens that path itself, so a symlink
swapped into it after the check is outside our control: that window is the editor's.
"""

from __future__ import annotations

import functools
import os
from dataclasses import dataclass

import anyio.to_thread

from acpd.tools.errors import ToolError
from acpd.tools.fs.atomic import write_atomic
from acpd.tools.fs.config import FileToolsConfig
from acpd.tools.fs.errors import failed, from_os_error, invalid
from acpd.tools.fs.params import EditParams, WriteParams
from acpd.tools.fs.routing import editor_reads, editor_writes
from acpd.tools.fs.sandbox import Entry, Opened, Sandbox
from acpd.tools.preview import Preview, diff_content, fingerprint
from acpd.tools.spec import ToolContext, ToolOutput


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


def stale(path: str, expected: object | None, found: str | None) -> None:
    """Refuse to act when the file is not what the user was shown before approving.

    Raises ToolError(PermanentFailure); nothing is written then.
    """
    if isinstance(expected, Seen) and expected.fingerprint != found:
        raise failed(
            f"{path} changed after the preview the user approved (edited, created or removed "
            "in the meantime); nothing was written",
            "Read it again and redo the change if it is still wanted (a new call shows the "
            "new diff).",
        )


@dataclass(frozen=True, slots=True)
class Seen:
    """What the preview showed of the file a write or an edit replaces (preview.fingerprint)."""

    fingerprint: str | None


def _write_local(
    cfg: FileToolsConfig, ctx: ToolContext, path: str, content: str
) -> tuple[str, str | None, bool, str | None]:
    with cfg.sandbox(ctx) as sb:
        entry = sb.write_target(path, make_parents=True)
        try:
            st = entry.lstat()
            hidden = _hidden(sb, entry) if st is not None else None
            old = _old_text(sb, cfg, entry.real) if st is not None and not hidden else None
            stale(path, ctx.expected, fingerprint(old, st))
            write_atomic(entry.parent.fd, entry.name, content.encode("utf-8"),
                         st.st_mode if st is not None else None)
            return entry.real, old, st is not None, hidden
        except OSError as exc:
            raise from_os_error(exc, path) from None
        finally:
            entry.close()


def _vet_write(
    cfg: FileToolsConfig, ctx: ToolContext, path: str, *, make_parents: bool = True
) -> tuple[str, os.stat_result | None, str | None]:
    """(vetted real path, its lstat when it exists, why its old text may not be shown).

    Without `make_parents` nothing is created: a missing parent means a new file (the write
    creates the parents), checked against the path policy where it would be.
    """
    with cfg.sandbox(ctx) as sb:
        if not make_parents and not os.path.isdir(os.path.dirname(sb.would_be(path))):
            sb.precheck("write", path)
            return sb.would_be(path), None, None
        entry = sb.write_target(path, make_parents=make_parents)
        try:
            st = entry.lstat()
        except OSError as exc:
            raise from_os_error(exc, path) from None
        finally:
            entry.close()
        return entry.real, st, _hidden(sb, entry) if st is not None else None


def _hidden(sb: Sandbox, entry: Entry) -> str | None:
    """Why the old text of an existing file may not be shown (the read tool's rules)."""
    refused = sb.policy.refusal(entry.real, entry.root.real)
    if refused is None and sb.guard is not None and not sb.guard.allows("read", entry.real):
        refused = "the path policy does not let it be read"
    return refused


async def current_text(cfg: FileToolsConfig, ctx: ToolContext, real: str) -> str:
    """The text a write or an edit replaces: the editor's buffer (unsaved edits included) when
    the editor serves reads, else the file on disk. Raises ToolError or OSError."""
    if editor_reads(ctx.fs) and editor_writes(ctx.fs):
        try:
            return await ctx.fs.read_text(real)
        except UnicodeDecodeError:
            raise failed(f"{real} is not UTF-8 text (binary?)") from None
    return await anyio.to_thread.run_sync(_read_vetted, cfg, ctx, real)


async def _readable_text(
    cfg: FileToolsConfig, ctx: ToolContext, real: str, st: os.stat_result | None,
    hidden: str | None,
) -> str | None:
    if st is None or hidden is not None:
        return None
    try:
        return await current_text(cfg, ctx, real)
    except (OSError, ToolError):
        return None


async def write(args: WriteParams, ctx: ToolContext, cfg: FileToolsConfig) -> ToolOutput:
    """Create or replace a file (parents created). Raises ToolError (PermanentFailure when
    the file changed after the preview the user approved: nothing is written)."""
    if editor_writes(ctx.fs):
        real, st, hidden = await anyio.to_thread.run_sync(_vet_write, cfg, ctx, args.path)
        old = await _readable_text(cfg, ctx, real, st, hidden)
        stale(args.path, ctx.expected, fingerprint(old, st))
        try:
            await ctx.fs.write_text(real, args.content)
        except OSError as exc:
            raise from_os_error(exc, args.path) from None
        target, existed = "editor", st is not None
    else:
        real, old, existed, hidden = await anyio.to_thread.run_sync(
            _write_local, cfg, ctx, args.path, args.content)
        target = "disk"
    size = len(args.content.encode("utf-8"))
    verb = "Wrote" if existed else "Created"
    return ToolOutput(
        f"{verb} {args.path} ({size} bytes)",
        raw={"path": real, "bytes": size, "target": target},
        content=diff_content(real, old, args.content, existed=existed, hidden=hidden),
    )


async def preview_write(
    args: WriteParams, ctx: ToolContext, cfg: FileToolsConfig, asking: bool
) -> Preview:
    """The diff a write will make, read the way the write reads (no side effects)."""
    if not asking:
        return Preview()
    real, st, hidden = await anyio.to_thread.run_sync(
        functools.partial(_vet_write, cfg, ctx, args.path, make_parents=False))
    old = await _readable_text(cfg, ctx, real, st, hidden)
    content = diff_content(real, old, args.content, existed=st is not None, hidden=hidden)
    return Preview(content=content, locations=[real], expected=Seen(fingerprint(old, st)))


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
        stale(args.path, ctx.expected, fingerprint(old, None))
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
    """The real path once the sandbox allows reading and replacing it (no side effects)."""
    with cfg.sandbox(ctx) as sb:
        opened = sb.open_file(path)
        opened.close()
        sb.write_target(opened.real).close()
        return opened.real


async def _edited(args: EditParams, ctx: ToolContext, cfg: FileToolsConfig) -> tuple[str, str, str]:
    """(real path, old text, new text) of an edit through the editor, not yet written."""
    real = await anyio.to_thread.run_sync(_vet_edit, cfg, ctx, args.path)
    try:
        old = await current_text(cfg, ctx, real)
    except OSError as exc:
        raise from_os_error(exc, args.path) from None
    return real, old, replace_once(old, args)


async def edit(args: EditParams, ctx: ToolContext, cfg: FileToolsConfig) -> ToolOutput:
    """Replace the unique occurrence of old_string; the output carries the diff.

    Raises ToolError: PermanentFailure when old_string matches 0 or several times or the file
    changed after the preview the user approved, InvalidParameters when it equals new_string,
    sandbox refusals as PolicyBlocked.
    """
    if args.old_string == args.new_string:
        raise invalid("old_string and new_string are the same")
    if editor_writes(ctx.fs):
        real = await anyio.to_thread.run_sync(_vet_edit, cfg, ctx, args.path)
        try:
            old = await current_text(cfg, ctx, real)
            stale(args.path, ctx.expected, fingerprint(old, None))
            new = replace_once(old, args)
            await ctx.fs.write_text(real, new)
        except OSError as exc:
            raise from_os_error(exc, args.path) from None
    else:
        real, old, new = await anyio.to_thread.run_sync(_edit_local, cfg, ctx, args)
    return ToolOutput(
        f"Edited {args.path}: replaced 1 occurrence",
        raw={"path": real},
        content=diff_content(real, old, new, existed=True),
    )


async def preview_edit(
    args: EditParams, ctx: ToolContext, cfg: FileToolsConfig, asking: bool
) -> Preview:
    """The diff an edit will make, read the way the edit reads (no side effects)."""
    if not asking or args.old_string == args.new_string:
        return Preview()
    real, old, new = await _edited(args, ctx, cfg)
    return Preview(content=diff_content(real, old, new, existed=True), locations=[real],
                   expected=Seen(fingerprint(old, None)))


def _read_vetted(cfg: FileToolsConfig, ctx: ToolContext, path: str) -> str:
    with cfg.sandbox(ctx) as sb:
        return read_whole(sb.open_file(path), cfg, path)
