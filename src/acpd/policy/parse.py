"""tree-sitter-bash walk: every simple command, redirect, assignment and blocked construct.

tree-sitter is imported on first use (the daemon must start fast). The walk is iterative (no
recursion limit), visits every node once, and records source text; values are computed later
by `words`. Nothing is skipped: commands inside substitutions, functions, here-doc pipelines
and ERROR nodes are all found.
"""

from __future__ import annotations

import re
import threading
from dataclasses import dataclass, field
from typing import Any

from acpd.policy.text import parser_safe

MAX_NODES = 50_000

_local = threading.local()


def _parser() -> Any:
    parser = getattr(_local, "parser", None)
    if parser is None:
        import tree_sitter
        import tree_sitter_bash

        parser = tree_sitter.Parser(tree_sitter.Language(tree_sitter_bash.language()))
        _local.parser = parser
    return parser


@dataclass(slots=True)
class Redirect:
    op: str
    target: str | None
    fd: str | None = None
    kind: str = "file"
    """file | heredoc | herestring"""


@dataclass(slots=True)
class SimpleCommand:
    words: list[str]
    """Source text of the command name and its arguments (empty: assignments or redirects only)."""
    assigns: list[tuple[str, str]] = field(default_factory=list)
    redirects: list[Redirect] = field(default_factory=list)
    function: str | None = None
    """Name of the function whose body holds this command."""
    keyword: str | None = None
    """`declare`/`export`/`local`/...: words are its operands."""
    heredoc: bool = False
    fallback: bool = False
    """Recovered from an ERROR node by plain tokenizing."""


@dataclass(slots=True)
class Script:
    commands: list[SimpleCommand] = field(default_factory=list)
    assigns: list[tuple[str, str]] = field(default_factory=list)
    for_vars: dict[str, list[str]] = field(default_factory=dict)
    functions: dict[str, set[str]] = field(default_factory=dict)
    blocked: list[tuple[str, str]] = field(default_factory=list)
    """(rule id, reason) of constructs on the unconditional blocklist."""
    has_error: bool = False
    too_big: bool = False


_REDIRECTS = {"file_redirect", "heredoc_redirect", "herestring_redirect"}
_LEAVES = frozenset({"word", "raw_string", "ansi_c_string", "number", "comment",
                     "heredoc_start", "heredoc_end", "heredoc_content", "string_content",
                     "variable_name", "test_operator", "file_descriptor", "special_variable_name",
                     "regex"})
_BLOCKED_NODES = {
    "process_substitution": ("blocklist.process-substitution",
                             "process substitution <(...)/>(...)"),
    "herestring_redirect": ("blocklist.here-string", "here-string <<<"),
}


def _text(node: Any) -> str:
    raw: bytes = node.text
    return raw.decode("utf-8", "surrogateescape")


def parse(source: str) -> Script:
    """Parse a command line. Raises ValueError for text the parser must never see (see
    `text.parser_safe`: tree-sitter-bash crashes the process on some code points)."""
    if not source.isascii() and not all(parser_safe(ch) for ch in source):
        raise ValueError("character outside the parsed Unicode planes")
    tree = _parser().parse(source.encode("utf-8", "surrogateescape"))
    script = Script()
    root = tree.root_node
    script.has_error = bool(root.has_error)
    stack: list[tuple[Any, str | None]] = [(root, None)]
    seen = 0
    while stack:
        node, fn = stack.pop()
        seen += 1
        if seen > MAX_NODES:
            script.too_big = True
            break
        kind = node.type
        if kind == "command":
            script.commands.append(_command(node, fn))
        elif kind == "redirected_statement":
            body = node.named_children[0] if node.named_child_count else None
            if body is not None and body.type != "command":
                reds = [_redirect(c) for c in node.named_children if c.type in _REDIRECTS]
                script.commands.append(SimpleCommand([], redirects=reds, function=fn))
        elif kind in ("declaration_command", "unset_command"):
            script.commands.append(_declaration(node, fn, script))
        elif kind == "variable_assignment":
            name, value = _assignment(node)
            script.assigns.append((name, value))
        elif kind == "function_definition":
            name_node = node.child_by_field_name("name") or node.named_children[0]
            fn = _text(name_node)
            script.functions.setdefault(fn, set())
        elif kind == "for_statement":
            var = node.child_by_field_name("variable")
            if var is not None:
                values = [_text(c) for c in node.children_by_field_name("value")]
                script.for_vars.setdefault(_text(var), []).extend(values or ["\x00?"])
        elif kind == "test_command":
            script.commands.append(
                SimpleCommand([_text(node.children[0]), *_leaf_words(node)], function=fn)
            )
        elif kind == "command_substitution":
            tick = _text(node).startswith("`")
            script.blocked.append(
                ("blocklist.backticks" if tick else "blocklist.command-substitution",
                 "backtick substitution" if tick else "command substitution $(...)")
            )
        elif kind in _BLOCKED_NODES:
            script.blocked.append(_BLOCKED_NODES[kind])
        elif kind == "arithmetic_expansion" and _text(node).startswith("$["):
            script.blocked.append(("blocklist.legacy-arithmetic", "legacy arithmetic $[...]"))
        elif kind == "expansion" and any(c.type == "@" for c in node.children):
            script.blocked.append(("blocklist.transform", "parameter transform ${var@op}"))
        elif kind == "ERROR":
            script.has_error = True
            script.commands.extend(_fallback(_text(node), fn))
        stack.extend((c, fn) for c in reversed(node.named_children) if c.type not in _LEAVES)
    _calls(script)
    return script


def _calls(script: Script) -> None:
    for cmd in script.commands:
        if cmd.function is not None and cmd.words:
            script.functions.setdefault(cmd.function, set()).add(cmd.words[0])


def _command(node: Any, fn: str | None) -> SimpleCommand:
    cmd = SimpleCommand([], function=fn)
    for child in node.named_children:
        kind = child.type
        if kind == "variable_assignment":
            cmd.assigns.append(_assignment(child))
        elif kind == "command_name":
            cmd.words.append(_text(child))
        elif kind in _REDIRECTS:
            cmd.redirects.append(_redirect(child))
        elif kind == "comment":
            continue
        else:
            cmd.words.append(_text(child))
    parent = node.parent
    if parent is not None and parent.type == "redirected_statement":
        for sib in parent.named_children:
            if sib.type in _REDIRECTS:
                cmd.redirects.append(_redirect(sib))
    cmd.heredoc = any(r.kind == "heredoc" for r in cmd.redirects)
    return cmd


def _declaration(node: Any, fn: str | None, script: Script) -> SimpleCommand:
    keyword = _text(node.children[0]) if node.child_count else "declare"
    cmd = SimpleCommand([keyword], function=fn, keyword=keyword)
    for child in node.named_children:
        if child.type == "variable_assignment":
            name, value = _assignment(child)
            cmd.assigns.append((name, value))
            cmd.words.append(_text(child))
        elif child.type in _REDIRECTS:
            cmd.redirects.append(_redirect(child))
        else:
            cmd.words.append(_text(child))
    return cmd


def _assignment(node: Any) -> tuple[str, str]:
    text = _text(node)
    name, _, value = text.partition("=")
    return name.rstrip("+"), value


def _redirect(node: Any) -> Redirect:
    kind = node.type
    if kind == "heredoc_redirect":
        return Redirect("<<", None, kind="heredoc")
    if kind == "herestring_redirect":
        return Redirect("<<<", None, kind="herestring")
    op = ""
    fd: str | None = None
    target: str | None = None
    for child in node.children:
        if child.type == "file_descriptor":
            fd = _text(child)
        elif not child.is_named:
            op += child.type
        elif child.type == "ERROR":
            op += _text(child)
        elif target is None:
            target = _text(child)
    return Redirect(op, target, fd)


_LEAF = {"word", "string", "raw_string", "concatenation", "ansi_c_string", "number",
         "simple_expansion", "expansion", "translated_string", "test_operator"}


def _leaf_words(node: Any) -> list[str]:
    out: list[str] = []
    stack = [node]
    while stack:
        cur = stack.pop()
        if cur is not node and cur.type in _LEAF:
            out.append(_text(cur))
            continue
        stack.extend(reversed(cur.named_children))
    return out


_TOKEN = re.compile(r"""(?:[^\s;&|()'"\\]|\\.|'[^']*'?|"(?:[^"\\]|\\.)*"?)+|&&|\|\||[;&|()]""")


def _fallback(text: str, fn: str | None) -> list[SimpleCommand]:
    """Best-effort commands from text tree-sitter could not parse (judged in addition)."""
    out: list[SimpleCommand] = []
    current: list[str] = []
    for m in _TOKEN.finditer(text):
        tok = m.group(0)
        if tok in (";", "&", "|", "&&", "||", "(", ")"):
            if current:
                out.append(SimpleCommand(current, function=fn, fallback=True))
            current = []
        elif tok not in ("{", "}"):
            current.append(tok)
    if current:
        out.append(SimpleCommand(current, function=fn, fallback=True))
    return out
