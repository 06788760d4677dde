"""TAFC (think-augmented function calling): a `_tafc_think` field in complex tool schemas.

The score of a schema is in [0, 1], from three parts (the seeds name the parts; the weights
and caps are ours, chosen so a flat tool with two or three string arguments stays well below
the default threshold 0.6 and a tool with many required arguments, nested objects and long
enums passes it):

    score = 0.5 * min(required / 4, 1)                      top-level required parameters
          + 0.3 * min(nesting / 2, 1)                       object/array levels below the top
          + 0.2 * min(log2(1 + enum) / log2(9), 1)          the largest enum anywhere

So a tool reaches 0.6 with, for example, four required arguments and an enum of three, or
two required arguments, an array of objects and an enum of eight.

A schema at or above the threshold gets `_tafc_think` (a string, first among the properties
so the model writes it before the real arguments, never required). It is added only for
providers with native tool use, and only to the copy sent to the model. The runner strips
every key starting with `_tafc_think` before anything else sees the call (tools/pipeline.py),
and skips a call that carried nothing else; `strip_stored` keeps it out of the session store.
Reading a schema never raises: a malformed part counts as zero. At most MAX_NODES nodes
of one schema are visited, MAX_LEVELS deep (a server's schema may be huge or very deep).
"""

from __future__ import annotations

import math
from typing import Any

import orjson

TAFC_FIELD = "_tafc_think"
"""Also the runner's prefix (pipeline.TAFC_PREFIX): every key starting with it is stripped."""
MAX_NODES = 2000
MAX_LEVELS = 16
THINK_DESCRIPTION = (
    "Before filling in the other parameters, reason step by step here about which values "
    "they need. This field is discarded before the tool runs and is never shown or stored."
)
HELD = "(arguments not stored: they held the model's reasoning field)"


def complexity(schema: Any) -> float:
    """The schema's TAFC score in [0, 1] (see the module docstring)."""
    if not isinstance(schema, dict):
        return 0.0
    required = schema.get("required")
    count = len([r for r in required if isinstance(r, str)]) if isinstance(required, list) else 0
    budget = [MAX_NODES]
    nesting = max(0, _depth(schema, budget) - 1)
    enum = _largest_enum(schema, [MAX_NODES])
    score = 0.5 * min(count / 4, 1.0) + 0.3 * min(nesting / 2, 1.0)
    if enum:
        score += 0.2 * min(math.log2(1 + enum) / math.log2(9), 1.0)
    return round(min(score, 1.0), 4)


def _children(node: dict[str, Any]) -> list[Any]:
    found: list[Any] = []
    props = node.get("properties")
    if isinstance(props, dict):
        found.extend(props.values())
    items = node.get("items")
    if isinstance(items, dict):
        found.append(items)
    elif isinstance(items, list):
        found.extend(items)
    extra = node.get("additionalProperties")
    if isinstance(extra, dict):
        found.append(extra)
    return found


def _depth(node: Any, budget: list[int], level: int = 0) -> int:
    """Levels of objects/arrays: a flat object is 1, an object in a property 2, ..."""
    if not isinstance(node, dict) or budget[0] <= 0 or level >= MAX_LEVELS:
        return 0
    budget[0] -= 1
    children = _children(node)
    if not children:
        return 0
    return 1 + max(_depth(child, budget, level + 1) for child in children)


def _largest_enum(node: Any, budget: list[int], level: int = 0) -> int:
    if not isinstance(node, dict) or budget[0] <= 0 or level >= MAX_LEVELS:
        return 0
    budget[0] -= 1
    enum = node.get("enum")
    here = len(enum) if isinstance(enum, list) else 0
    children = _children(node)
    return max([here, *(_largest_enum(c, budget, level + 1) for c in children)])


def can_augment(schema: Any) -> bool:
    """An object schema with properties, none of which already uses the TAFC prefix."""
    if not isinstance(schema, dict) or schema.get("type", "object") != "object":
        return False
    props = schema.get("properties")
    return isinstance(props, dict) and not any(
        isinstance(k, str) and k.startswith(TAFC_FIELD) for k in props
    )


def augment(schema: dict[str, Any]) -> dict[str, Any]:
    """A copy of `schema` with `_tafc_think` first among its properties (the nested parts
    are shared with the original, which is left as it was)."""
    props = schema.get("properties", {})
    think = {"type": "string", "description": THINK_DESCRIPTION}
    return {**schema, "properties": {TAFC_FIELD: think, **props}}


def strip_arguments(arguments: dict[str, Any] | None) -> dict[str, Any] | None:
    if arguments is None:
        return None
    return {k: v for k, v in arguments.items() if not k.startswith(TAFC_FIELD)}


def strip_raw(raw: str) -> str:
    """The argument text without TAFC fields (re-encoded); text that is not a JSON object
    but mentions the field is not kept at all."""
    if TAFC_FIELD not in raw:
        return raw
    try:
        value = orjson.loads(raw)
    except orjson.JSONDecodeError:
        return HELD
    if not isinstance(value, dict):
        return HELD
    return orjson.dumps(strip_arguments(value)).decode()


def strip_stored(call: dict[str, Any]) -> None:
    """Remove TAFC reasoning from one stored tool call (`ToolCallRequest.to_dict` form)."""
    if isinstance(call.get("arguments"), dict):
        call["arguments"] = strip_arguments(call["arguments"])
    if isinstance(call.get("raw_arguments"), str):
        call["raw_arguments"] = strip_raw(call["raw_arguments"])
    invalid = call.get("invalid_json")
    if isinstance(invalid, str) and TAFC_FIELD in invalid:
        call["invalid_json"] = HELD
