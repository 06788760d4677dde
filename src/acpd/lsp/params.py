"""Checking `workspace/executeCommand` arguments: one JSON object, the documented keys only.

Anything else is the caller's mistake and is answered with InvalidParams (-32602) naming what
was wrong; nothing here raises anything else.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from pygls.exceptions import JsonRpcInvalidParams

MAX_TEXT = 1 << 20
"""The largest prompt accepted (characters)."""


@dataclass(frozen=True, slots=True)
class RunToolArgs:
    tool: str
    arguments: dict[str, Any]


def invalid(message: str) -> JsonRpcInvalidParams:
    return JsonRpcInvalidParams(message=message)


def _single_object(command: str, args: tuple[Any, ...], keys: set[str]) -> dict[str, Any]:
    if len(args) != 1 or not isinstance(args[0], dict):
        raise invalid(f"{command} takes one argument, a JSON object with {sorted(keys)}")
    value: dict[str, Any] = args[0]
    unknown = sorted(set(value) - keys)
    if unknown:
        raise invalid(f"{command}: unknown key(s) {unknown}; expected {sorted(keys)}")
    return value


def run_tool_args(args: tuple[Any, ...]) -> RunToolArgs:
    """`[{"tool": NAME, "arguments": {...}}]` ("arguments" may be left out, or `[]` for
    none); raises JsonRpcInvalidParams."""
    value = _single_object("acpd.runTool", args, {"tool", "arguments"})
    tool = value.get("tool")
    if not isinstance(tool, str) or not tool.strip() or len(tool) > 200:
        raise invalid("acpd.runTool: 'tool' must be a tool name (a non-empty string)")
    arguments = value.get("arguments", {})
    if arguments == []:  # Lua clients (Neovim's vim.json) encode an empty table as []
        arguments = {}
    if not isinstance(arguments, dict):
        raise invalid("acpd.runTool: 'arguments' must be a JSON object")
    return RunToolArgs(tool, arguments)


def prompt_text(args: tuple[Any, ...]) -> str:
    """`[{"text": ...}]`; raises JsonRpcInvalidParams."""
    value = _single_object("acpd.prompt", args, {"text"})
    text = value.get("text")
    if not isinstance(text, str) or not text.strip():
        raise invalid("acpd.prompt: 'text' must be a non-empty string")
    if len(text) > MAX_TEXT:
        raise invalid(f"acpd.prompt: 'text' is longer than {MAX_TEXT} characters")
    return text
