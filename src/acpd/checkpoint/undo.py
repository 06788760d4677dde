"""Undo one recorded call: put exactly the paths it created, changed and deleted back to
their state before it.

Rules:
- A fresh checkpoint of the call's paths is taken first (read in full, no time budget;
  the whole workspace when a link or file stands where one of their parents was). Each
  path must still be in the state the call left it in; a path changed since (by a later
  call, the user, anything) is a conflict, and undo refuses, naming the paths and the
  later recorded calls that touched them, unless forced.
  (We do not undo later calls on our own: the user decides, by undoing them first, newest
  first, or by forcing.)
- A path whose earlier bytes were not saved (over the per-file cap, unreadable, the store
  full) cannot be restored: undo refuses, naming it; forced, it restores the others and
  reports that one as not restored. Undo never claims what it did not do.
- An undo is itself recorded as a call (tool "undo", `undoes` = the call), with the changes
  it made, so it is shown in `/undo list` and can be undone in turn (a redo).
- A call already undone (and not redone) cannot be undone again.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field

from acpd.checkpoint.card import printable
from acpd.checkpoint.entries import Entry, diff_manifests
from acpd.checkpoint.restore import Restorer
from acpd.checkpoint.store import CallRecord, WorkspaceStore, outermost

MAX_LISTED = 20


class UndoRefused(Exception):
    """Undo would not be exact; the message says why and what to do."""


@dataclass(slots=True)
class UndoResult:
    record: CallRecord
    """The undo's own record (its id, the changes it made)."""
    target: CallRecord
    failures: list[tuple[str, str]] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)
    """Paths not restored because their bytes were never saved (forced undo only)."""

    def describe(self) -> str:
        changes = [c for c in self.record.changes if not c.is_dir]
        text = (f"Undid {self.target.id} ({self.target.title}): {len(changes)} files restored"
                f" to their state before it. This undo is {self.record.id}; undoing it "
                f"(`/undo {self.record.id}`, `acpd undo {self.record.id}`) redoes the call.")
        if self.skipped:
            text += "\nNot restored (their bytes were never saved): " + _names(self.skipped)
        if self.failures:
            text += "\nCould not restore: " + "; ".join(
                f"{printable(p)}: {why}" for p, why in self.failures[:MAX_LISTED])
        return text


def undo_call(
    store: WorkspaceStore, call_id: str, *, undo_id: str, session: str, force: bool = False,
) -> UndoResult:
    """Raises UndoRefused (unknown call, already undone, conflicts, unsaved bytes), OSError
    when the workspace cannot be read."""
    with store.lock:
        target = store.get(call_id)
        if target is None:
            raise UndoRefused(f"no recorded file changes for call {call_id} in {store.root}")
        if target.undone_by is not None:
            raise UndoRefused(
                f"{call_id} was already undone by {target.undone_by}; "
                f"`undo {target.undone_by}` redoes it")
        started = time.time()
        # Only the call's own paths are compared and restored: scan just those, in full.
        scope = outermost([c.path for c in target.changes]) or None
        current = store.checkpoint(scope, budget=False).entries
        conflicts = [c.path for c in target.changes if not _same(current.get(c.path), c.after)]
        unsaved = [c.path for c in target.changes
                   if c.before is not None and not c.before.restorable]
        if not force:
            _refuse_if(store, target, conflicts, unsaved)
        skip = set(unsaved)
        targets: dict[str, Entry | None] = {
            c.path: c.before for c in target.changes if c.path not in skip
        }
        failures = Restorer(store.root, store.blobs).apply(targets)
        after = store.checkpoint(scope, budget=False).entries
        changes = diff_manifests(current, after)
        record = CallRecord(
            undo_id, session, "undo", f"Undo {call_id}", started, time.time(), changes,
            notes=[f"{p}: {why}" for p, why in failures], undoes=call_id,
        )
        store.record(record)
        return UndoResult(record, target, failures, sorted(skip))


def _same(now: Entry | None, expected: Entry | None) -> bool:
    if now is None or expected is None:
        return now is expected
    return now.state() == expected.state()


def _refuse_if(
    store: WorkspaceStore, target: CallRecord, conflicts: list[str], unsaved: list[str]
) -> None:
    problems: list[str] = []
    if conflicts:
        later = [
            r for r in store.later_than(target.seq) if r.undone_by is None and
            any(c.path in set(conflicts) for c in r.changes)
        ]
        text = "changed since that call: " + _names(conflicts)
        if later:
            text += (" (by later calls " + ", ".join(f"{r.id} [{r.title}]" for r in later[:5])
                     + "; undo those first, newest first)")
        problems.append(text)
    if unsaved:
        problems.append("their earlier bytes were never saved: " + _names(unsaved))
    if problems:
        raise UndoRefused(
            f"cannot undo {target.id} exactly: " + "; ".join(problems)
            + f". Add --force (`/undo {target.id} --force`) to restore them anyway."
        )


def _names(paths: list[str]) -> str:
    listed = ", ".join(printable(p) for p in paths[:MAX_LISTED])
    return listed + (f" and {len(paths) - MAX_LISTED} more" if len(paths) > MAX_LISTED else "")
