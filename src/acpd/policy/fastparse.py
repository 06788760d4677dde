"""The parse of a plain command line without tree-sitter (the common benign shapes).

A line made only of plain words, single- and double-quoted strings of the same characters,
`&&`, `||`, `|`, `;`, or one command with simple file redirects (`>`, `>>`, `<`, `&>`,
`&>>`, `>|`, `N>&M`) has one reading, which this module gives as the `Script` the full parse
(`parse.parse`) would build for it: the same words (source text), redirects and nothing else.
Anything else returns None and the line goes to tree-sitter: `$`, backquotes, backslashes,
parentheses, braces, brackets, `!`, `#`, newlines, a lone `&`, here-documents, a reserved
word, a declaration builtin or an assignment in command position, an empty command, an
unclosed quote. `tests/policy/test_fastparse.py` checks that both parses agree on generated
lines.

Why: tree-sitter's parse and the walk over its nodes are most of a simple decision's cost,
and a parse leaves the CPU caches cold for the judge that follows.
"""

from __future__ import annotations

import re
from typing import Final

from acpd.policy.script import Redirect, Script, SimpleCommand

_PLAIN_CHARS: Final = r"A-Za-z0-9_./:=,+^~*?\-"
_SINGLE: Final = ("'[" + "".join(re.escape(c) for c in map(chr, range(32, 127)) if c != "'")
                  + "\t]*'")
"""A single-quoted string of printable ASCII: bash and tree-sitter take it as written."""
_DOUBLE: Final = '"[' + "".join(re.escape(c) for c in map(chr, range(32, 127))
                               if c not in '"$`\\!') + '\t]*"'
"""A double-quoted string with nothing bash expands or escapes in it (no `$`, backquote,
backslash; no `!`)."""
_LINE: Final = re.compile(rf"(?:[{_PLAIN_CHARS} \t&|;<>]++|{_SINGLE}|{_DOUBLE})*+")
"""(Runs of plain characters, possessive: each character decides its branch, so giving any
back never helps a match; half the cost of one iteration a character.)"""
_QUOTED: Final = re.compile(rf"{_SINGLE}|{_DOUBLE}")
_TOKEN: Final = re.compile(
    rf"""(?P<ws>[ \t]+)
    |(?P<op>&&|\|\||\||;)
    |(?P<red>(?P<fd>[0-9]+)?(?P<rop>&>>|&>|>>|>\||>&|<&|>|<))
    |(?P<word>(?:[{_PLAIN_CHARS}]+|{_SINGLE}|{_DOUBLE})+)""", re.VERBOSE)
_RESERVED: Final = frozenset({"if", "then", "else", "elif", "fi", "case", "esac", "for", "select",
                              "while", "until", "do", "done", "in", "function", "time", "coproc",
                              "declare", "typeset", "export", "local", "readonly", "unset"})
_NAME: Final = re.compile(r"[A-Za-z_./~][A-Za-z0-9_./-]*")
"""A command name the fast path takes: no quote, glob or `=` (tree-sitter reads `if'x'`,
`a?b` and `a=b` in command position its own ways)."""
_MAX_CHARS: Final = 1024


def _command_name(word: str) -> bool:
    """`_NAME.fullmatch(word)`; a name of ASCII letters and digits not starting with a digit
    (`rm`, `git`) is one without running the regex."""
    if word.isalnum() and word.isascii():  # (isalnum first: compiled, it is a primitive)
        return not ("0" <= word[0] <= "9")
    return _NAME.fullmatch(word) is not None


_PLAIN_LINE: Final = re.compile(
    r"[A-Za-z0-9_./:=,+^ \t~*?|;-]*+(?:&&[A-Za-z0-9_./:=,+^ \t~*?|;-]*+)*+")
"""A line without quotes, redirects or a lone `&`: its tokens are `_PLAIN_TOKEN`s. (Possessive:
the class holds no `&`, so giving characters back never makes `&&` match.)"""
_PLAIN_TOKEN: Final = re.compile(r"&&|\|\||[|;]|[^ \t|;&]+")


def parse_simple(source: str) -> Script | None:
    """The Script of a plain line, or None when the line needs the full parser."""
    if len(source) > _MAX_CHARS:
        return None
    if _PLAIN_LINE.fullmatch(source):
        return _plain_words(source)
    if not _LINE.fullmatch(source):
        return None
    if ("<<" in source or "<>" in source) and (
            "<<" in (bare := _QUOTED.sub("", source)) or "<>" in bare):
        return None  # a here-document or a read-write redirect (quoted text aside)
    return _tokens(source)


def _plain_words(source: str) -> Script | None:
    """A line of plain words and `&&`, `||`, `|`, `;` (no quote, no redirect): the same
    Script `_tokens` makes, from one `findall`."""
    commands: list[SimpleCommand] = []
    words: list[str] | None = None
    last_op = ";"
    plain = "~" not in source and "*" not in source and "?" not in source  # see words.PLAIN
    for tok in _plain_tokens(source):
        if tok in _OPERATORS:
            if words is None:
                return None  # an empty command: a syntax error
            words = None
            last_op = tok
            continue
        if words is None:
            if tok in _RESERVED or not _command_name(tok):
                return None  # a keyword, a declaration, an assignment or a glob name
            words = [tok]
            commands.append(SimpleCommand(words, plain=plain))
        else:
            if tok[0] == "=":
                return None  # tree-sitter reads `==`, `=~` as test operators even here
            words.append(tok)
    if words is None and commands and last_op != ";":
        return None  # ends with `&&`, `||` or `|`
    return Script(commands)


_OPERATORS: Final = frozenset({"&&", "||", "|", ";"})


def _plain_tokens(source: str) -> list[str]:
    """`_PLAIN_TOKEN.findall(source)` of a `_PLAIN_LINE`, by `str.split` (a fifth of the
    cost) when each `|`, `;`, `&` is in an operator set off by blanks (`ls && rm x`): the
    line's only blanks are spaces and tabs, so the words between are the same."""
    tokens = source.split()
    if "|" in source or ";" in source or "&" in source:
        for tok in tokens:
            if tok not in _OPERATORS and ("|" in tok or ";" in tok or "&" in tok):
                return _PLAIN_TOKEN.findall(source)  # an operator inside a token: `a;b`
    return tokens


def _tokens(source: str) -> Script | None:
    script = Script()
    commands = script.commands
    cmd: SimpleCommand | None = None
    amp = "&" in source
    pos, end = 0, len(source)
    after_op = True  # at the start, or after an operator: a command must follow
    while pos < end:
        m = _TOKEN.match(source, pos)
        if m is None:
            return None
        start, pos = pos, m.end()  # (a match at pos starts there: the token is the slice)
        kind = m.lastgroup  # the alternative that matched (`red` closes after fd and rop)
        if kind == "ws":
            continue
        if kind == "op":
            if cmd is None:
                return None  # an empty command: a syntax error
            cmd = None
            after_op = source[start:pos] != ";"
            continue
        if kind == "red":
            fd_text = m.group("fd")
            if fd_text is not None and m.group("rop").startswith("&"):
                return None  # `2&>x`: the digits are a word to tree-sitter
            if (start > 0 and source[start - 1] in "0123456789") or (
                    fd_text is not None and cmd is not None and cmd.words[-1:] == ["-"]):
                return None  # `--3<x`, `- 1>x`: tree-sitter reads these its own way
            redirect = _redirect(source, m, fd_text)
            if redirect is None:
                return None
            red, pos = redirect
            if cmd is None or not cmd.words:
                return None  # a redirect before the command name: the full parse
            cmd.redirects.append(red)
            after_op = False
            continue
        if kind != "word":
            return None
        word = source[start:pos]
        if cmd is None:
            cmd = SimpleCommand([], start=start if amp else -1)
            commands.append(cmd)
        if not cmd.words and (word in _RESERVED or not _command_name(word)):
            return None  # a keyword, a declaration, an assignment, a quoted or glob name
        if word[0] == "=":
            return None  # tree-sitter reads `==`, `=~` as test operators even here
        cmd.words.append(word)
        after_op = False
    if after_op and commands:
        return None  # ends with `&&`, `||` or `|`
    if len(commands) > 1 and any(c.redirects for c in commands):
        return None  # tree-sitter hangs a redirect on a whole pipeline: its own Script shape
    return script


def _redirect(source: str, m: re.Match[str], fd: str | None) -> tuple[Redirect, int] | None:
    op = m.group("rop")
    pos = m.end()
    while pos < len(source) and source[pos] in " \t":
        pos += 1
    t = _TOKEN.match(source, pos)
    if t is None or t.group("word") is None:
        return None
    target = t.group("word")
    if op in (">&", "<&") and not target.isdigit():
        return None  # `>&file`, `>&-x`: rare spellings, left to the full parse
    return Redirect(op, target, fd), t.end()
