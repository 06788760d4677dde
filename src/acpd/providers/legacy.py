"""Legacy text invocation: tool calls read from the text of a model without native tool use.

A model listed in `[tools.legacy] models` is sent no tool schemas. Its system prompt lists the
tools instead, and it calls them in its reply text:

  - a fenced block tagged `bash` runs its body as the bash tool's command;
  - a fenced block tagged `tool_call` (or `json`) holding `{"tool_id": NAME, "params": {...}}`
    calls any tool (`name`/`arguments` are accepted for `tool_id`/`params`).

Each call goes through the runner like a native one (same policy, gates, cards and audit),
then the results go back to the model as one user message of text.

Parsing rules (CommonMark fences, so what the editor renders as a block is what runs):
  - a fence is a line of 3+ backticks or tildes (any indentation, for blocks in lists); the
    block ends at a line of the same character, at least as long, with nothing else; the
    info string's first word, case-insensitive, is the tag;
  - a block inside another block is content, never a call (```` ```bash ```` inside a
    ```` ````markdown ```` example does not run);
  - a block still open at the end of the reply is not run (a reply cut off mid-command
    must not run half a command): the model is told;
  - a `tool_call` block that is not a JSON object of that shape is not run: the model is
    told why; a `json` block without `tool_id`/`name` is just JSON, ignored;
  - blocks tagged `sh`, `shell`, `console` and the like are shown, never run;
  - outside blocks, a ToolCall object written bare is a call too when it starts a line with
    `{"tool_id"` (one line or several): `tool_id` spelled out, so prose that mentions a JSON
    object in passing, or a bare `{"name": ...}`, is never taken for a call.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any, Protocol

import orjson

from acpd.providers.base import ModelRequest, ToolCallRequest, ToolDefinition

BARE = "\x00bare"
"""The tag of a ToolCall object written outside any block."""
BASH_TAGS = frozenset({"bash"})
CALL_TAGS = frozenset({"tool_call", "toolcall"})
JSON_TAGS = frozenset({"json"})
MAX_SCHEMA_CHARS = 2000
_FENCE = re.compile(r"^[ \t]*(`{3,}|~{3,})(.*)$")
# Markdown's line endings only: a U+2028 or a form feed does not start a line in the editor,
# so it must not start a fence here (what runs is what the editor shows as a block).
_LINE_BREAK = re.compile(r"\r\n|\r|\n")
_BARE_START = re.compile(r'^[ \t]*\{\s*"tool_id"\s*:')
_DECODER = json.JSONDecoder()

INSTRUCTIONS = """\
This model has no native tool calls: call tools by writing blocks in your reply.
- To run a shell command, write a fenced code block tagged bash:
```bash
ls src
```
- To call any other tool, write a fenced block tagged tool_call holding one JSON object:
```tool_call
{{"tool_id": "read", "params": {{"path": "README.md"}}}}
```
Every such block is one call and runs when your reply ends; the results come back in the \
next message. Blocks tagged anything else (sh, console, text) are only shown. Write a call \
only when you mean to run it, and stop after your calls to wait for the results.
Tools:
{tools}"""


@dataclass(slots=True)
class Extracted:
    calls: list[ToolCallRequest] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)
    """Blocks that were not run, and why (told to the model)."""


def system_prompt(base: str, tools: list[ToolDefinition]) -> str:
    """`base` followed by the invocation instructions and the tool list."""
    listing = "\n".join(_describe(t) for t in tools) or "(no tools are available now)"
    return f"{base}\n\n{INSTRUCTIONS.format(tools=listing)}"


def _describe(tool: ToolDefinition) -> str:
    params = orjson.dumps(tool.parameters.get("properties", {})).decode()
    if len(params) > MAX_SCHEMA_CHARS:
        params = params[:MAX_SCHEMA_CHARS] + "..."
    required = tool.parameters.get("required", [])
    how = "```bash block" if tool.name == "bash" else "tool_call block"
    return f"- {tool.name} ({how}): {tool.description}\n  params: {params}; required: {required}"


def extract(text: str, first_id: int = 1) -> Extracted:
    """Every call in a reply's text, in order, with the problems of the blocks not run."""
    found = Extracted()
    for tag, body, closed, line in _blocks(text):
        number = first_id + len(found.calls)
        call_id = f"legacy_{number}"
        if tag in BASH_TAGS:
            if not closed:
                found.problems.append(f"the ```bash block at line {line} is not closed: "
                                      "it was not run")
                continue
            found.calls.append(ToolCallRequest(call_id, "bash", {"command": body}, body))
        elif tag in CALL_TAGS or tag in JSON_TAGS or tag == BARE:
            _tool_call(found, tag, body, closed, line, call_id)
    return found


def _tool_call(found: Extracted, tag: str, body: str, closed: bool, line: int,
               call_id: str) -> None:
    explicit = tag in CALL_TAGS or tag == BARE
    try:
        value = orjson.loads(body) if closed else None
    except orjson.JSONDecodeError as exc:
        if explicit:
            found.problems.append(f"the tool_call block at line {line} is not JSON ({exc.msg}): "
                                  "it was not run")
        return
    if not closed:
        if explicit:
            found.problems.append(f"the tool_call block at line {line} is not closed: "
                                  "it was not run")
        return
    call = _shape(value)
    if isinstance(call, str):
        if explicit or (isinstance(value, dict) and ("tool_id" in value or "name" in value)):
            found.problems.append(f"the tool_call block at line {line} {call}: it was not run")
        return
    name, params = call
    found.calls.append(ToolCallRequest(call_id, name, params, body))


def _shape(value: Any) -> tuple[str, dict[str, Any]] | str:
    """(name, params) of a ToolCall object, or what is wrong with it."""
    if not isinstance(value, dict):
        return "is not a JSON object"
    name = value.get("tool_id", value.get("name"))
    params = value.get("params", value.get("arguments", {}))
    extra = set(value) - {"tool_id", "name", "params", "arguments"}
    if not isinstance(name, str) or not name:
        return 'has no "tool_id" string'
    if not isinstance(params, dict):
        return 'has "params" that is not an object'
    if extra:
        return f"has unknown keys {sorted(extra)}"
    return name, params


def _blocks(text: str) -> list[tuple[str, str, bool, int]]:
    """(tag, body, closed, first line number) of each top-level fenced block."""
    blocks: list[tuple[str, str, bool, int]] = []
    lines = _LINE_BREAK.split(text)
    n = 0
    while n < len(lines):
        opening = _FENCE.match(lines[n])
        if opening is None or (opening.group(1)[0] == "`" and "`" in opening.group(2)):
            bare = _bare_call(lines, n)
            if bare is not None:
                blocks.append((BARE, bare[0], True, n + 1))
            n = bare[1] if bare is not None else n + 1
            continue
        bar, info = opening.group(1), opening.group(2).strip()
        tag = info.split()[0].lower() if info else ""
        start = n + 1
        end = start
        while end < len(lines) and not _closes(lines[end], bar):
            end += 1
        closed = end < len(lines)
        blocks.append((tag, "\n".join(lines[start:end]), closed, n + 1))
        n = end + 1
    return blocks


def _bare_call(lines: list[str], n: int) -> tuple[str, int] | None:
    """(JSON text, next line) of a ToolCall object starting line `n`, or None."""
    if not _BARE_START.match(lines[n]):
        return None
    rest = "\n".join(lines[n:])
    start = len(rest) - len(rest.lstrip())
    try:
        _, end = _DECODER.raw_decode(rest, start)
    except ValueError:
        # Not JSON: the first line is reported as a broken call, the rest read on.
        return lines[n].strip(), n + 1
    if rest[end:].split("\n", 1)[0].strip():  # text after the object on its last line
        return None
    return rest[start:end], n + 1 + rest[:end].count("\n")


def _closes(line: str, bar: str) -> bool:
    stripped = line.strip()
    return len(stripped) >= len(bar) and stripped == bar[0] * len(stripped)


def results_message(results: list[tuple[ToolCallRequest, str]], problems: list[str],
                    note: str = "") -> str:
    """The user message that carries a round's results back to the model."""
    parts = ["[tool results]"]
    for n, (call, text) in enumerate(results, 1):
        parts.append(f"--- result {n}: {call.name} ---\n{text}")
    parts.extend(f"[not run] {p}" for p in problems)
    return "\n".join(parts) + note


class _Reply(Protocol):
    text: str
    calls: list[ToolCallRequest]
    dropped: int


def text_request(request: ModelRequest) -> ModelRequest:
    """The request a legacy model gets: no tool schemas, the tools in the system prompt."""
    return ModelRequest(system_prompt(request.system, request.tools), request.messages, [],
                        request.max_tokens)


def take_calls(reply: _Reply, max_calls: int) -> list[str]:
    """Fill `reply.calls` from its text (at most `max_calls`, the rest counted in
    `dropped`); the problems of the blocks that were not run."""
    found = extract(reply.text)
    reply.calls = found.calls[:max_calls]
    reply.dropped = len(found.calls) - len(reply.calls)
    return found.problems
