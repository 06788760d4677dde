"""The file tools as ToolSpecs (ids `core__<name>`), bound to one FileToolsConfig."""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

from pydantic import BaseModel

from acpd.tools.fs import mutating, previews, reading, searching, writing
from acpd.tools.fs.config import FileToolsConfig
from acpd.tools.fs.params import (
    EditParams,
    FindPathParams,
    GrepParams,
    ListDirectoryParams,
    PathParams,
    ReadParams,
    SourceDestinationParams,
    WriteParams,
)
from acpd.tools.preview import Preview, PreviewFn
from acpd.tools.spec import (
    Effect,
    Executor,
    ToolContext,
    ToolOutput,
    ToolSpec,
    kind_for,
    redaction,
)

P = TypeVar("P", bound=BaseModel)
LOGGED_RESULT = ("path", "truncated", "entries", "bytes", "source", "target", "matches", "files")
"""The result fields the audit log keeps (never a file's content)."""
Impl = Callable[[P, ToolContext, FileToolsConfig], Awaitable[ToolOutput]]


def _bind(impl: Impl[P], cfg: FileToolsConfig, tool_id: str, name: str) -> Executor:
    async def execute(args: Any, ctx: ToolContext) -> ToolOutput:
        if cfg.paths is None:
            return await impl(args, ctx, cfg)
        # The path policy as it is now (a reload applies at once), judged on real paths.
        guard = await cfg.paths.guard(ctx, tool_id, name, cfg.roots_for(ctx))
        return await impl(args, ctx, dataclasses.replace(cfg, guard=guard))

    execute.__name__ = getattr(impl, "__name__", "execute")
    return execute


def _bind_preview(impl: Callable[..., Awaitable[Preview]], cfg: FileToolsConfig, tool_id: str,
                  name: str) -> PreviewFn:
    """The preview under the same path policy as the call (see `_bind`)."""
    async def preview(args: Any, ctx: ToolContext, asking: bool) -> Preview:
        if cfg.paths is None:
            return await impl(args, ctx, cfg, asking)
        guard = await cfg.paths.guard(ctx, tool_id, name, cfg.roots_for(ctx))
        return await impl(args, ctx, dataclasses.replace(cfg, guard=guard), asking)

    return preview


def _at(*fields: str) -> Callable[[Any, str], list[str]]:
    def locations(args: Any, cwd: str) -> list[str]:
        return [os.path.normpath(os.path.join(cwd, getattr(args, f))) for f in fields]

    return locations


def make_fs_specs(cfg: FileToolsConfig | None = None) -> list[ToolSpec]:
    """The ten file tools; pass a config for allowed_paths, deny_read/allow_read and limits."""
    cfg = cfg or FileToolsConfig()
    ro, rw = Effect.READ_ONLY, Effect.STATE_CHANGE

    def spec(
        name: str, description: str, params: type[BaseModel], effect: Effect, impl: Impl[Any],
        title: Callable[[Any], str], *fields: str, logged: tuple[str, ...] = (),
        preview: Callable[..., Awaitable[Preview]] | None = None,
    ) -> ToolSpec:
        """`fields` are the paths (the call's locations); the audit log keeps them and the
        `logged` arguments, and only the size of any other (content, edit strings)."""
        return ToolSpec(
            id=f"core__{name}", name=name, description=description, params=params,
            effect=effect, kind=kind_for(name), execute=_bind(impl, cfg, f"core__{name}", name),
            title=title,
            locations=_at(*fields), redaction=redaction((*fields, *logged), LOGGED_RESULT),
            preview=_bind_preview(preview, cfg, f"core__{name}", name) if preview else None,
        )

    return [
        spec("read", "Read a text file. Use offset and limit (lines) for large files.",
             ReadParams, ro, reading.read, lambda a: f"Read {a.path}", "path",
             logged=("offset", "limit")),
        spec("list_directory", "List a directory; entries are marked [dir], [file] or "
             "[symlink].", ListDirectoryParams, ro, reading.list_directory,
             lambda a: f"List {a.path}", "path"),
        spec("find_path", "Find paths under a directory matching a glob pattern.",
             FindPathParams, ro, searching.find_path,
             lambda a: f"Find {a.pattern} in {a.path}", "path", logged=("pattern",)),
        spec("grep", "Search file contents with a regular expression; skips binary and "
             ".gitignored files.", GrepParams, ro, searching.grep,
             lambda a: f"Grep {a.pattern!r} in {a.path}", "path",
             logged=("pattern", "case_sensitive")),
        spec("write", "Create or overwrite a file with the given content.",
             WriteParams, rw, writing.write, lambda a: f"Write {a.path}", "path",
             preview=writing.preview_write),
        spec("edit", "Replace one exact, unique occurrence of old_string with new_string.",
             EditParams, rw, writing.edit, lambda a: f"Edit {a.path}", "path",
             preview=writing.preview_edit),
        spec("create_directory", "Create a directory, including missing parents.",
             PathParams, rw, mutating.create_directory,
             lambda a: f"Create directory {a.path}", "path",
             preview=previews.preview_create_directory),
        spec("delete_path", "Delete a file or a directory (recursively); symlinks are removed, "
             "not followed.", PathParams, rw, mutating.delete_path,
             lambda a: f"Delete {a.path}", "path", preview=previews.preview_delete),
        spec("move_path", "Move or rename a file or directory; the destination must not exist.",
             SourceDestinationParams, rw, mutating.move_path,
             lambda a: f"Move {a.source} to {a.destination}", "source", "destination",
             preview=previews.preview_move),
        spec("copy_path", "Copy a file or directory; symlinks are copied as symlinks.",
             SourceDestinationParams, rw, mutating.copy_path,
             lambda a: f"Copy {a.source} to {a.destination}", "source", "destination",
             preview=previews.preview_copy),
    ]
