"""A conservative reading of an awk program: does it run commands, read or write files?

Rules, in this order (each asks; none can make code disappear):

1. On the raw text, strings and comments included: `getline` (reads files or runs
   commands), `system`, `ARGV`/`ARGC` (add input files at run time), `@` (gawk's
   `@include`/`@load`/`@namespace` and indirect calls) and `|&`.
2. A lexer that follows awk's grammar for what hides text: strings (`"..."`, backslash
   escapes, no raw newline), comments (`#` to the end of the line, even after a
   backslash), and regex literals, which start only where an operand is expected (after an
   operator, `(`, `,`, `;`, `{`, `}`, a newline, `print`/`printf`/`return`/`else`/`do`, or
   the `)` of `if`/`while`/`for`/`switch`); elsewhere `/` divides. Outside those: a `|` that
   is not `||` pipes (runs a command); a `>` at parenthesis depth 0 inside an action
   (`{...}`) is a redirection (`print 1 > f`, `print 1,\\n 2 > f` alike); a `>` in a pattern
   or inside parentheses compares (`$3 > 100 {print}`, `if ($1 > 5)`).
3. Where the lexer could disagree with awk it does not guess: a division `/` followed by
   another `/` on the same line (awk might read a regex there), a regex holding `"`, a
   string or regex that reaches the end of a line, or unbalanced braces or parentheses all
   make the program `uncertain`.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache
from typing import Final

_RAW_RISK: Final = re.compile(r"\bgetline\b|\bsystem\b|\bARG[VC]\b|@|\|&")
_REGEX_AFTER_WORD: Final = frozenset({"print", "printf", "return", "else", "do"})
_STATEMENT_HEADS: Final = frozenset({"if", "while", "for", "switch"})
_WORD: Final = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_NUMBER: Final = re.compile(r"(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][-+]?[0-9]+)?")


@dataclass(frozen=True, slots=True)
class AwkFacts:
    code: str | None
    """Why the program runs commands or reads files by itself (None: it does not)."""
    writes: bool
    """A `print`/`printf` redirection writes a file."""
    uncertain: str | None
    """Why the lexer cannot be sure it reads the program as awk does."""


class _Lexer:
    __slots__ = ("braces", "heads", "i", "n", "operand", "parens", "pipe", "redirect",
                 "s", "uncertain")

    def __init__(self, text: str) -> None:
        self.s, self.i, self.n = text, 0, len(text)
        self.operand = False
        """The last token ends an operand: a `/` now divides."""
        self.braces = 0
        self.parens: list[bool] = []
        """Open parentheses; True for the one of an if/while/for/switch head."""
        self.heads = False
        """The last word was if/while/for/switch (its `(` is a statement head)."""
        self.pipe = False
        self.redirect = False
        self.uncertain: str | None = None

    def _quoted(self, end: str) -> bool:
        """Skip a string or regex body up to `end`; False when a line ends first."""
        s, i, n = self.s, self.i, self.n
        while i < n:
            ch = s[i]
            if ch == "\\":
                i += 2
                continue
            if ch == "\n":
                break
            if ch == end:
                self.i = i + 1
                return True
            i += 1
        self.i = i
        return False

    def _slash(self) -> None:
        if self.operand:  # division: awk must not be able to read a regex here
            line_end = self.s.find("\n", self.i)
            rest = self.s[self.i : line_end if line_end >= 0 else self.n]
            if "/" in rest:
                self.uncertain = "a '/' that could start a regex on a line with another '/'"
            self.operand = False
            return
        start = self.i
        if not self._quoted("/"):
            self.uncertain = "a regex literal is not closed on its line"
            return
        body = self.s[start : self.i - 1]
        if '"' in body:
            self.uncertain = "a regex literal holds a '\"'"
        elif body.rfind("[") > body.rfind("]"):
            self.uncertain = "a regex literal ends inside a bracket expression"
        self.operand = True

    def run(self) -> None:
        s, n = self.s, self.n
        while self.i < n and self.uncertain is None:
            ch = s[self.i]
            self.i += 1
            if ch in " \t\r":
                continue
            if ch == "\\" and self.i < n and s[self.i] == "\n":
                self.i += 1  # a continued line: not a newline token
                continue
            if ch == "\n":
                self.operand = False
                continue
            if ch == "#":
                end = s.find("\n", self.i)
                self.i = n if end < 0 else end
                continue
            if ch == '"':
                if not self._quoted('"'):
                    self.uncertain = "a string is not closed on its line"
                self.operand, self.heads = True, False
                continue
            if ch == "/":
                self._slash()
                self.heads = False
                continue
            word = _WORD.match(s, self.i - 1)
            if word:
                self.i = word.end()
                w = word.group()
                self.heads = w in _STATEMENT_HEADS
                self.operand = w not in _REGEX_AFTER_WORD and not self.heads
                continue
            num = _NUMBER.match(s, self.i - 1) if ch in "0123456789." else None
            if num and num.end() > self.i - 1:
                self.i = num.end()
                self.operand, self.heads = True, False
                continue
            self._punct(ch)

    def _punct(self, ch: str) -> None:
        s = self.s
        heads, self.heads = self.heads, False
        if ch == "(":
            self.parens.append(heads)
            self.operand = False
        elif ch == ")":
            if not self.parens:
                self.uncertain = "unbalanced parentheses"
                return
            # `if (x) /re/`: after a statement head's `)` an operand is expected
            self.operand = not self.parens.pop()
        elif ch == "{":
            self.braces += 1
            self.operand = False
        elif ch == "}":
            self.braces -= 1
            if self.braces < 0:
                self.uncertain = "unbalanced braces"
            self.operand = False
        elif ch == "|":
            if self.i < self.n and s[self.i] == "|":
                self.i += 1
            else:
                self.pipe = True
            self.operand = False
        elif ch == ">":
            if self.braces > 0 and not self.parens:
                self.redirect = True
            self.operand = False
        elif ch in "]$":
            self.operand = ch == "]"
        elif ch in "+-" and self.i < self.n and s[self.i] == ch:
            self.i += 1  # ++/--: postfix on an operand keeps it one
        else:
            self.operand = False


@lru_cache(maxsize=256)
def scan_awk(text: str) -> AwkFacts:
    """What the awk program `text` does, conservatively (see the module docstring)."""
    # (a backslash-newline is joined first: no awk may read `get\\⏎line` as getline unseen)
    risky = _RAW_RISK.search(text) or _RAW_RISK.search(text.replace("\\\n", ""))
    code = f"the program names {risky.group()!r}" if risky else None
    lex = _Lexer(text)
    lex.run()
    uncertain = lex.uncertain
    if uncertain is None and (lex.braces or lex.parens):
        uncertain = "unbalanced braces or parentheses"
    if code is None and lex.pipe:
        code = "the program pipes to a command"
    return AwkFacts(code, lex.redirect, uncertain)
