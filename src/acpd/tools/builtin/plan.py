"""update_plan: the model writes its plan; the editor shows it as an ACP `plan` update."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from acpd.tools.spec import Effect, ToolContext, ToolOutput, ToolSpec, redaction


class PlanStep(BaseModel):
    model_config = ConfigDict(extra="forbid")

    content: str = Field(min_length=1, max_length=2000)
    status: Literal["pending", "in_progress", "completed"] = "pending"
    priority: Literal["high", "medium", "low"] = "medium"


class PlanParams(BaseModel):
    model_config = ConfigDict(extra="forbid")

    entries: list[PlanStep] = Field(min_length=1, max_length=100, description="The whole plan")


async def update_plan(args: PlanParams, ctx: ToolContext) -> ToolOutput:
    steps = [step.model_dump() for step in args.entries]
    done = sum(1 for s in args.entries if s.status == "completed")
    return ToolOutput(f"plan updated: {done}/{len(steps)} steps completed", raw={"plan": steps})


SPECS = [
    ToolSpec(
        id="core__update_plan",
        name="update_plan",
        description="Record or revise your plan as a list of steps with statuses.",
        params=PlanParams,
        effect=Effect.READ_ONLY,
        kind="think",
        execute=update_plan,
        title=lambda a: f"Plan: {len(a.entries)} steps",
        redaction=redaction(("entries",), ()),
    ),
]
