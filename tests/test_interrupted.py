"""The history repair of daemon/interrupted.py on a real SQLite store."""

from __future__ import annotations

from pathlib import Path

from acpd.daemon.interrupted import close_interrupted
from acpd.daemon.store import SessionStore


def call(call_id: str) -> dict[str, object]:
    return {"id": call_id, "name": "bash", "arguments": {}, "raw_arguments": "{}"}


def test_a_gap_in_the_middle_is_filled_in_place_and_whole_histories_are_untouched(
    tmp_path: Path,
) -> None:
    store = SessionStore(tmp_path / "s.sqlite3")
    store.create("s1", str(tmp_path), "ask", None)
    history = [
        {"role": "user", "text": "go"},
        {"role": "assistant", "text": "", "tool_calls": [call("a"), call("b")]},
        {"role": "tool", "text": "ok", "tool_call_id": "a"},
        # An older daemon went on after a crash: the next prompt follows the gap.
        {"role": "user", "text": "again"},
        {"role": "assistant", "text": "done"},
    ]
    for message in history:
        store.append_message("s1", message)
    store.append_update("s1", {"sessionUpdate": "tool_call", "toolCallId": "tc1",
                               "status": "pending", "title": "x"})
    store.append_update("s1", {"sessionUpdate": "tool_call", "toolCallId": "tc2",
                               "status": "pending", "title": "y"})
    store.append_update("s1", {"sessionUpdate": "tool_call_update", "toolCallId": "tc2",
                               "status": "completed"})
    closed = close_interrupted(store, "s1")
    assert [u["toolCallId"] for u in closed] == ["tc1"]
    assert closed[0]["status"] == "failed"
    messages = store.messages("s1")
    assert [(m["role"], m.get("tool_call_id")) for m in messages] == [
        ("user", None), ("assistant", None), ("tool", "a"), ("tool", "b"), ("user", None),
        ("assistant", None),
    ]
    assert "Interrupted" in messages[3]["text"] and messages[3]["is_error"]
    # Appends go on after the rewritten history; a second pass finds nothing to do.
    store.append_message("s1", {"role": "user", "text": "third"})
    assert store.messages("s1")[-1]["text"] == "third"
    assert close_interrupted(store, "s1") == []
    assert len(store.messages("s1")) == 7
    store.close()
