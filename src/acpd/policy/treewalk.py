"""tree-sitter-bash walk: every simple command, redirect, assignment and blocked construct.

(`parse.parse` is the entry point: it tries `fastparse` first.)

tree-sitter is imported on first use (the daemon must start fast). The walk is iterative (no
recursion limit), visits every node once, and records source text; values are computed later
by `words`. Nothing is skipped: commands inside substitutions, functions, here-doc pipelines
and ERROR nodes are all found. The walk checks the decision's time budget every 256 nodes.

Besides commands, the walk records every context where bash evaluates text a second time
(`Script.evals`): arithmetic (`(( ))`, `$(( ))`, `$[ ]`, `for (( ))`, array subscripts) and
parameter expansions (`${x:off:len}`, `${!x}`, `${x:=v}`); the engine checks them.

tree-sitter-bash does not see every substitution bash runs (a backtick in a here-document
body or inside `${x:-...}` is plain text to it). So a second, independent net scans the raw
bytes (`rawtext.substitution_sites`); the walk collects the ranges that net must skip.

Node kinds of the installed grammar (tree-sitter-bash 0.25, all named visible kinds) and what
the walk does with each: command, declaration_command, unset_command, test_command -> a
simple command; redirected_statement, file_redirect, heredoc_redirect, herestring_redirect ->
redirects (here-strings and process_substitution are blocked); variable_assignment(s) ->
assignments; function_definition -> a function scope; for_statement (also `select`) -> loop
variables; c_style_for_statement, compound_statement `(( ))`, arithmetic_expansion, subscript
-> arithmetic contexts; expansion -> expansion contexts (and `${x@op}` blocked);
command_substitution -> blocked; ERROR -> parse error plus a token fallback. Every other kind
(program, list, pipeline, subshell, compound_statement, if/elif/else, while, case_statement,
case_item, do_group, negated_command, string, concatenation, array, brace_expression,
binary/unary/ternary/postfix/parenthesized_expression, heredoc_body, translated_string,
command_name, extglob_pattern...) is descended into, so commands below them are found; leaves
(word, raw_string, ansi_c_string, number, comment, heredoc_*, string_content, variable_name,
special_variable_name, test_operator, file_descriptor, regex) hold no command.
"""


from __future__ import annotations

import threading
from typing import Any, Final

from acpd.policy import budget
from acpd.policy.budget import check
from acpd.policy.rawtext import mark_background, substitution_sites
from acpd.policy.script import Script
from acpd.policy.text import parser_safe
from acpd.policy.treenodes import (
    HANDLED,
    LEAVES,
    QUOTING,
    SINGLE_QUOTED,
    Walk,
    command,
    mask_words,
    visit,
)

MAX_NODES: Final = 50_000

_local: Final = threading.local()


def _parser() -> Any:
    parser = getattr(_local, "parser", None)
    if parser is None:
        import tree_sitter
        import tree_sitter_bash

        parser = tree_sitter.Parser(tree_sitter.Language(tree_sitter_bash.language()))
        _local.parser = parser
    return parser


def ready() -> bool:
    """Has this thread its parser already (then `warm` has nothing to do)?"""
    return getattr(_local, "parser", None) is not None


def warm() -> None:
    """Load tree-sitter and this thread's parser now (the first parse would otherwise)."""
    _parser()


_MASK_NON_ASCII: Final = bytes(range(128)) + b"A" * 128


def parse_full(source: str) -> Script:
    """Parse a command line with tree-sitter. Raises ValueError for text the parser must
    never see (see `text.parser_safe`: tree-sitter-bash crashes the process on some code
    points)."""
    if not source.isascii() and not all(parser_safe(ch) for ch in source):
        raise ValueError("character outside the parsed Unicode planes")
    data = source.encode("utf-8", "surrogateescape")
    # tree-sitter-bash 0.25 reads out of bounds on some non-ASCII code points (a random
    # segfault, seen from U+2C000 up). Bash itself tokenizes bytes and gives every byte
    # >= 0x80 the same role (a plain word character), so the parser gets those bytes masked
    # to one ASCII letter: same byte offsets, same tree shape, and every word is still read
    # from the real bytes. Masking only makes different characters look alike, which can
    # end a here-doc early (more text judged as commands), never later.
    tree = _tree(data if source.isascii() else data.translate(_MASK_NON_ASCII))
    script = Script()
    root = tree.root_node
    script.has_error = bool(root.has_error)
    w = Walk(source, data)
    # Preorder walk with a cursor, in document order: named nodes that are not leaves are
    # visited (and descended into); anonymous nodes and leaves are stepped over.
    cursor = root.walk()
    fns: list[tuple[int, str]] = []
    """(depth of a function_definition, its name): the innermost one encloses the node."""
    quoted: list[int] = []
    """Depths of the enclosing double-quoted strings and here-doc bodies (where a single
    quote is a plain character)."""
    depth = 0
    seen = 0
    last_named: dict[int, tuple[int, int]] = {}
    """Per depth, the byte range of the last named node: what a `&` after it puts in the
    background."""
    jobs: list[tuple[int, int]] = []
    steps = 0
    while True:
        node = cursor.node
        steps += 1
        if not steps & 255:  # leaves and anonymous nodes cost time too (`{a,b}` x 6000)
            check()
        if w.amp:
            if node.is_named:
                last_named[depth] = (node.start_byte, node.end_byte)
            elif node.type == "&" and depth in last_named:
                jobs.append(last_named[depth])
        if node.is_named and (kind := node.type) not in LEAVES:
            seen += 1
            if seen > MAX_NODES:
                script.too_big = True
                break
            if w.suspicious and kind in QUOTING:
                quoted.append(depth)
            if kind == "command":
                cmd, flat = command(node, fns[-1][1] if fns else None, w)
                script.commands.append(cmd)
                if flat >= 0:
                    # Nothing below but words: the walk would only count the command names.
                    seen += flat
                    if seen > MAX_NODES:
                        script.too_big = True
                        break
                elif cursor.goto_first_child():
                    depth += 1
                    continue
                if w.suspicious:
                    mask_words(node, w)
            else:
                if kind in HANDLED:
                    fn = fns[-1][1] if fns else None
                    name = visit(node, kind, fn, script, w)
                    if name is not None:
                        fns.append((depth, name))
                if cursor.goto_first_child():
                    depth += 1
                    continue
        elif w.suspicious and node.type in SINGLE_QUOTED and not quoted:
            w.masks.append((node.start_byte, node.end_byte))
        while not cursor.goto_next_sibling():
            if not cursor.goto_parent():
                break
            depth -= 1
        else:
            while fns and fns[-1][0] >= depth:
                fns.pop()
            while quoted and quoted[-1] >= depth:
                quoted.pop()
            continue
        break
    _calls(script)
    if jobs:
        mark_background(script, jobs)
    if w.suspicious:
        script.blocked.extend(substitution_sites(w.data, w.masks, w.arith_starts))
    return script


_CHUNKED: Final = 4096
"""Inputs at least this long are parsed with a progress callback that stops at the deadline
(tree-sitter takes 100+ ms on some 64 KiB inputs, a 60 KB pipeline for one)."""


def _tree(payload: bytes) -> Any:
    """Parse; raises OverBudget when the decision's deadline passes during the parse."""
    parser = _parser()
    if not budget.active() or len(payload) < _CHUNKED:
        return parser.parse(payload)

    def read(offset: int, _point: Any) -> bytes:
        return payload[offset : offset + 65536]

    def progress(*_state: Any) -> bool:
        return budget.expired()

    try:
        return parser.parse(read, progress_callback=progress)
    except ValueError:
        # A cancelled parse resumes on the next call unless reset: never let the next
        # command line be read as the rest of this one.
        parser.reset()
        raise budget.OverBudget from None


def _calls(script: Script) -> None:
    for cmd in script.commands:
        if cmd.function is not None and cmd.words:
            script.functions.setdefault(cmd.function, set()).add(cmd.words[0])
