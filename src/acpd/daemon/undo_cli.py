"""`acpd undo [--session S] [--cwd W] [--data-dir D] [--force] [CALL]`.

Without CALL: the recent file-changing calls of every workspace with checkpoints (or only
W's, only session S's). CALL is a call id (an undo's id redoes), or `last`: the newest call
of session S (or of any session) in W (default: the current directory) that is not undone.
Works whether or not a daemon runs: the checkpoints live under the data dir. Exit codes:
0 undone (or listed), 1 refused or failed, 2 bad usage.
"""

from __future__ import annotations

import argparse
import os
import sqlite3
import sys
import uuid
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from acpd.checkpoint import Checkpoints, WorkspaceStore


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    undo = sub.add_parser(
        "undo", help="undo the file changes of a tool call (list them without CALL)"
    )
    undo.add_argument("call", nargs="?", help="a call id, or `last`; omit to list")
    undo.add_argument("--session", help="only this session's calls")
    undo.add_argument("--cwd", help="only this workspace (for `last`: default here)")
    undo.add_argument("--force", action="store_true",
                      help="restore even paths changed since the call")
    undo.add_argument("--config", help="config file (default: $ACPD_CONFIG or the user's)")
    undo.add_argument("--data-dir", help="where sessions and checkpoints are")


def run(args: argparse.Namespace) -> int:
    from acpd.checkpoint import CardLimits, Checkpoints, CheckpointSettings, Limits
    from acpd.daemon.config import default_data_dir, load_config
    from acpd.daemon.errors import ConfigError

    try:
        config = load_config(args.config)
    except ConfigError as exc:
        print(f"acpd: {exc}", file=sys.stderr)
        return 2
    data_dir = (Path(args.data_dir) if args.data_dir else default_data_dir()).absolute()
    c = config.tools.checkpoint
    book = Checkpoints(data_dir, CheckpointSettings(
        True, Limits(c.max_file_bytes, c.max_total_bytes, c.max_entries, c.max_read_seconds),
        CardLimits(c.max_diffs, c.max_diff_bytes),
    ))
    try:
        if args.call is None:
            return _list(book, args)
        return _undo(book, args, data_dir, config.tools.audit.enabled)
    except (OSError, sqlite3.Error) as exc:
        print(f"acpd: the checkpoint store cannot be used: {exc}", file=sys.stderr)
        return 1
    finally:
        book.close()


def _roots(book: Checkpoints, args: argparse.Namespace, data_dir: Path) -> list[str]:
    from acpd.checkpoint.store import workspaces

    roots = workspaces(data_dir)
    if args.cwd:
        wanted = os.path.realpath(args.cwd)
        roots = [r for r in roots if r == wanted]
    return roots


def _list(book: Checkpoints, args: argparse.Namespace) -> int:
    from acpd.checkpoint.commands import format_list

    roots = _roots(book, args, book.data_dir)
    if not roots:
        print("No checkpoints are recorded" + (f" for {args.cwd}" if args.cwd else "") + ".")
        return 0
    printed = False
    for root in roots:
        records = book.store(root).recent(args.session, 20)
        if records or not args.session:
            print(f"{root}:\n{format_list(records)}")
            printed = True
    if not printed:
        print(f"No file-changing calls are recorded for session {args.session}.")
    return 0


def _undo(book: Checkpoints, args: argparse.Namespace, data_dir: Path, audited: bool) -> int:
    from acpd.checkpoint import UndoRefused, undo_call
    from acpd.checkpoint.commands import audit_undo, last_undoable
    from acpd.tools.audit import AuditLog
    from acpd.tools.setup import AUDIT_FILE

    found = _find(book, args, data_dir)
    if isinstance(found, str):
        print(f"acpd: {found}", file=sys.stderr)
        return 1
    store, call_id = found
    if call_id is None:
        last = last_undoable(store, args.session)
        if last is None:
            print(f"acpd: nothing to undo in {store.root}", file=sys.stderr)
            return 1
        call_id = last.id
    record = store.get(call_id)
    session = args.session or (record.session if record is not None else "cli")
    undo_id = f"undo_{uuid.uuid4().hex[:16]}"
    audit = AuditLog(data_dir / AUDIT_FILE) if audited else None
    try:
        try:
            result = undo_call(store, call_id, undo_id=undo_id, session=session,
                               force=args.force)
        except UndoRefused as exc:
            audit_undo(audit, session, undo_id, call_id, args.force, "cli", "cli", None,
                       str(exc))
            print(f"acpd: undo refused: {exc}", file=sys.stderr)
            return 1
        audit_undo(audit, session, undo_id, call_id, args.force, "cli", "cli", result, None)
    finally:
        if audit is not None:
            audit.close()
    print(result.describe())
    return 1 if result.failures else 0


def _find(
    book: Checkpoints, args: argparse.Namespace, data_dir: Path
) -> tuple[WorkspaceStore, str | None] | str:
    """(store, call id or None for `last`), or an error message."""
    if args.call == "last":
        root = os.path.realpath(args.cwd or os.getcwd())
        if root not in _roots(book, args, data_dir):
            return f"no checkpoints are recorded for {root}" + ("" if args.cwd else
                                                                 " (use --cwd)")
        return book.store(root), None
    for root in _roots(book, args, data_dir):
        store = book.store(root)
        if store.get(args.call) is not None:
            return store, args.call
    return f"no recorded call {args.call} under {data_dir}"
