"""`/undo` in a session: `/undo` (the session's last file-changing call that is not undone),
`/undo CALL_ID` (any recorded call of the workspace, an undo included: that redoes),
`/undo list` (the recent calls and what they changed), `--force` after a call id to restore
despite later changes. The undo is shown as its own card (its diffs), recorded, and written
to the audit log like a tool call (name "undo", caller "slash" or "cli").
"""

from __future__ import annotations

import sqlite3
import uuid
from datetime import datetime
from typing import TYPE_CHECKING, Any

import anyio.to_thread

from acpd.checkpoint.card import card_items, printable
from acpd.checkpoint.entries import summary
from acpd.checkpoint.store import CallRecord, WorkspaceStore
from acpd.checkpoint.undo import UndoRefused, UndoResult, undo_call
from acpd.tools.audit import caller_id, now_iso
from acpd.tools.spec import ToolCallView

if TYPE_CHECKING:
    from acpd.checkpoint.book import Checkpoints
    from acpd.tools.audit import AuditLog
    from acpd.tools.pipeline import CallEnv

USAGE = ("Usage: /undo (the last file-changing call of this session), /undo CALL_ID "
         "[--force], /undo list")
LIST_SIZE = 15


def parse(rest: str) -> tuple[str | None, bool, bool]:
    """(call id or None, force, list) from the words after `/undo`; raises ValueError."""
    words = rest.split()
    force = "--force" in words
    words = [w for w in words if w != "--force"]
    if len(words) > 1:
        raise ValueError(USAGE)
    if words and words[0] == "list":
        return None, force, True
    return (words[0] if words else None), force, False


def last_undoable(store: WorkspaceStore, session: str | None) -> CallRecord | None:
    """The newest call (of the session, when given) that is not an undo and not undone."""
    for record in store.recent(session, limit=200):
        if record.undoes is None and record.undone_by is None:
            return record
    return None


def format_list(records: list[CallRecord]) -> str:
    if not records:
        return "No file-changing calls are recorded here yet."
    lines = []
    for r in records:
        counts = summary(r.changes)
        when = datetime.fromtimestamp(r.started).strftime("%H:%M:%S")
        state = f" — undone by {r.undone_by}" if r.undone_by else ""
        title = r.title if len(r.title) <= 60 else r.title[:57] + "..."
        lines.append(
            f"- {r.id} {when} {r.tool}: {title} [{counts['created']} created, "
            f"{counts['changed']} changed, {counts['deleted']} deleted]{state}"
        )
    return "\n".join(lines)


def audit_undo(
    audit: AuditLog | None, session: str, undo_id: str, target: str | None, force: bool,
    caller: str, mode: str, result: UndoResult | None, error: str | None,
) -> None:
    """The audit line of one undo (refused or done). Raises OSError when it cannot be
    written (an undo that cannot be audited must not look audited)."""
    if audit is None:
        return
    outcome: dict[str, Any] | None = None
    if result is not None:
        outcome = {**summary(result.record.changes), "failures": len(result.failures),
                   "not_saved": len(result.skipped)}
    audit.write({
        "ts": now_iso(), "session": session, "toolCallId": undo_id, "tool": "acpd__undo",
        "name": "undo", "call": {"target": target, "force": force}, "result": outcome,
        "decision": "allow" if error is None else "refused", "answer": None,
        "mode": mode, "approved_by": "user" if error is None else None,
        "error_category": None if error is None else "PermanentFailure",
        "error": error, "caller": caller, "caller_id": caller_id(session),
        "phase": "planner", "exit_code": None,
    })


async def slash_undo(rest: str, book: Checkpoints, env: CallEnv, audit: AuditLog | None) -> str:
    """Run `/undo ...` for a session; the text to say. Never raises for bad input or a
    refused undo."""
    try:
        target, force, listing = parse(rest)
    except ValueError as exc:
        return str(exc)
    try:
        store = await anyio.to_thread.run_sync(book.store, env.cwd)
    except (OSError, sqlite3.Error) as exc:
        return f"No checkpoints can be read for {env.cwd}: {exc}"
    if listing:
        records = await anyio.to_thread.run_sync(lambda: store.recent(None, LIST_SIZE))
        return "Recent file-changing calls in this workspace (newest first):\n" + format_list(
            records)
    if env.mode == "read-only":
        return "Undo changes files: switch the session out of read-only mode first."
    if target is None:
        last = await anyio.to_thread.run_sync(last_undoable, store, env.session_id)
        if last is None:
            return "Nothing to undo: no file-changing call of this session is left."
        target = last.id
    undo_id = f"undo_{uuid.uuid4().hex[:16]}"
    result, error = await _undo(store, target, undo_id, env.session_id, force)
    audit_undo(audit, env.session_id, undo_id, target, force, "slash", env.mode, result, error)
    if result is None:
        return f"Undo refused: {error}"
    await _show(result, store, book, env)
    return result.describe()


async def _undo(
    store: WorkspaceStore, target: str, undo_id: str, session: str, force: bool
) -> tuple[UndoResult | None, str | None]:
    try:
        result = await anyio.to_thread.run_sync(
            lambda: undo_call(store, target, undo_id=undo_id, session=session, force=force))
    except UndoRefused as exc:
        return None, str(exc)
    except (OSError, sqlite3.Error) as exc:
        return None, f"the workspace or the checkpoint store cannot be used: {exc}"
    return result, None


async def _show(result: UndoResult, store: WorkspaceStore, book: Checkpoints,
                env: CallEnv) -> None:
    """The undo's own card: what it put back, as diffs."""
    record = result.record
    hidden = await book.hidden_at(store.root)
    items = await anyio.to_thread.run_sync(
        lambda: card_items(store.root, record.changes, store.blobs, book.settings.card,
                           call_id=record.id, notes=record.notes, hidden=hidden))
    view = ToolCallView(record.id, record.title, "edit", "pending",
                        raw_input={"undo": result.target.id})
    await env.observer.publish(view, first=True)
    view.status = "failed" if result.failures else "completed"
    view.content = items
    view.locations = [printable(f"{store.root}/{c.path}") for c in record.changes[:50]]
    await env.observer.publish(view, first=False)
