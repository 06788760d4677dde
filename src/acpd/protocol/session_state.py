"""The lifecycle of one ACP session as a transition table, h11-style.

One prompt at a time: a second `session/prompt` while a turn runs is refused, `session/cancel`
on an idle session is a no-op, and nothing but `close` is accepted after close.
"""

from __future__ import annotations

from enum import Enum


class SessionState(Enum):
    IDLE = "idle"
    PROMPTING = "prompting"
    CANCELLING = "cancelling"
    CLOSED = "closed"


class SessionEvent(Enum):
    PROMPT = "prompt"
    CANCEL = "cancel"
    TURN_END = "turn_end"
    CLOSE = "close"


class IllegalTransition(Exception):
    def __init__(self, state: SessionState, event: SessionEvent) -> None:
        super().__init__(f"cannot {event.value} while the session is {state.value}")
        self.state = state
        self.event = event


_S, _E = SessionState, SessionEvent

TRANSITIONS: dict[tuple[SessionState, SessionEvent], SessionState] = {
    (_S.IDLE, _E.PROMPT): _S.PROMPTING,
    (_S.IDLE, _E.CANCEL): _S.IDLE,
    (_S.IDLE, _E.CLOSE): _S.CLOSED,
    (_S.PROMPTING, _E.CANCEL): _S.CANCELLING,
    (_S.PROMPTING, _E.TURN_END): _S.IDLE,
    (_S.PROMPTING, _E.CLOSE): _S.CLOSED,
    (_S.CANCELLING, _E.CANCEL): _S.CANCELLING,
    (_S.CANCELLING, _E.TURN_END): _S.IDLE,
    (_S.CANCELLING, _E.CLOSE): _S.CLOSED,
    (_S.CLOSED, _E.CLOSE): _S.CLOSED,
    (_S.CLOSED, _E.TURN_END): _S.CLOSED,
    (_S.CLOSED, _E.CANCEL): _S.CLOSED,
}


class SessionStateMachine:
    def __init__(self) -> None:
        self.state = SessionState.IDLE

    def process(self, event: SessionEvent) -> SessionState:
        """Apply `event`; raises IllegalTransition when the table has no entry for it."""
        try:
            self.state = TRANSITIONS[(self.state, event)]
        except KeyError:
            raise IllegalTransition(self.state, event) from None
        return self.state
