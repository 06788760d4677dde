"""The live sessions the native tools reach: what a session lends them, and the table of them.

The tools package never imports the daemon: the daemon wraps each session it runs a prompt
for in something with this shape (daemon/native_hooks.py) and registers it here. A session
that is closed, or was never prompted since the daemon started, is not live: its due tasks
wait for its next prompt or load, and compress_context refuses to run for it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    from acpd.providers.base import Message, Provider


class LiveSession(Protocol):
    @property
    def id(self) -> str: ...

    @property
    def history(self) -> list[Message]:
        """The model history, in place: what the next model request is built from."""
        ...

    def provider(self) -> Provider | None:
        """The model to summarise with: the configured one, else the session's now (None:
        direct mode, no model)."""
        ...

    def in_turn(self) -> bool:
        """A prompt is running: an agent message now belongs to its turn."""
        ...

    def closed(self) -> bool: ...

    async def say(self, text: str) -> None:
        """An agent message, shown and kept for replay."""
        ...

    def drop_oldest(self, count: int) -> None:
        """Remove the first `count` history messages, in memory and in the store."""
        ...


class LiveSessions:
    def __init__(self) -> None:
        self._by_id: dict[str, LiveSession] = {}

    def add(self, session: LiveSession) -> None:
        self._by_id[session.id] = session
        for gone in [k for k, s in self._by_id.items() if s.closed()]:
            del self._by_id[gone]

    def get(self, session_id: str) -> LiveSession | None:
        session = self._by_id.get(session_id)
        if session is not None and session.closed():
            del self._by_id[session_id]
            return None
        return session
