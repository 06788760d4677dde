"""ask_user: the model asks the user one question and waits for the answer.

In an editor that shows forms (ACP elicitation, form mode: daemon/elicitation.py) the
question is a form with one field, `answer`: free text, or one of `choices`. In any other
editor the tool says so at once, and the model asks in its reply instead (what it did
before this tool existed). The answer is the user's own words: nothing is made up for a
declined, dismissed or malformed answer.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from acpd.tools.errors import ErrorCategory, ToolError
from acpd.tools.spec import Effect, ToolContext, ToolOutput, ToolSpec, redaction

NO_FORMS = (
    "This editor cannot show a question form. Ask the user in your reply and end your turn; "
    "their answer comes with the next prompt."
)


class AskParams(BaseModel):
    model_config = ConfigDict(extra="forbid")

    question: str = Field(min_length=1, max_length=2000, description="What to ask the user")
    choices: list[str] = Field(
        default_factory=list, max_length=20,
        description="Answers to pick from; leave empty for a free-text answer",
    )


def form_schema(args: AskParams) -> dict[str, Any]:
    answer: dict[str, Any] = {"type": "string", "title": "Answer"}
    if args.choices:
        answer["enum"] = list(dict.fromkeys(c[:200] for c in args.choices))
    else:
        answer["minLength"] = 1
    return {"type": "object", "properties": {"answer": answer}, "required": ["answer"]}


async def ask_user(args: AskParams, ctx: ToolContext) -> ToolOutput:
    if ctx.elicit is None:
        raise ToolError(ErrorCategory.CONFIRMATION_REQUIRED, NO_FORMS, suggestion=NO_FORMS)
    reply = await ctx.elicit(ctx.tool_call_id, args.question, form_schema(args))
    if reply.action == "accept":
        answer = str(reply.content.get("answer", ""))
        return ToolOutput(f"The user answered: {answer}", raw={"action": "accept",
                                                               "answer": answer})
    if reply.action in ("decline", "cancel"):
        said = "declined to answer" if reply.action == "decline" else "dismissed the question"
        return ToolOutput(f"The user {said}. Do not ask again unless they bring it up.",
                          raw={"action": reply.action})
    raise ToolError(ErrorCategory.PERMANENT_FAILURE,
                    f"no usable answer from the editor ({reply.action}: {reply.reason})",
                    suggestion="Ask the user in your reply instead.")


SPECS = [
    ToolSpec(
        id="core__ask_user",
        name="ask_user",
        description=(
            "Ask the user one question and wait for the answer, when you cannot go on "
            "without it (a choice between options, a value only they know). Not for "
            "approvals: tool calls are approved on their own."
        ),
        params=AskParams,
        effect=Effect.READ_ONLY,
        kind="other",
        execute=ask_user,
        title=lambda a: f"Question: {a.question[:80]}",
        redaction=redaction(("question", "choices"), ("action",)),
        retry_safe=False,  # never ask twice because the first question failed
    ),
]
