"""The JSON Schema a model is shown, derived from a tool's pydantic model, in a restricted subset.

Providers differ in what they accept; the subset every one of them handles has no composition
keywords (oneOf/anyOf/allOf/not/if/then/else), no patternProperties and no references. So:
  - `X | None` fields (pydantic renders them `anyOf: [X, {type: null}]`) are flattened to `X`:
    such a field is optional and its default is None, so omitting it means the same thing;
  - `$ref`s to `$defs` are inlined (a recursive model cannot be, and is refused);
  - titles are dropped (noise for the model);
  - anything else outside the subset is refused at registration with SchemaError.
"""

from __future__ import annotations

import copy
from functools import lru_cache
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from pydantic import BaseModel

FORBIDDEN = frozenset(
    {"oneOf", "anyOf", "allOf", "not", "if", "then", "else", "patternProperties", "$ref"}
)
MAX_REF_DEPTH = 16


class SchemaError(ValueError):
    """A tool's parameters model renders outside the restricted subset."""


@lru_cache(maxsize=256)
def _rendered(model: type[BaseModel]) -> dict[str, Any]:
    raw = model.model_json_schema()
    defs = raw.pop("$defs", {})
    schema: dict[str, Any] = _clean(raw, defs, 0)
    problems = list(forbidden_keywords(schema))
    if problems:
        raise SchemaError(
            f"{model.__name__}: the schema uses {', '.join(sorted(set(problems)))}, outside "
            "the subset every provider accepts (no oneOf/anyOf/allOf/not/if, no $ref)"
        )
    return schema


def render_schema(model: type[BaseModel]) -> dict[str, Any]:
    """The model's restricted schema (a fresh copy). Raises SchemaError outside the subset."""
    return copy.deepcopy(_rendered(model))


def forbidden_keywords(node: Any) -> list[str]:
    """Every forbidden keyword anywhere in `node` (property names are not keywords)."""
    found: list[str] = []
    if isinstance(node, dict):
        for key, value in node.items():
            if key in FORBIDDEN:
                found.append(key)
            if key == "properties" and isinstance(value, dict):
                for prop in value.values():
                    found.extend(forbidden_keywords(prop))
            else:
                found.extend(forbidden_keywords(value))
    elif isinstance(node, list):
        for item in node:
            found.extend(forbidden_keywords(item))
    return found


def _clean(node: Any, defs: dict[str, Any], depth: int) -> Any:
    if isinstance(node, list):
        return [_clean(item, defs, depth) for item in node]
    if not isinstance(node, dict):
        return node
    ref = node.get("$ref")
    if isinstance(ref, str) and ref.startswith("#/$defs/"):
        if depth >= MAX_REF_DEPTH:
            raise SchemaError(f"{ref}: a recursive model cannot be inlined")
        target = defs.get(ref.removeprefix("#/$defs/"))
        if target is None:
            raise SchemaError(f"{ref}: dangling reference")
        merged = {**target, **{k: v for k, v in node.items() if k != "$ref"}}
        return _clean(merged, defs, depth + 1)
    variants = node.get("anyOf")
    if isinstance(variants, list):
        kept = [v for v in variants if v != {"type": "null"}]
        if len(kept) == 1 and len(kept) < len(variants):
            flat = {k: v for k, v in node.items() if k != "anyOf"}
            if flat.get("default", 0) is None:
                del flat["default"]
            node = {**kept[0], **flat}
    out: dict[str, Any] = {}
    for key, value in node.items():
        if key == "title" and isinstance(value, str):
            continue
        if key == "properties" and isinstance(value, dict):
            out[key] = {name: _clean(prop, defs, depth) for name, prop in value.items()}
        else:
            out[key] = _clean(value, defs, depth)
    return out


MAX_FOREIGN_SCHEMA = 64 * 1024


def restrict(raw: dict[str, Any]) -> dict[str, Any]:
    """A schema written elsewhere (an MCP server's) cut to the subset: cleaned like ours, then
    whatever is still outside the subset left out (which only loosens it: the caller checks
    arguments against the original). Raises SchemaError for one too large or unreadable."""
    import orjson

    try:
        if len(orjson.dumps(raw)) > MAX_FOREIGN_SCHEMA:
            raise SchemaError(f"the input schema is larger than {MAX_FOREIGN_SCHEMA} bytes")
        defs = raw.get("$defs") or raw.get("definitions") or {}
        body = {k: v for k, v in raw.items() if k not in ("$defs", "definitions", "$schema")}
        cleaned = _drop_forbidden(_clean(body, defs if isinstance(defs, dict) else {}, 0))
    except (TypeError, RecursionError, orjson.JSONEncodeError) as exc:
        raise SchemaError(f"the input schema cannot be read: {exc}") from None
    if not isinstance(cleaned, dict):
        raise SchemaError("the input schema is not an object")
    cleaned.setdefault("type", "object")
    cleaned.setdefault("properties", {})
    return cleaned


def _drop_forbidden(node: Any) -> Any:
    if isinstance(node, list):
        return [_drop_forbidden(item) for item in node]
    if not isinstance(node, dict):
        return node
    out: dict[str, Any] = {}
    for key, value in node.items():
        if key == "properties" and isinstance(value, dict):
            out[key] = {name: _drop_forbidden(prop) for name, prop in value.items()}
        elif key not in FORBIDDEN:
            out[key] = _drop_forbidden(value)
    return out
