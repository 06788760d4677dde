"""The ToolSpec of one MCP tool, and the check of its arguments against the server's schema.

No SDK import here: the pipeline and the trust rule look at these specs on every call.

The model is shown the server's input schema cut down to the subset every provider accepts
(tools/schema.py: titles dropped, `$ref`s inlined, nullable unions flattened, and whatever
is still outside the subset left out, which only loosens it); the arguments are then checked
against the server's whole schema (JSON Schema, with unknown top-level keys refused unless the
schema allows them) before the policy decision, so a bad call never reaches the server or the
user's prompt.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from pydantic import BaseModel, ConfigDict

from acpd.tools.errors import ErrorCategory, ToolError
from acpd.tools.spec import ToolSpec

MAX_ERRORS = 5


class McpArguments(BaseModel):
    """Any object: the server's JSON Schema, not a pydantic model, says what is valid."""

    model_config = ConfigDict(extra="allow")


@dataclass(frozen=True, slots=True)
class McpToolSpec(ToolSpec):
    server: str = ""
    """The server's name as the editor passed it."""
    tool: str = ""
    """The tool's own name on its server (what `tools/call` is sent)."""
    schema: Mapping[str, Any] = field(default_factory=dict)
    """What the model is shown (restricted, see tools/schema.py)."""
    allowed: bool = False
    """Named in `[mcp.servers.<server>] allow`: runs without a prompt."""
    identity: str = ""
    """ServerParams.identity: remembered answers are bound to it."""

    def input_schema(self) -> dict[str, Any]:
        return copy.deepcopy(dict(self.schema))


def arguments_of(parsed: Any) -> dict[str, Any]:
    if isinstance(parsed, BaseModel):
        return dict(parsed.model_dump())
    return dict(parsed) if isinstance(parsed, Mapping) else {}


def check_arguments(full_schema: Mapping[str, Any], args: dict[str, Any]) -> None:
    """Raises ToolError (TypeMismatch when every problem is a type, else InvalidParameters).
    A schema the validator cannot read lets the server judge the call."""
    import jsonschema  # type: ignore[import-untyped]

    schema = dict(full_schema)
    props = schema.get("properties")
    if isinstance(props, dict) and "additionalProperties" not in schema:
        unknown = sorted(k for k in args if k not in props)
        if unknown:
            raise ToolError(
                ErrorCategory.INVALID_PARAMETERS,
                f"unknown argument(s) {', '.join(unknown)[:300]}; the tool takes "
                f"{', '.join(sorted(props))[:300] or 'none'}",
            )
    try:
        validator_class = jsonschema.validators.validator_for(schema)
        validator = validator_class(schema)
        problems = sorted(validator.iter_errors(args), key=lambda e: list(e.path))
    except (jsonschema.SchemaError, TypeError, ValueError, RecursionError):
        return
    if not problems:
        return
    every_type = all(p.validator == "type" for p in problems)
    detail = "; ".join(
        f"{'.'.join(str(x) for x in p.path) or '(arguments)'}: {p.message[:200]}"
        for p in problems[:MAX_ERRORS]
    )
    category = ErrorCategory.TYPE_MISMATCH if every_type else ErrorCategory.INVALID_PARAMETERS
    raise ToolError(category, detail[:800])
