"""What a parse of a command line hands the judge: its simple commands, redirects,
assignments, loop variables, functions, blocked constructs and the texts bash evaluates again.

Plain slotted classes rather than dataclasses: a decision makes several of them, and their
constructors are on the hot path (a dataclass's default factories cost a call each). Both
parsers (`fastparse`, `treewalk`) build them; the judge only reads them, and a memoised parse
is shared, so nothing may change one after the parse.
"""

from __future__ import annotations


class Redirect:
    __slots__ = ("fd", "kind", "op", "target")

    def __init__(self, op: str, target: str | None, fd: str | None = None,
                 kind: str = "file") -> None:
        self.op = op
        self.target = target
        self.fd = fd
        self.kind = kind
        """file | heredoc | herestring"""

    def __repr__(self) -> str:
        return f"Redirect({self.op!r}, {self.target!r}, {self.fd!r}, {self.kind!r})"


class SimpleCommand:
    __slots__ = ("assigns", "background", "fallback", "function", "heredoc", "keyword",
                 "plain", "redirects", "start", "words")

    def __init__(self, words: list[str], assigns: list[tuple[str, str]] | None = None,
                 redirects: list[Redirect] | None = None, function: str | None = None,
                 keyword: str | None = None, heredoc: bool = False, fallback: bool = False,
                 background: bool = False, start: int = -1, plain: bool = False) -> None:
        self.words = words
        """Source text of the command name and its arguments (empty: assignments or
        redirects only)."""
        self.assigns: list[tuple[str, str]] = [] if assigns is None else assigns
        self.redirects: list[Redirect] = [] if redirects is None else redirects
        self.function = function
        """Name of the function whose body holds this command."""
        self.keyword = keyword
        """`declare`/`export`/`local`/...: words are its operands."""
        self.heredoc = heredoc
        self.fallback = fallback
        """Recovered from an ERROR node by plain tokenizing."""
        self.background = background
        """Runs as (or inside) an asynchronous job `... &`: it may outlive the line."""
        self.start = start
        """Byte offset in the source (set only when the source holds a `&`)."""
        self.plain = plain
        """Every word is made of `words.PLAIN` characters only: each is its own one value
        (no quote, expansion or glob), set by the fast parser when it knows."""

    def __repr__(self) -> str:
        return (f"SimpleCommand({self.words!r}, assigns={self.assigns!r}, "
                f"redirects={self.redirects!r}, function={self.function!r})")


class Script:
    __slots__ = ("assigns", "blocked", "commands", "evals", "for_vars", "functions",
                 "has_error", "too_big")

    def __init__(self, commands: list[SimpleCommand] | None = None) -> None:
        self.commands: list[SimpleCommand] = [] if commands is None else commands
        self.assigns: list[tuple[str, str]] = []
        self.for_vars: dict[str, list[str]] = {}
        self.functions: dict[str, set[str]] = {}
        self.blocked: list[tuple[str, str]] = []
        """(rule id, reason) of constructs on the unconditional blocklist."""
        self.evals: list[tuple[str, str, str | None]] = []
        """(kind, text, enclosing function): "arith" text bash evaluates as arithmetic (a
        subscript's index included), "expansion" the whole text of a `${...}`."""
        self.has_error = False
        self.too_big = False
