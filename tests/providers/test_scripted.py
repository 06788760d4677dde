"""The scripted provider: a script is checked when loaded, with the place of each fault."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import anyio
import pytest

from acpd.providers.base import ModelRequest, StopEvent, TextDelta
from acpd.providers.scripted import ScriptedProvider, ScriptError, load_script


def script(tmp_path: Path, turns: Any) -> Path:
    path = tmp_path / "s.json"
    path.write_text(json.dumps({"turns": turns}))
    return path


@pytest.mark.parametrize(
    ("turn", "message"),
    [
        ({"delay": -1}, "turns[0].delay must be a number of seconds"),
        ({"stall": "soon"}, "turns[0].stall must be a number of seconds"),
        ({"stall": True}, "turns[0].stall must be a number of seconds"),
        ({"text": 5}, "turns[0].text must be a string"),
        ({"chunks": "abc"}, "turns[0].chunks must be a list of strings"),
        ({"tool_calls": [{"arguments": {}}]}, "turns[0].tool_calls[0] needs a string name"),
    ],
)
def test_a_bad_turn_is_refused_with_its_place(tmp_path: Path, turn: Any, message: str) -> None:
    with pytest.raises(ScriptError, match=message.replace("[", r"\[").replace("]", r"\]")):
        load_script(script(tmp_path, [turn]))


def test_a_stall_holds_the_reply_after_its_text(tmp_path: Path) -> None:
    provider = ScriptedProvider(script(tmp_path, [{"chunks": ["a", "b"], "stall": 0.2}]))

    async def main() -> list[tuple[float, object]]:
        start = anyio.current_time()
        request = ModelRequest(system="", messages=[], tools=[])
        return [(anyio.current_time() - start, e) async for e in provider.stream(request)]

    events = anyio.run(main)
    texts = [e.text for _, e in events if isinstance(e, TextDelta)]
    assert texts == ["a", "b"]
    (stop_at, stop), = [(t, e) for t, e in events if isinstance(e, StopEvent)]
    assert stop.reason == "end_turn" and stop_at >= 0.2
    assert all(t < 0.2 for t, e in events if isinstance(e, TextDelta))
