"""Previews of delete_path, move_path, copy_path and create_directory: what the user is told
before approving (tools/preview.py), with no side effects.

A delete or a move names what goes: a file and its size, a symlink and its target (kept), or a
directory with the counts of what it holds and its first PREVIEW_NAMES entries. Names the read
policy hides are counted, never named. Counting stops at the walk limit and says so.
"""

from __future__ import annotations

import os
import stat

import anyio.to_thread

from acpd.tools.fs.config import FileToolsConfig
from acpd.tools.fs.errors import from_os_error
from acpd.tools.fs.mutating import existing
from acpd.tools.fs.params import PathParams, SourceDestinationParams
from acpd.tools.fs.sandbox import Entry, Sandbox
from acpd.tools.fs.walk import SUBDIR_FLAGS, Budget, walk
from acpd.tools.preview import Preview
from acpd.tools.spec import TextItem, ToolContext

PREVIEW_NAMES = 12
"""Entries of a directory named in a delete or move preview; the rest are counted."""


def describe(sb: Sandbox, cfg: FileToolsConfig, entry: Entry, st: os.stat_result) -> str:
    """What is at `entry`: a file and its size, a symlink and its target, or a directory with
    the counts of what it holds and the first names (names the read policy hides are counted,
    never named). Bounded by the walk limit, which it says when reached."""
    if stat.S_ISLNK(st.st_mode):
        target = os.readlink(entry.name, dir_fd=entry.parent.fd)
        return f"the symlink {entry.real} (-> {target}; its target is kept)"
    if not stat.S_ISDIR(st.st_mode):
        return f"the file {entry.real} ({st.st_size} bytes)"
    counts = {"files": 0, "directories": 0, "symlinks": 0, "other": 0}
    names: list[str] = []
    hidden, size = 0, 0
    budget = Budget(cfg.walk_limit)
    fd = os.open(entry.name, SUBDIR_FLAGS, dir_fd=entry.parent.fd)
    try:
        for item in walk(fd, budget):
            kind = ("directories" if item.is_dir else "symlinks" if item.is_link
                    else "files" if stat.S_ISREG(item.st.st_mode) else "other")
            counts[kind] += 1
            size += item.st.st_size if kind == "files" else 0
            real = os.path.join(entry.real, item.rel)
            if sb.policy.refusal(real, entry.root.real, is_dir=item.is_dir) is not None:
                hidden += 1
            elif len(names) < PREVIEW_NAMES:
                names.append(item.rel + ("/" if item.is_dir else ""))
    finally:
        os.close(fd)
    what = ", ".join(f"{n} {k}" for k, n in counts.items() if n) or "nothing"
    text = f"the directory {entry.real} and everything in it: {what} ({size} bytes in files)"
    if budget.exhausted:
        text += f"; counting stopped at {cfg.walk_limit} entries, there are more"
    listed = sum(counts.values()) - hidden
    if names:
        more = f", and {listed - len(names)} more" if listed > len(names) else ""
        text += "\n" + "\n".join(f"  {n}" for n in names) + more
    if hidden:
        text += f"\n  ({hidden} entries the read policy hides are not named)"
    return text


def _look(cfg: FileToolsConfig, ctx: ToolContext, path: str) -> tuple[str, str]:
    """(real path, description) of an existing entry. Raises ToolError."""
    with cfg.sandbox(ctx) as sb:
        entry = sb.entry(path)
        try:
            return entry.real, describe(sb, cfg, entry, existing(entry))
        except OSError as exc:
            raise from_os_error(exc, path) from None
        finally:
            entry.close()


def _where(cfg: FileToolsConfig, ctx: ToolContext, path: str) -> str:
    with cfg.sandbox(ctx) as sb:
        return sb.would_be(path)


async def preview_delete(
    args: PathParams, ctx: ToolContext, cfg: FileToolsConfig, asking: bool
) -> Preview:
    if not asking:
        return Preview()
    real, what = await anyio.to_thread.run_sync(_look, cfg, ctx, args.path)
    return Preview(content=[TextItem(f"Deletes {what}.")], locations=[real])


async def preview_move(
    args: SourceDestinationParams, ctx: ToolContext, cfg: FileToolsConfig, asking: bool
) -> Preview:
    if not asking:
        return Preview()
    real, what = await anyio.to_thread.run_sync(_look, cfg, ctx, args.source)
    dest = await anyio.to_thread.run_sync(_where, cfg, ctx, args.destination)
    text = f"Moves {what}\nto {dest} (which must not exist); nothing is left at {real}."
    return Preview(content=[TextItem(text)], locations=[real, dest])


async def preview_copy(
    args: SourceDestinationParams, ctx: ToolContext, cfg: FileToolsConfig, asking: bool
) -> Preview:
    if not asking:
        return Preview()
    real, what = await anyio.to_thread.run_sync(_look, cfg, ctx, args.source)
    dest = await anyio.to_thread.run_sync(_where, cfg, ctx, args.destination)
    text = f"Copies {what}\nto {dest} (which must not exist); the source is kept."
    return Preview(content=[TextItem(text)], locations=[real, dest])


async def preview_create_directory(
    args: PathParams, ctx: ToolContext, cfg: FileToolsConfig, asking: bool
) -> Preview:
    if not asking:
        return Preview()
    dest = await anyio.to_thread.run_sync(_where, cfg, ctx, args.path)
    return Preview(content=[TextItem(f"Creates the directory {dest} and any missing parents.")],
                   locations=[dest])
