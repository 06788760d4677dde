"""ACP `elicitation/create`, form mode: a tool asks the user for a value through the editor.

Rules:
- Used only when the client advertised `clientCapabilities.elicitation.form`; otherwise a
  tool gets no form capability (`forms_for` returns None) and takes its existing path.
- One request per question, scoped to the session and the tool call (`sessionId`,
  `toolCallId`), `mode: "form"`, a `message` and a `requestedSchema` of primitive fields.
  No timeout: the user decides; a cancelled turn cancels the request (`$/cancel_request`).
- The answer is checked before a tool sees it: `accept` must carry an object whose values
  are of the schema's types (a string of the listed choices, when there are some) and hold
  every required field; anything else, and an unknown action, is `FormAnswer("invalid")`,
  never a value the user did not give. An error from the editor is `FormAnswer("error")`.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from acpd.daemon.errors import PeerError
from acpd.tools.spec import FormAnswer

if TYPE_CHECKING:
    from acpd.daemon.rpc import EditorPeer

log = logging.getLogger("acpd.elicitation")

_TYPES: dict[str, tuple[type, ...]] = {
    "string": (str,), "number": (int, float), "integer": (int,), "boolean": (bool,),
}


def client_takes_forms(raw_caps: Mapping[str, Any]) -> bool:
    elicitation = raw_caps.get("elicitation")
    return isinstance(elicitation, dict) and isinstance(elicitation.get("form"), dict)


class EditorForms:
    """The form capability a tool gets (tools/spec.py `Elicit`) for one session."""

    def __init__(self, conn: EditorPeer, session_id: str) -> None:
        self.conn = conn
        self.session_id = session_id

    async def __call__(
        self, tool_call_id: str, message: str, schema: dict[str, Any]
    ) -> FormAnswer:
        params = {
            "sessionId": self.session_id, "toolCallId": tool_call_id, "mode": "form",
            "message": message, "requestedSchema": schema,
        }
        try:
            answer = await self.conn.request("elicitation/create", params, timeout=None)
        except PeerError as exc:
            log.warning("elicitation/create failed: %s", exc)
            return FormAnswer("error", reason=str(exc)[:300])
        return checked_answer(answer, schema)


def checked_answer(answer: Any, schema: dict[str, Any]) -> FormAnswer:
    action = answer.get("action") if isinstance(answer, dict) else None
    if action in ("decline", "cancel"):
        return FormAnswer(action)
    if action != "accept":
        return FormAnswer("invalid", reason=f"unknown action {str(action)[:40]!r}")
    content = answer.get("content") or {}
    if not isinstance(content, dict):
        return FormAnswer("invalid", reason="the answer is not an object")
    fields: dict[str, Any] = schema.get("properties", {})
    for name in schema.get("required", []):
        if name not in content:
            return FormAnswer("invalid", reason=f"{name} is missing")
    for name, value in content.items():
        problem = _field_problem(fields.get(name), value)
        if problem:
            return FormAnswer("invalid", reason=f"{str(name)[:60]}: {problem}")
    return FormAnswer("accept", dict(content))


def _field_problem(field: Any, value: Any) -> str | None:
    if not isinstance(field, dict):
        return "not a field of the form"
    kinds = _TYPES.get(str(field.get("type")))
    if kinds is None or not isinstance(value, kinds) or (
            bool not in kinds and isinstance(value, bool)):
        return f"expected a {field.get('type')}"
    choices = field.get("enum")
    if isinstance(choices, list) and value not in choices:
        return "not one of the choices"
    return None
