"""Session metadata the editor shows: the title, the time of last activity, message ids.

Rules:
- The title comes from the first prompt that has text: its first non-blank line, credentials
  replaced (tools/secrets.py, the scan every card goes through), runs of white space made one
  space, control characters dropped, at most TITLE_CHARS characters (cut at a word boundary
  when there is one near the end, with an ellipsis). A prompt with no text leaves it unset.
- `updatedAt` is RFC 3339 in UTC with milliseconds (`2026-11-23T13:44:47.123Z`), made from
  the store's own `updated_at`, so `session_info_update` and `session/list` say the same time.
- `session_info_update` is sent when a turn sets the title, at the end of every turn (the
  session changed), after a config change, and after `session/load` / `session/resume` (the
  editor may not have it). It is never stored: a replay would show an old time.
- A message id is a fresh uuid per message (one user prompt, one model reply with its
  thoughts, one agent notice); stored updates carry it, so a replay repeats it exactly.
"""

from __future__ import annotations

import logging
import re
import sqlite3
import uuid
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from acpd.daemon.updates import redact_text

if TYPE_CHECKING:
    from acpd.daemon.session import Session

log = logging.getLogger("acpd.session")

TITLE_CHARS = 60
_WORD_CUT = 20
"""A cut looks back at most this many characters for a space to end on."""
_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f\u200b-\u200f\u2028-\u202e\u2066-\u2069]")
_SPACES = re.compile(r"\s+")


def title_from_prompt(text: str) -> str | None:
    """The session title for a first prompt, or None when it has no text."""
    for line in redact_text(text).splitlines():
        line = _SPACES.sub(" ", _CONTROL.sub("", line)).strip()
        if line:
            return _shorten(line)
    return None


def _shorten(line: str) -> str:
    if len(line) <= TITLE_CHARS:
        return line
    cut = line[: TITLE_CHARS - 1]
    space = cut.rfind(" ")
    if space >= TITLE_CHARS - _WORD_CUT:
        cut = cut[:space]
    return cut.rstrip() + "…"


def rfc3339(timestamp: float) -> str:
    moment = datetime.fromtimestamp(timestamp, UTC)
    return moment.isoformat(timespec="milliseconds").replace("+00:00", "Z")


def new_message_id() -> str:
    return f"msg_{uuid.uuid4().hex}"


def info_update(title: str | None, updated_at: float | None) -> dict[str, Any]:
    update: dict[str, Any] = {"sessionUpdate": "session_info_update"}
    if title:
        update["title"] = title
    if updated_at is not None:
        update["updatedAt"] = rfc3339(updated_at)
    return update


async def send_info(session: Session) -> None:
    """Tell the editor the session's title and last activity, as `session/list` says them."""
    updated_at: float | None = None
    if not session.store.closed:  # a turn that outlived the daemon's stop
        try:
            row = session.store.get(session.id)  # flushes pending metadata first: one truth
        except sqlite3.Error as exc:
            log.warning("cannot read the session's last activity: %s", exc)
        else:
            updated_at = row.updated_at if row is not None else None
    if session.title is None and updated_at is None:
        return
    await session.send(info_update(session.title, updated_at))
