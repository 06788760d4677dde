"""One live session: its state machine, mode, model, history and the editor it talks to."""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import anyio

from acpd.daemon import updates
from acpd.daemon.errors import PeerError
from acpd.daemon.session_info import new_message_id
from acpd.daemon.settings import SessionSettings
from acpd.protocol.session_state import SessionEvent, SessionState, SessionStateMachine
from acpd.tools.approvals import Approvals
from acpd.tools.permissions import PermissionAnswer
from acpd.tools.spec import ToolCallView
from acpd.tools.state import SessionTools

if TYPE_CHECKING:
    from acpd.daemon.rpc import EditorPeer
    from acpd.daemon.store import SessionStore
    from acpd.daemon.terminal_stream import TerminalStreams
    from acpd.providers.base import Message, Provider

log = logging.getLogger("acpd.session")

PERMISSION_OPTIONS = [
    {"optionId": "allow_once", "name": "Allow once", "kind": "allow_once"},
    {"optionId": "allow_always", "name": "Always allow", "kind": "allow_always"},
    {"optionId": "reject_once", "name": "Reject", "kind": "reject_once"},
    {"optionId": "reject_always", "name": "Always reject", "kind": "reject_always"},
]
_ANSWERS: dict[str, PermissionAnswer] = {
    "allow_once": "allow_once",
    "allow_always": "allow_always",
    "reject_once": "reject_once",
    "reject_always": "reject_always",
}


@dataclass(eq=False)
class Session:
    id: str
    cwd: str
    mode: str
    model: str | None
    conn: EditorPeer
    store: SessionStore
    history: list[Message] = field(default_factory=list)
    title: str | None = None
    approvals: Approvals = field(default_factory=lambda: Approvals(""))
    """The workspace's remembered "always" answers (the agent loads the persisted ones)."""
    tools: SessionTools = field(default_factory=SessionTools)
    """Quota, result cache and anomaly windows of this session."""
    provider: Provider | None = None
    machine: SessionStateMachine = field(default_factory=SessionStateMachine)
    turn_scope: anyio.CancelScope | None = None
    idle: anyio.Event = field(default_factory=anyio.Event)
    editor_terminal: bool = True
    """False once the editor left a `terminal/create` unanswered: commands run locally."""
    settings: SessionSettings = field(default_factory=SessionSettings)
    """Switches, extra roots and running cost, stored with the session (daemon/settings.py)."""
    terminals: TerminalStreams | None = None
    """Live output of the commands acpd runs itself (daemon/terminal_stream.py)."""
    running: dict[str, str] = field(default_factory=dict)
    """Titles of the tool calls not yet finished, by id (`acpd ps` shows them)."""

    def __post_init__(self) -> None:
        self.idle.set()

    @property
    def roots(self) -> tuple[str, ...]:
        """The cwd, then the checked `additionalDirectories` (daemon/roots.py)."""
        return (self.cwd, *self.settings.additional_directories)

    # --- the editor's view ------------------------------------------------------------------

    async def send(self, update: dict[str, Any], *, persist: bool = False) -> None:
        if persist:
            self.store.append_update(self.id, update)
        await self.conn.notify("session/update", {"sessionId": self.id, "update": update})

    async def say(self, text: str) -> None:
        """An agent message that is shown and kept for replay (a message of its own)."""
        chunk = updates.message_chunk("agent_message_chunk", text, new_message_id())
        await self.send(chunk, persist=True)

    def remember(self, message: Message) -> None:
        self.history.append(message)
        self.store.append_message(self.id, message.to_dict())

    # --- CallObserver ------------------------------------------------------------------------

    async def publish(self, view: ToolCallView, *, first: bool) -> None:
        update = updates.tool_call(view, first=first)
        if self.terminals is not None:
            self.terminals.decorate(view, update, first=first)
        final = view.status in ("completed", "failed")
        if final:
            self.running.pop(view.tool_call_id, None)
        else:
            self.running[view.tool_call_id] = view.title
        if first or final:
            self.store.append_update(self.id, updates.without_terminals(update))
        await self.send(update)

    async def ask(self, view: ToolCallView) -> PermissionAnswer:
        update = updates.tool_call(view, first=False)
        update.pop("sessionUpdate")
        params = {"sessionId": self.id, "toolCall": update, "options": PERMISSION_OPTIONS}
        try:
            answer = await self.conn.request("session/request_permission", params, timeout=None)
        except PeerError as exc:
            log.warning("permission request failed, treating it as a rejection: %s", exc)
            return "reject_once"
        outcome = answer.get("outcome") if isinstance(answer, dict) else None
        if not isinstance(outcome, dict) or outcome.get("outcome") != "selected":
            # ACP: "cancelled" is the answer for a cancelled turn. An editor may also send it
            # on its own (the user dismissed the dialog): stop the turn as session/cancel
            # would, so the prompt answers `cancelled` either way.
            if self.turn_scope is not None and not self.cancelling:
                self.cancel()
            return "cancelled"
        return _ANSWERS.get(str(outcome.get("optionId")), "reject_once")

    def editor_terminal_silent(self) -> None:
        self.editor_terminal = False

    # --- turns -------------------------------------------------------------------------------

    def begin_turn(self) -> None:
        """Raises IllegalTransition when a turn is running or the session is closed."""
        self.machine.process(SessionEvent.PROMPT)
        self.idle = anyio.Event()

    def end_turn(self) -> None:
        self.running.clear()
        self.machine.process(SessionEvent.TURN_END)
        self.turn_scope = None
        self.idle.set()

    def cancel(self) -> None:
        self.machine.process(SessionEvent.CANCEL)
        if self.turn_scope is not None:
            self.turn_scope.cancel()

    @property
    def cancelling(self) -> bool:
        return self.machine.state is SessionState.CANCELLING

    def close(self) -> None:
        if self.turn_scope is not None:
            self.turn_scope.cancel()
        self.machine.process(SessionEvent.CLOSE)
