"""The runner's side of checkpoints: one store per workspace under the data dir, a
checkpoint before a call that may change files and one after it, and what to show.

The runner (tools/execution.py) calls `begin()` before it executes a call whose effect is not
read-only, and `Pending.finish()` after it, however it ended (also when it failed, timed out
or was cancelled: a failing command can still have written). Both scans run in a worker
thread. A checkpoint that cannot be taken (the data dir is not writable, the workspace is
gone) never stops the call: its card says that nothing was saved, so no undo is offered.

Nothing here imports the daemon; the daemon builds one `Checkpoints` and lends it to the
runner (`ToolPipeline.checkpoints`) and to the `/undo` command.
"""

from __future__ import annotations

import logging
import os
import sqlite3
import threading
import time
from collections.abc import Awaitable, Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path

import anyio.to_thread

from acpd.checkpoint.card import CardLimits, Hidden, card_items, model_line
from acpd.checkpoint.entries import Change, Entry, diff_manifests
from acpd.checkpoint.scan import Limits, ScanResult
from acpd.checkpoint.store import CallRecord, WorkspaceStore
from acpd.tools.spec import ContentItem, TextItem

HiddenSource = Callable[[str], Awaitable[Hidden]]
"""The `Hidden` predicate for a workspace root, as the rules are now."""

log = logging.getLogger("acpd.checkpoint")

SCOPED_TOOLS = frozenset({
    "core__write", "core__edit", "core__create_directory", "core__delete_path",
    "core__move_path", "core__copy_path",
})
"""File tools that change only the paths they name (their locations, with subtrees and
missing parents): their checkpoints re-scan just those. Everything else (bash, plugins, MCP
tools) may change anything and gets a full scan."""


def scope_of(tool_id: str, root: str, locations: list[str]) -> list[str] | None:
    """The paths (relative to root) a scoped checkpoint covers; None: scan everything."""
    if tool_id not in SCOPED_TOOLS or not locations:
        return None
    scope = []
    for location in locations:
        rel = os.path.relpath(os.path.normpath(location), root)
        if rel == "." or rel == ".." or rel.startswith(".." + os.sep):
            return None
        scope.append(rel.replace(os.sep, "/"))
    return scope


@dataclass(frozen=True, slots=True)
class CheckpointSettings:
    enabled: bool = True
    limits: Limits = field(default_factory=Limits)
    card: CardLimits = field(default_factory=CardLimits)


@dataclass(slots=True)
class Outcome:
    """What one call changed, for the card and the model."""

    changes: list[Change]
    items: list[ContentItem]
    line: str
    """For the model: `[files: ...]`, or "" when nothing changed."""


IDLE_STORES = 4
"""Stores of workspaces no live session uses that stay open (the most recently used)."""


class Checkpoints:
    def __init__(self, data_dir: Path, settings: CheckpointSettings | None = None) -> None:
        self.data_dir = data_dir.absolute()
        self.settings = settings or CheckpointSettings()
        self.hidden: HiddenSource | None = None
        """The read tool's rules for a workspace root (tools/fs/hidden.py): files they
        refuse are never diffed in a card. None: every change may be shown."""
        self._stores: dict[str, WorkspaceStore] = {}
        self._busy: dict[str, int] = {}
        """Calls between their checkpoint before and after, by store root: never closed."""
        self._lock = threading.Lock()

    def store(self, root: str) -> WorkspaceStore:
        """The workspace's store, opened once. Raises OSError or sqlite3.Error."""
        real = os.path.realpath(root)
        with self._lock:
            store = self._stores.pop(real, None)  # put back last: the most recently used
            if store is None:
                store = WorkspaceStore(self.data_dir, real, self.settings.limits)
            self._stores[real] = store
            return store

    def close_unused(self, in_use: Iterable[str]) -> int:
        """Close the stores of workspaces that no live session works in (`in_use`: their
        cwds) but the IDLE_STORES most recently used; how many closed. Each open store
        holds its database (three fds) and a file watcher (an fd, and an inotify watch per
        directory of the workspace): a daemon that serves many projects over days must not
        keep them all, and the few kept spare a new session in a recent workspace the full
        scan of a store opened again. A store with a call in flight is kept.
        Blocking (a store's close waits for its lock): run it in a worker thread."""
        keep = {os.path.realpath(root) for root in in_use}
        with self._lock:
            unused = [root for root in self._stores  # least recently used first
                      if root not in keep and not self._busy.get(root)]
            stores = [self._stores.pop(root) for root in unused[:-IDLE_STORES or None]]
        for store in stores:
            store.close()
        return len(stores)

    def _hold(self, store: WorkspaceStore) -> None:
        with self._lock:
            self._busy[store.root] = self._busy.get(store.root, 0) + 1

    def _let_go(self, store: WorkspaceStore) -> None:
        with self._lock:
            left = self._busy.get(store.root, 0) - 1
            if left > 0:
                self._busy[store.root] = left
            else:
                self._busy.pop(store.root, None)

    async def hidden_at(self, root: str) -> Hidden:
        if self.hidden is None:
            return lambda _real: None
        return await self.hidden(root)

    def close(self) -> None:
        with self._lock:
            for store in self._stores.values():
                store.close()
            self._stores.clear()

    async def begin(
        self, call_id: str, session: str, tool: str, title: str, root: str,
        *, tool_id: str = "", locations: list[str] | None = None,
    ) -> Pending:
        """Checkpoint `root` before a call (only its `locations` for a file tool, see
        SCOPED_TOOLS). Never raises (but for cancellation): the pending checkpoint then says
        why there is nothing to undo."""
        started = time.time()
        scope = scope_of(tool_id, root, locations or [])
        try:
            store = await anyio.to_thread.run_sync(self.store, root)
            before = await anyio.to_thread.run_sync(
                lambda: store.checkpoint(scope, trust_watch=True))
        except Exception as exc:  # a checkpoint problem must never stop the call itself
            log.log(_level(exc), "no checkpoint before %s: %s", call_id, exc,
                    exc_info=not isinstance(exc, OSError | sqlite3.Error))
            return Pending(self, None, {}, CallRecord(call_id, session, tool, title, started,
                                                      started, []), f"{exc}")
        record = CallRecord(call_id, session, tool, title, started, started, [],
                            list(before.notes), before.complete)
        self._hold(store)  # until finish(), which every call reaches (tools/execution.py)
        return Pending(self, store, before.entries, record, None,
                       scope if before.scoped else None, before.generation)


@dataclass(slots=True)
class Pending:
    book: Checkpoints
    store: WorkspaceStore | None
    before: dict[str, Entry]
    record: CallRecord
    problem: str | None
    scope: list[str] | None = None
    generation: int = 0
    """The store's checkpoint count after `before` was taken."""

    async def finish(self, shown: list[str], *, confined: bool = False) -> Outcome:
        """Checkpoint again and record what changed. `shown`: absolute paths the tool's
        own card already diffs. `confined`: the call ran in the kernel sandbox, where
        every write to the workspace is seen by the file watcher (tracking.py), so the
        checkpoint may scan only what it reported. Never raises (a failure is said in
        the card)."""
        if self.store is None:
            note = TextItem(f"No checkpoint was taken ({self.problem}): this call cannot "
                            "be undone.")
            return Outcome([], [note], "")
        store = self.store
        try:
            return await self._finish(store, shown, confined)
        finally:
            self.book._let_go(store)

    async def _finish(self, store: WorkspaceStore, shown: list[str], confined: bool) -> Outcome:
        try:
            after, changes = await anyio.to_thread.run_sync(self._changes, store, confined)
            record = self.record
            record.ended = time.time()
            record.changes = changes
            record.notes = _merge(record.notes, after.notes)
            record.complete = record.complete and after.complete
            if not changes:
                return Outcome([], [], "")
            await anyio.to_thread.run_sync(store.record, record)
            hidden = await self.book.hidden_at(store.root)
            items = await anyio.to_thread.run_sync(
                lambda: card_items(store.root, changes, store.blobs, self.book.settings.card,
                                   call_id=record.id, shown=shown, notes=record.notes,
                                   hidden=hidden)
            )
        except Exception as exc:
            log.log(_level(exc), "no checkpoint after %s: %s", self.record.id, exc,
                    exc_info=not isinstance(exc, OSError | sqlite3.Error))
            return Outcome([], [TextItem(f"The checkpoint after this call failed ({exc}): "
                                         "it cannot be undone.")], "")
        return Outcome(changes, items, model_line(changes))


    def _changes(self, store: WorkspaceStore, confined: bool) -> tuple[ScanResult, list[Change]]:
        """The checkpoint after the call and what changed since `before` (in a worker
        thread: comparing two whole manifests after a full scan takes milliseconds)."""
        after = store.checkpoint(self.scope, trust_watch=confined)
        paths = store.touched_since(self.generation)
        return after, diff_manifests(self.before, after.entries, paths)


def _level(exc: Exception) -> int:
    """Disk and store problems are warnings; anything else is a bug in this package."""
    return logging.WARNING if isinstance(exc, OSError | sqlite3.Error) else logging.ERROR


def _merge(first: list[str], second: list[str]) -> list[str]:
    return list(dict.fromkeys([*first, *second]))
