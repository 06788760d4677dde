"""Elicitation (form mode) over the official Python SDK: the `ask_user` tool asks the user
through an `elicitation/create` form when the client advertises `elicitation.form`, checks
the answer against the form, and without the capability sends nothing and tells the model
to ask in its reply. Schema-checked (v1) on every run."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from acp.schema import (
    AcceptElicitationResponse,
    ClientCapabilities,
    DeclineElicitationResponse,
    ElicitationCapabilities,
    ElicitationFormCapabilities,
    FileSystemCapabilities,
)

from tests.e2e.client import RecordingClient, dump
from tests.e2e.harness import acpd, write_script

pytestmark = pytest.mark.anyio


@dataclass
class FormClient(RecordingClient):
    """Answers each form with the next of `replies` (a dict of content, or "decline")."""

    replies: list[Any] = field(default_factory=list)

    async def create_elicitation(self, message: str, mode: Any, **kwargs: Any) -> Any:
        self._record("elicitation/create", {"message": message, **dump(mode)})
        reply = self.replies.pop(0)
        if reply == "decline":
            return DeclineElicitationResponse(action="decline")
        return AcceptElicitationResponse(action="accept", content=reply)


def form_caps() -> ClientCapabilities:
    return ClientCapabilities(
        fs=FileSystemCapabilities(read_text_file=False, write_text_file=False), terminal=False,
        elicitation=ElicitationCapabilities(form=ElicitationFormCapabilities()),
    )


def asking(tmp: Path, *questions: dict[str, Any]) -> Path:
    turns: list[dict[str, Any]] = [
        {"tool_calls": [{"name": "ask_user", "arguments": q}]} for q in questions
    ]
    return write_script(tmp / "ask.json", [*turns, {"text": "thanks"}])


def results(client: RecordingClient) -> list[dict[str, Any]]:
    return [client.final(c["toolCallId"]) for c in client.tool_calls()]


async def test_a_tool_asks_through_a_form_and_gets_the_users_answer(
    tmp_path: Path, data_dir: Path, workspace: Path
) -> None:
    script = asking(
        tmp_path,
        {"question": "Which database?", "choices": ["postgres", "sqlite"]},
        {"question": "Your name?"},
        {"question": "Pick one", "choices": ["a", "b"]},
    )
    client = FormClient(replies=[{"answer": "sqlite"}, "decline", {"answer": "c"}])
    async with acpd(tmp_path, data_dir=data_dir, workspace=workspace, client=client,
                    script=script, unstable=True) as run:
        session_id = await run.open_session(form_caps())
        assert await run.prompt(session_id, "set it up") == "end_turn"
    first, second, _ = client.calls("elicitation/create")
    [call, *_] = client.tool_calls()
    assert first["message"] == "Which database?"
    assert first["sessionId"] == session_id and first["toolCallId"] == call["toolCallId"]
    answer = first["requestedSchema"]["properties"]["answer"]
    assert answer["enum"] == ["postgres", "sqlite"]
    assert first["requestedSchema"]["required"] == ["answer"]
    assert second["requestedSchema"]["properties"]["answer"]["minLength"] == 1
    accepted, declined, invalid = results(client)
    assert accepted["status"] == "completed"
    assert accepted["rawOutput"] == {"action": "accept", "answer": "sqlite"}
    assert declined["status"] == "completed"
    assert declined["rawOutput"] == {"action": "decline"}
    # "c" is not one of the choices: never passed on as if the user had picked it.
    assert invalid["status"] == "failed"
    assert "not one of the choices" in str(invalid["content"])


async def test_without_the_capability_no_form_is_sent(
    tmp_path: Path, data_dir: Path, workspace: Path
) -> None:
    script = asking(tmp_path, {"question": "Which database?"})
    client = FormClient(replies=[{"answer": "never used"}])
    async with acpd(tmp_path, data_dir=data_dir, workspace=workspace, client=client,
                    script=script, unstable=True) as run:
        session_id = await run.open_session()
        assert await run.prompt(session_id, "set it up") == "end_turn"
    assert client.calls("elicitation/create") == []
    [result] = results(client)
    assert result["status"] == "failed"
    assert "Ask the user in your reply" in str(result["content"])
