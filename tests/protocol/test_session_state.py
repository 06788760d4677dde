from __future__ import annotations

import itertools

import pytest

from acpd.protocol.session_state import (
    TRANSITIONS,
    IllegalTransition,
    SessionEvent,
    SessionState,
    SessionStateMachine,
)

S, E = SessionState, SessionEvent

# The table as the protocol reads: one prompt at a time, cancel is idempotent (and a no-op when
# idle), a turn ends once, and after close only close, and the late end/cancel of a turn that
# was running when the session closed, are accepted.
ALLOWED: dict[tuple[SessionState, SessionEvent], SessionState] = {
    (S.IDLE, E.PROMPT): S.PROMPTING,
    (S.IDLE, E.CANCEL): S.IDLE,
    (S.IDLE, E.CLOSE): S.CLOSED,
    (S.PROMPTING, E.CANCEL): S.CANCELLING,
    (S.PROMPTING, E.TURN_END): S.IDLE,
    (S.PROMPTING, E.CLOSE): S.CLOSED,
    (S.CANCELLING, E.CANCEL): S.CANCELLING,
    (S.CANCELLING, E.TURN_END): S.IDLE,
    (S.CANCELLING, E.CLOSE): S.CLOSED,
    (S.CLOSED, E.CLOSE): S.CLOSED,
    (S.CLOSED, E.TURN_END): S.CLOSED,
    (S.CLOSED, E.CANCEL): S.CLOSED,
}


def _order(pair: tuple[SessionState, SessionEvent]) -> tuple[str, str]:
    return pair[0].value, pair[1].value


ALLOWED_PAIRS = sorted(ALLOWED, key=_order)
ILLEGAL = sorted(set(itertools.product(S, E)) - set(ALLOWED), key=_order)


def machine_in(state: SessionState) -> SessionStateMachine:
    machine = SessionStateMachine()
    machine.state = state
    return machine


def test_the_table_is_exactly_the_documented_one() -> None:
    assert TRANSITIONS == ALLOWED
    assert set(ILLEGAL) == {
        (S.IDLE, E.TURN_END),
        (S.PROMPTING, E.PROMPT),
        (S.CANCELLING, E.PROMPT),
        (S.CLOSED, E.PROMPT),
    }


def test_a_new_session_is_idle() -> None:
    assert SessionStateMachine().state is S.IDLE


@pytest.mark.parametrize(("state", "event"), ALLOWED_PAIRS)
def test_every_allowed_transition(state: SessionState, event: SessionEvent) -> None:
    machine = machine_in(state)
    assert machine.process(event) is ALLOWED[(state, event)]
    assert machine.state is ALLOWED[(state, event)]


@pytest.mark.parametrize(("state", "event"), ILLEGAL)
def test_every_illegal_transition_raises_and_leaves_the_state_alone(
    state: SessionState, event: SessionEvent
) -> None:
    machine = machine_in(state)
    with pytest.raises(IllegalTransition) as info:
        machine.process(event)
    assert machine.state is state
    assert (info.value.state, info.value.event) == (state, event)
    assert str(info.value) == f"cannot {event.value} while the session is {state.value}"


def test_a_whole_life() -> None:
    machine = SessionStateMachine()
    steps = [
        (E.CANCEL, S.IDLE),
        (E.PROMPT, S.PROMPTING),
        (E.TURN_END, S.IDLE),
        (E.PROMPT, S.PROMPTING),
        (E.CANCEL, S.CANCELLING),
        (E.CANCEL, S.CANCELLING),
        (E.TURN_END, S.IDLE),
        (E.PROMPT, S.PROMPTING),
        (E.CLOSE, S.CLOSED),
        (E.TURN_END, S.CLOSED),
        (E.CLOSE, S.CLOSED),
    ]
    for event, state in steps:
        assert machine.process(event) is state
    with pytest.raises(IllegalTransition):
        machine.process(E.PROMPT)
