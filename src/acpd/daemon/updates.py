"""Building `session/update` payloads from the tool layer's views and the loop's events.

A card carries what the model asked for: its title (the command) and rawInput. A credential
in them (a token pasted into a `curl -H`) is replaced here, in the one place every card
passes on its way to the editor, the permission prompt and the session store.
"""

from __future__ import annotations

from typing import Any

import acpd.tools.filters  # noqa: F401  (before secrets: see tools/redaction.py)
from acpd.protocol import acp
from acpd.tools.secrets import scan_secrets
from acpd.tools.spec import ContentItem, DiffItem, TerminalItem, TextItem, ToolCallView

SCRUBBED_TEXT_CHARS = 8192
"""Card texts up to this long are scanned here (a refusal's reason may quote the command);
longer ones are tool output, which the output stage has already redacted."""


def tool_call(view: ToolCallView, *, first: bool) -> dict[str, Any]:
    fields = acp.ToolCallFields(
        tool_call_id=view.tool_call_id,
        title=redact_text(view.title),
        kind=view.kind,
        status=view.status,
        content=[_content(item) for item in view.content],
        locations=[acp.ToolCallLocation(path=p, line=_line(view, i))
                   for i, p in enumerate(view.locations)],
        raw_input=redact_value(view.raw_input),
        raw_output=view.raw_output,
    ).to_wire()
    return {"sessionUpdate": "tool_call" if first else "tool_call_update", **fields}


def _line(view: ToolCallView, index: int) -> int | None:
    return view.lines[index] if index < len(view.lines) else None


def without_terminals(update: dict[str, Any]) -> dict[str, Any]:
    """The stored form of a card: a terminal is released after the turn and must not be
    named again, so replay keeps only the text that stood beside it."""
    content = update.get("content")
    if not content:
        return update
    kept = [c for c in content if c.get("type") != "terminal"]
    return {**update, "content": kept}


def redact_text(text: str) -> str:
    return scan_secrets(text)[0] if text else text


def redact_value(value: Any) -> Any:
    """Every string inside `value` with its credentials replaced (no other change)."""
    if isinstance(value, str):
        return redact_text(value)
    if isinstance(value, dict):
        return {k: redact_value(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [redact_value(v) for v in value]
    return value


def _content(item: ContentItem) -> acp.ToolCallContent:
    if isinstance(item, TextItem):
        text = item.text
        return acp.text_content(redact_text(text) if len(text) <= SCRUBBED_TEXT_CHARS else text)
    if isinstance(item, DiffItem):
        # Both sides scrubbed alike (a diff is bounded: tools/preview.py), so a credential the
        # file holds shows as the same placeholder on each side and the change stays visible.
        old = redact_text(item.old_text) if item.old_text is not None else None
        return acp.DiffToolCallContent(
            path=item.path, old_text=old, new_text=redact_text(item.new_text)
        )
    assert isinstance(item, TerminalItem)
    return acp.TerminalToolCallContent(terminal_id=item.terminal_id)


def message_chunk(kind: str, text: str, message_id: str | None = None) -> dict[str, Any]:
    """`agent_message_chunk`, `user_message_chunk` or `agent_thought_chunk`; `messageId`
    when given (daemon/session_info.py: one per message, stored so replays repeat it)."""
    chunk: dict[str, Any] = {"sessionUpdate": kind, "content": {"type": "text", "text": text}}
    if message_id is not None:
        chunk["messageId"] = message_id
    return chunk


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
