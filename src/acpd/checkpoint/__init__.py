"""Workspace checkpoints around tool calls, what each call changed, and undo.

See book.py (the runner's hook), store.py (one store per workspace under the data dir),
scan.py (the snapshot walk), undo.py and restore.py (putting paths back).
"""

from acpd.checkpoint.book import Checkpoints, CheckpointSettings, Outcome, Pending
from acpd.checkpoint.card import CardLimits
from acpd.checkpoint.scan import Limits
from acpd.checkpoint.store import CallRecord, WorkspaceStore
from acpd.checkpoint.undo import UndoRefused, UndoResult, undo_call

__all__ = [
    "CallRecord", "CardLimits", "CheckpointSettings", "Checkpoints", "Limits", "Outcome",
    "Pending", "UndoRefused", "UndoResult", "WorkspaceStore", "undo_call",
]
