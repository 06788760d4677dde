"""read_overflow: the model reads back an output that was too long to show it whole.

Only the calling session's entries are reachable: the tool is lent that session's view of the
store (ToolContext.overflow), and the store's query needs both the session and the entry id.
An entry of another session answers exactly like one that never existed.
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field

from acpd.tools.errors import ErrorCategory, ToolError
from acpd.tools.overflow import parse_reference, reference
from acpd.tools.spec import Effect, ToolContext, ToolOutput, ToolSpec, redaction

DEFAULT_LIMIT = 20_000
MAX_LIMIT = 50_000
"""At most this much a call: one read must not bring back the overflow it was cut for."""


class ReadOverflowParams(BaseModel):
    model_config = ConfigDict(extra="forbid")

    reference: str = Field(
        min_length=1, max_length=100,
        description="The reference from a cut output: overflow:<uuid> (or the bare uuid)",
    )
    offset: int = Field(0, ge=0, description="First character to return")
    limit: int = Field(
        DEFAULT_LIMIT, ge=1, le=MAX_LIMIT, description="Most characters to return"
    )


async def read_overflow(args: ReadOverflowParams, ctx: ToolContext) -> ToolOutput:
    entry_id = parse_reference(args.reference)
    if entry_id is None:
        raise ToolError(
            ErrorCategory.INVALID_PARAMETERS,
            "reference must be overflow:<uuid> as given in a cut output",
        )
    if ctx.overflow is None:
        raise ToolError(
            ErrorCategory.PERMANENT_FAILURE, "stored outputs are not available here"
        )
    content = ctx.overflow.load(entry_id)
    if content is None:
        raise ToolError(
            ErrorCategory.PERMANENT_FAILURE,
            f"no stored output {reference(entry_id)} in this session (it may have expired)",
        )
    total = len(content)
    start = min(args.offset, total)
    end = min(total, start + args.limit)
    part = content[start:end]
    if end < total:
        footer = f"[characters {start}-{end} of {total}; continue with offset={end}]"
    else:
        footer = f"[characters {start}-{end} of {total}; end of the stored output]"
    raw = {"id": entry_id, "offset": start, "returned": end - start, "total": total}
    return ToolOutput(f"{part}\n{footer}" if part else footer, raw=raw)


SPECS = [
    ToolSpec(
        id="core__read_overflow",
        name="read_overflow",
        description=(
            "Read a tool output that was too long and was cut: pass the overflow:<uuid> "
            "reference it gave, and offset/limit to page through it."
        ),
        params=ReadOverflowParams,
        effect=Effect.READ_ONLY,
        kind="read",
        execute=read_overflow,
        title=lambda a: f"Read stored output {a.reference[:60]}",
        redaction=redaction(
            ("reference", "offset", "limit"), ("id", "offset", "returned", "total")
        ),
    ),
]
