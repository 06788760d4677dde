"""What a call's changes look like in the editor's card and to the model.

The card gets one ACP diff per created, changed or deleted text file (`oldText` None for a
created file, `newText` "" for a deleted one), at most `max_diffs` of them and none larger
than `max_diff_bytes`; the rest (binary files, symlinks, files whose bytes were not saved,
those over the caps) are listed by name in one text line, with what undo can do. The model
gets a single short line: `[files: 2 created (a, b), 1 changed (c), 0 deleted]`.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable
from dataclasses import dataclass

from acpd.checkpoint.blobs import BlobStore
from acpd.checkpoint.entries import Change, Entry, summary
from acpd.tools.spec import ContentItem, DiffItem, TextItem

MODEL_NAMES = 8
LISTED_NAMES = 30


Hidden = Callable[[str], "str | None"]
"""Why a file's content may not be shown (the read tool's rules: tools/fs/hidden.py)."""


def _nothing_hidden(_real: str) -> str | None:
    return None


@dataclass(frozen=True, slots=True)
class CardLimits:
    max_diffs: int = 20
    max_diff_bytes: int = 256 * 1024


def card_items(
    root: str, changes: list[Change], blobs: BlobStore, limits: CardLimits, *,
    call_id: str, shown: Iterable[str] = (), notes: Iterable[str] = (),
    hidden: Hidden = _nothing_hidden,
) -> list[ContentItem]:
    """Diffs, then one text line for the rest. `shown`: absolute paths the tool's own
    content already diffs (the file tools), not diffed twice. `hidden`: files whose content
    the read tool would refuse are named with the reason, never diffed."""
    already = set(shown)
    items: list[ContentItem] = []
    listed: list[str] = []
    for change in sorted(changes, key=_order):
        if change.is_dir:
            continue
        real = os.path.join(root, change.path)
        path = printable(real)
        if path in already:
            continue
        if len(items) >= limits.max_diffs:
            listed.append(f"{printable(change.path)} ({change.action})")
            continue
        withheld = hidden(real)
        if withheld is not None:
            listed.append(f"{printable(change.path)} ({change.action}; content withheld: "
                          f"{withheld})")
            continue
        diff = _diff(path, change, blobs, limits)
        if diff is not None:
            items.append(diff)
        else:
            listed.append(f"{printable(change.path)} ({change.action}{_why(change, limits)})")
    counts = summary(changes)
    if not any(counts.values()):
        return items
    text = _counts_text(counts)
    if listed:
        more = "" if len(listed) <= LISTED_NAMES else f", and {len(listed) - LISTED_NAMES} more"
        text += "\nNot shown as diffs: " + ", ".join(listed[:LISTED_NAMES]) + more
    unsaved = [printable(c.path) for c in changes
               if c.before is not None and not c.before.restorable]
    if unsaved:
        text += "\nCannot be undone (not saved): " + ", ".join(unsaved[:LISTED_NAMES])
    for note in list(notes)[:5]:
        text += f"\nCheckpoint note: {printable(note)}"
    text += f"\nUndo: /undo {call_id}"
    items.append(TextItem(text))
    return items


def printable(path: str) -> str:
    """A path as text the editor and the model can take (names that are not UTF-8 are
    read as surrogate escapes, which JSON cannot carry)."""
    return path.encode("utf-8", "surrogateescape").decode("utf-8", "replace")


def _order(change: Change) -> tuple[bool, str]:
    """The user's files first; git's internals (objects, index) after them."""
    path = change.path
    return (path.startswith(".git/") or "/.git/" in path, path)


def model_line(changes: list[Change]) -> str:
    """`[files: 1 created (a.txt), 2 changed (b, c), 0 deleted]`; "" when nothing changed."""
    files = sorted((c for c in changes if not c.is_dir), key=_order)
    if not files:
        return ""
    parts = []
    for action in ("created", "changed", "deleted"):
        names = [printable(c.path) for c in files if c.action == action]
        part = f"{len(names)} {action}"
        if names:
            shown = ", ".join(names[:MODEL_NAMES])
            part += f" ({shown}{', ...' if len(names) > MODEL_NAMES else ''})"
        parts.append(part)
    return f"[files: {', '.join(parts)}]"


def _counts_text(counts: dict[str, int]) -> str:
    text = (f"Files: {counts['created']} created, {counts['changed']} changed, "
            f"{counts['deleted']} deleted")
    if counts["dirs"]:
        text += f" ({counts['dirs']} directories created or removed)"
    return text + "."


def _diff(path: str, change: Change, blobs: BlobStore, limits: CardLimits) -> DiffItem | None:
    old = _text(change.before, blobs, limits)
    new = _text(change.after, blobs, limits)
    if old is False or new is False:
        return None
    return DiffItem(path, old if isinstance(old, str) else None,
                    new if isinstance(new, str) else "")


def _text(entry: Entry | None, blobs: BlobStore, limits: CardLimits) -> str | bool | None:
    """The entry's text; None for no entry; False when it cannot be shown as text."""
    if entry is None:
        return None
    if entry.kind != "f" or entry.blob is None or entry.size > limits.max_diff_bytes:
        return False
    try:
        data = blobs.get(entry.blob)
    except (OSError, ValueError):
        return False
    if b"\0" in data:
        return False
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        return False


def _why(change: Change, limits: CardLimits) -> str:
    for entry in (change.after, change.before):
        if entry is None:
            continue
        if entry.kind == "l":
            return f", symlink -> {printable(entry.target or '')}"
        if entry.blob is None:
            return f", {entry.note or 'not saved'}"
        if entry.size > limits.max_diff_bytes:
            return ", too large to show"
    return ", binary"
