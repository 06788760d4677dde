"""What the tree walk (`treewalk`) does with each kind of node: the node kinds it acts on, the
walk's state, and one function per construct (commands, redirects, declarations,
assignments, test commands, arithmetic and `${...}` contexts, blocked constructs).

Node kinds of the installed grammar and what happens with each are listed in `treewalk`'s
docstring. Loops over a node's children check the decision's time budget every 256 steps.
"""

from __future__ import annotations

from typing import Any, Final

from acpd.policy.budget import check
from acpd.policy.rawtext import fallback
from acpd.policy.script import Redirect, Script, SimpleCommand

REDIRECTS: Final = {"file_redirect", "heredoc_redirect", "herestring_redirect"}
LEAVES: Final = frozenset({"word", "raw_string", "ansi_c_string", "number", "comment",
                           "heredoc_start", "heredoc_end", "heredoc_content", "string_content",
                           "variable_name", "test_operator", "file_descriptor",
                           "special_variable_name", "regex"})
_BLOCKED_NODES: Final = {
    "process_substitution": ("blocklist.process-substitution",
                             "process substitution <(...)/>(...)"),
    "herestring_redirect": ("blocklist.here-string", "here-string <<<"),
}


HANDLED: Final = frozenset({"command", "redirected_statement", "declaration_command",
                            "unset_command", "variable_assignment", "function_definition",
                            "for_statement", "test_command", "command_substitution",
                            "arithmetic_expansion", "expansion", "ERROR", "compound_statement",
                            "c_style_for_statement", "subscript", "heredoc_redirect",
                            "file_redirect", *_BLOCKED_NODES})
"""Node kinds the walk acts on; every other named node is only descended into."""


class Walk:
    """State of one walk: the source (to slice node text from) and redirects that a
    `redirected_statement` hands to its command."""

    __slots__ = ("amp", "arith_starts", "data", "extra", "extra_words", "masks", "source",
                 "suspicious")

    def __init__(self, source: str, data: bytes) -> None:
        self.source: str | None = source if source.isascii() else None
        self.data = data
        self.extra: dict[int, list[Redirect]] = {}
        self.extra_words: dict[int, list[str]] = {}
        """Arguments tree-sitter hangs on a redirect (`cat 2>/dev/null .env`: `.env` is a
        second `destination` of the redirect; bash passes it to `cat`), per command node."""
        # (tested on the text: the same answer, ASCII encodes as itself and no other
        # character's bytes are ASCII; `in` on bytes first tries the operand as an int and
        # pays for the TypeError)
        self.suspicious = "`" in source or "$(" in source
        """Only then are quoted ranges collected for the raw substitution scan."""
        self.masks: list[tuple[int, int]] = []
        """Byte ranges bash does not expand: single-quoted text, quoted here-doc bodies."""
        self.arith_starts: set[int] = set()
        self.amp = "&" in source
        """Only then can a command be an asynchronous job (`&`)."""

    def text(self, node: Any) -> str:
        if self.source is not None:  # ASCII: byte offsets are character offsets
            return self.source[node.start_byte : node.end_byte]
        return self.data[node.start_byte : node.end_byte].decode("utf-8", "surrogateescape")


QUOTING: Final = frozenset({"string", "translated_string", "heredoc_body"})
SINGLE_QUOTED: Final = frozenset({"raw_string", "ansi_c_string", "comment"})
"""Leaves bash does not expand (outside double quotes): single-quoted strings, comments."""


def mask_words(node: Any, w: Walk) -> None:
    """Single-quoted words of a command the walk does not descend into (a command's words
    always start a fresh quoting context)."""
    for child in node.named_children:
        if child.type in SINGLE_QUOTED:
            w.masks.append((child.start_byte, child.end_byte))


_REDIRECT_OWNERS: Final = frozenset({"command", "redirected_statement", "heredoc_redirect",
                                     "declaration_command", "unset_command"})
"""Nodes whose redirects are handed to a simple command; a redirect under any other node
(`f() { ...; } >/etc/x`, applied whenever f runs) is judged on its own."""


def visit(node: Any, kind: str, fn: str | None, script: Script, w: Walk) -> str | None:
    """Act on one node; return a function name when the node defines one (for its body)."""
    if kind in ("file_redirect", "heredoc_redirect"):
        parent = node.parent
        if parent is not None and parent.type not in _REDIRECT_OWNERS:
            reds: list[Redirect] = []
            extras: list[str] = []
            _redirect_into(node, w, reds, extras)
            script.commands.append(SimpleCommand([], redirects=reds, function=fn))
            if extras:
                script.has_error = True
                script.commands.append(SimpleCommand(extras, function=fn, fallback=True))
        if kind == "file_redirect":
            return None
    if kind == "redirected_statement":
        children = node.named_children
        if children:
            reds = []
            extras = []
            for c in children:
                if c.type in REDIRECTS:
                    _redirect_into(c, w, reds, extras)
            if children[0].type != "command":
                script.commands.append(SimpleCommand([], redirects=reds, function=fn))
                last = _last_command(children[0])
                if extras and last is not None:  # `a && b >c d`: bash runs `b d`
                    w.extra_words[last.id] = extras
                elif extras:  # `{ ...; } >a b`: a syntax error to bash
                    script.has_error = True
                    script.commands.append(SimpleCommand(extras, function=fn, fallback=True))
            for c in children:
                if c.type == "command":
                    w.extra[c.id] = reds
                    w.extra_words[c.id] = extras
    elif kind in ("declaration_command", "unset_command"):
        script.commands.append(_declaration(node, fn, w))
    elif kind == "variable_assignment":
        script.assigns.append(_assignment(node, w))
    elif kind == "function_definition":
        name_node = node.child_by_field_name("name") or node.named_children[0]
        name = w.text(name_node)
        script.functions.setdefault(name, set())
        return name
    elif kind == "for_statement":
        var = node.child_by_field_name("variable")
        if var is not None:
            values = joined_words(node.children_by_field_name("value"), w)
            script.for_vars.setdefault(w.text(var), []).extend(values or ["\x00?"])
    elif kind == "test_command":
        script.commands.append(
            SimpleCommand([w.text(node.children[0]), *_leaf_words(node, w)], function=fn)
        )
        if w.text(node).startswith("[["):
            script.evals.extend(("arith", t, fn) for t in _arith_operands(node, w))
    elif kind == "command_substitution":
        tick = w.text(node).startswith("`")
        script.blocked.append(
            ("blocklist.backticks" if tick else "blocklist.command-substitution",
             "backtick substitution" if tick else "command substitution $(...)")
        )
    elif kind in _BLOCKED_NODES:
        script.blocked.append(_BLOCKED_NODES[kind])
    elif kind == "arithmetic_expansion":
        text = w.text(node)
        if text.startswith("$["):
            script.blocked.append(("blocklist.legacy-arithmetic", "legacy arithmetic $[...]"))
            script.evals.append(("arith", text[2:-1], fn))
        else:
            if text.endswith("))"):
                w.arith_starts.add(node.start_byte)
            script.evals.append(("arith", text[3:-2], fn))
    elif kind == "compound_statement":
        if node.child_count and node.children[0].type == "((":
            script.evals.append(("arith", w.text(node)[2:-2], fn))
    elif kind == "c_style_for_statement":
        body = node.child_by_field_name("body")
        end = body.start_byte if body is not None else node.end_byte
        script.evals.append(("arith", w.data[node.start_byte : end].decode(
            "utf-8", "surrogateescape"), fn))
    elif kind == "subscript":
        index = w.text(node).partition("[")[2]
        script.evals.append(("arith", index[:-1] if index.endswith("]") else index, fn))
    elif kind == "heredoc_redirect":
        if w.suspicious:
            _quoted_heredoc(node, w)
    elif kind == "expansion":
        if any(c.type == "@" for c in node.children):
            script.blocked.append(("blocklist.transform", "parameter transform ${var@op}"))
        script.evals.append(("expansion", w.text(node), fn))
    elif kind == "ERROR":
        script.has_error = True
        script.commands.extend(fallback(w.text(node), fn))
    return None


def _quoted_heredoc(node: Any, w: Walk) -> None:
    """The body of a here-document whose delimiter is quoted is not expanded by bash."""
    start = next((c for c in node.children if c.type == "heredoc_start"), None)
    if start is None or not any(q in w.text(start) for q in "'\"\\"):
        return
    for c in node.children:
        if c.type == "heredoc_body":
            w.masks.append((c.start_byte, c.end_byte))


def command(node: Any, fn: str | None, w: Walk) -> tuple[SimpleCommand, int]:
    """The simple command, and -1 when the walk must descend into the node (something below
    may matter), else the number of nodes the walk would count below it (command names)."""
    cmd = SimpleCommand([], function=fn)
    words = cmd.words
    flat = 0
    src = w.source
    children = node.named_children
    many = len(children) > 256
    word_end = -1
    for k, child in enumerate(children):
        if many and not k & 255:
            check()
        kind = child.type
        if kind == "variable_assignment":
            cmd.assigns.append(_assignment(child, w))
            flat = -1
        elif kind in REDIRECTS:
            _redirect_into(child, w, cmd.redirects, words)
            flat = -1
        elif kind != "comment":
            start, end = child.start_byte, child.end_byte  # (each read is a call into the binding)
            text = src[start:end] if src is not None else w.text(child)
            if start == word_end and words:
                # tree-sitter-bash splits one word at a backslash next to a brace
                # (`{.e,x}\nv`); bash reads one word wherever no blank separates them.
                words[-1] += text
                flat = -1
            else:
                words.append(text)
            word_end = end
            if flat < 0 or kind in LEAVES:
                continue
            if (kind == "command_name" and child.named_child_count == 1
                    and child.named_child(0).type in LEAVES):
                flat += 1
            else:
                flat = -1
    if w.extra or w.extra_words:  # (rare: the node's id is read only then)
        node_id = node.id
        extra = w.extra.get(node_id)
        if extra is not None:
            cmd.redirects.extend(extra)
        extra_words = w.extra_words.get(node_id)
        if extra_words:
            words.extend(extra_words)
    if w.amp:
        cmd.start = node.start_byte
    if cmd.redirects:
        cmd.heredoc = any(r.kind == "heredoc" for r in cmd.redirects)
    return cmd, flat


def _declaration(node: Any, fn: str | None, w: Walk) -> SimpleCommand:
    keyword = w.text(node.children[0]) if node.child_count else "declare"
    cmd = SimpleCommand([keyword], function=fn, keyword=keyword)
    operands = []
    for child in node.named_children:
        if child.type == "variable_assignment":
            name, value = _assignment(child, w)
            cmd.assigns.append((name, value))
            operands.append(child)
        elif child.type in REDIRECTS:
            _redirect_into(child, w, cmd.redirects, cmd.words)
        else:
            operands.append(child)
    cmd.words.extend(joined_words(operands, w))
    return cmd


def joined_words(nodes: list[Any], w: Walk) -> list[str]:
    """The texts of word nodes, those no blank separates joined into one (see `command`)."""
    out: list[str] = []
    end = -1
    for node in nodes:
        if node.start_byte == end and out:
            out[-1] += w.text(node)
        else:
            out.append(w.text(node))
        end = node.end_byte
    return out


def _assignment(node: Any, w: Walk) -> tuple[str, str]:
    text = w.text(node)
    name, _, value = text.partition("=")
    return name.rstrip("+"), value


def _last_command(node: Any) -> Any:
    """The simple command a redirect after a list or pipeline belongs to (its last one), or
    None when the last element is not a simple command."""
    while node.type in ("list", "pipeline") and node.named_child_count:
        node = node.named_children[-1]
    return node if node.type == "command" else None


def _redirect_into(node: Any, w: Walk, reds: list[Redirect], words: list[str]) -> None:
    """The redirects of a redirect node, and the command words tree-sitter hangs on it: a
    file redirect's `destination`s after the first (`cat >a b`: `b` is an argument), a
    here-document's `argument`s and the redirects written after its delimiter
    (`cat <<E >out .env`)."""
    reds.append(_redirect(node, w))
    kind = node.type
    if kind == "file_redirect":
        words.extend(joined_words(node.children_by_field_name("destination"), w)[1:])
    elif kind == "heredoc_redirect":
        for c in node.named_children:
            if c.type in REDIRECTS:
                _redirect_into(c, w, reds, words)
        words.extend(w.text(a) for a in node.children_by_field_name("argument"))


def _redirect(node: Any, w: Walk) -> Redirect:
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
            fd = w.text(child)
        elif not child.is_named:
            op += child.type
        elif child.type == "ERROR":
            op += w.text(child)
        elif target is None:
            target = w.text(child)
    if kind == "file_redirect":  # one word, though tree-sitter may split it (`command`)
        target = next(iter(joined_words(node.children_by_field_name("destination"), w)),
                      target)
    return Redirect(op, target, fd)


_LEAF: Final = {"word", "string", "raw_string", "concatenation", "ansi_c_string", "number",
                "simple_expansion", "expansion", "translated_string", "test_operator"}


def _leaf_words(node: Any, w: Walk) -> list[str]:
    out: list[str] = []
    stack = [node]
    steps = 0
    while stack:
        steps += 1
        if not steps & 255:
            check()
        cur = stack.pop()
        if cur is not node and cur.type in _LEAF:
            out.append(w.text(cur))
            continue
        stack.extend(reversed(cur.named_children))
    return out


_ARITH_TESTS: Final = frozenset({"-eq", "-ne", "-lt", "-le", "-gt", "-ge"})


def _arith_operands(node: Any, w: Walk) -> list[str]:
    """Source text of the operands of `[[ a -eq b ]]` comparisons (bash evaluates both as
    arithmetic)."""
    out: list[str] = []
    stack = [node]
    steps = 0
    while stack:
        steps += 1
        if not steps & 255:
            check()
        cur = stack.pop()
        if cur.type == "binary_expression":
            op = cur.child_by_field_name("operator")
            if op is not None and w.text(op) in _ARITH_TESTS:
                out.extend(w.text(c) for c in cur.named_children if c.id != op.id)
        stack.extend(cur.named_children)
    return out
