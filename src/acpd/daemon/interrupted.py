"""Closing what a dead daemon left open, when a stored session is loaded or resumed.

A daemon killed mid-tool (SIGKILL, a crash, a stop that outlived its grace) can leave two
things half done in the store:

- a card whose `tool_call` was stored but never its final update: the editor would replay a
  call that runs for ever;
- an assistant message whose `tool_calls` have no tool result: the next model request would
  carry a shape that OpenAI-compatible APIs reject (every call id needs its result, right
  after the assistant message).

`close_interrupted()` closes both, in the store, before the session is replayed or used: the
card gets a failed update saying it was interrupted, the call a `[tool_error]` result saying
the same, placed right after the results its round already has. A whole history is left as
it is, untouched and unwritten.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from acpd.tools.errors import ErrorCategory, ToolError

if TYPE_CHECKING:
    from acpd.daemon.store import SessionStore

INTERRUPTED = (
    "Interrupted: acpd stopped before this call finished, so its outcome is unknown "
    "(it may have run in part)."
)
FINAL = ("completed", "failed")


def close_interrupted(store: SessionStore, session_id: str) -> list[dict[str, Any]]:
    """Close the session's open cards and unanswered calls in the store; returns the card
    updates it added (for an editor that does not get a replay)."""
    closing = [interrupted_update(call_id) for call_id in open_cards(store.updates(session_id))]
    for update in closing:
        store.append_update(session_id, update)
    messages = store.messages(session_id)
    answered = answer_calls(messages)
    if answered is not None:
        store.replace_messages(session_id, answered)
    return closing


def open_cards(stored: list[dict[str, Any]]) -> list[str]:
    """Ids of the tool calls shown without a final status, in the order they appeared."""
    status: dict[str, str | None] = {}
    for update in stored:
        if update.get("sessionUpdate") not in ("tool_call", "tool_call_update"):
            continue
        call_id = update.get("toolCallId")
        if not isinstance(call_id, str):
            continue
        if update.get("sessionUpdate") == "tool_call" or call_id in status:
            status[call_id] = update.get("status") or status.get(call_id)
    return [call_id for call_id, last in status.items() if last not in FINAL]


def interrupted_update(call_id: str) -> dict[str, Any]:
    return {
        "sessionUpdate": "tool_call_update",
        "toolCallId": call_id,
        "status": "failed",
        "content": [{"type": "content", "content": {"type": "text", "text": INTERRUPTED}}],
    }


def answer_calls(messages: list[dict[str, Any]]) -> list[dict[str, Any]] | None:
    """The history with a result for every tool call that has none (right after its
    round's results), or None when nothing is missing."""
    out: list[dict[str, Any]] = []
    missing = False
    index = 0
    while index < len(messages):
        message = messages[index]
        out.append(message)
        index += 1
        if message.get("role") != "assistant" or not message.get("tool_calls"):
            continue
        answered: set[str] = set()
        while index < len(messages) and messages[index].get("role") == "tool":
            answered.add(str(messages[index].get("tool_call_id")))
            out.append(messages[index])
            index += 1
        for call in message["tool_calls"]:
            if isinstance(call, dict) and str(call.get("id")) not in answered:
                out.append(interrupted_result(str(call.get("id"))))
                missing = True
    return out if missing else None


def interrupted_result(call_id: str) -> dict[str, Any]:
    error = ToolError(ErrorCategory.CANCELLED, INTERRUPTED, suggestion="Run it again if needed.")
    return {
        "role": "tool", "text": error.format_for_model(), "tool_calls": [],
        "tool_call_id": call_id, "is_error": True,
    }
