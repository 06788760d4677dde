"""Building `session/update` payloads from the tool layer's views and the loop's events."""

from __future__ import annotations

from typing import Any

from acpd.protocol import acp
from acpd.tools.spec import ContentItem, DiffItem, TerminalItem, TextItem, ToolCallView


def tool_call(view: ToolCallView, *, first: bool) -> dict[str, Any]:
    fields = acp.ToolCallFields(
        tool_call_id=view.tool_call_id,
        title=view.title,
        kind=view.kind,
        status=view.status,
        content=[_content(item) for item in view.content],
        locations=[acp.ToolCallLocation(path=p) for p in view.locations],
        raw_input=view.raw_input,
        raw_output=view.raw_output,
    ).to_wire()
    return {"sessionUpdate": "tool_call" if first else "tool_call_update", **fields}


def without_terminals(update: dict[str, Any]) -> dict[str, Any]:
    """The stored form of a card: a terminal is released after the turn and must not be
    named again, so replay keeps only the text that stood beside it."""
    content = update.get("content")
    if not content:
        return update
    kept = [c for c in content if c.get("type") != "terminal"]
    return {**update, "content": kept}


def _content(item: ContentItem) -> acp.ToolCallContent:
    if isinstance(item, TextItem):
        return acp.text_content(item.text)
    if isinstance(item, DiffItem):
        return acp.DiffToolCallContent(
            path=item.path, old_text=item.old_text, new_text=item.new_text
        )
    assert isinstance(item, TerminalItem)
    return acp.TerminalToolCallContent(terminal_id=item.terminal_id)


def message_chunk(kind: str, text: str) -> dict[str, Any]:
    """`agent_message_chunk`, `user_message_chunk` or `agent_thought_chunk`."""
    return {"sessionUpdate": kind, "content": {"type": "text", "text": text}}


def plan(entries: list[dict[str, Any]]) -> dict[str, Any]:
    steps = [acp.PlanEntry.model_validate(e).to_wire() for e in entries]
    return {"sessionUpdate": "plan", "entries": steps}


def available_commands(commands: list[acp.AvailableCommand]) -> dict[str, Any]:
    return {
        "sessionUpdate": "available_commands_update",
        "availableCommands": [c.to_wire() for c in commands],
    }


def current_mode(mode_id: str) -> dict[str, Any]:
    return {"sessionUpdate": "current_mode_update", "currentModeId": mode_id}


def config_options(options: list[acp.SessionConfigOption]) -> dict[str, Any]:
    return {
        "sessionUpdate": "config_option_update",
        "configOptions": [o.to_wire() for o in options],
    }


def usage(used: int, size: int) -> dict[str, Any]:
    return {"sessionUpdate": "usage_update", "used": max(0, used), "size": max(0, size)}
