"""Literal words computed from source text, the way bash would, without running anything.

tree-sitter gives word boundaries; the value of a word is computed here: backslashes, single
quotes, double quotes, ANSI-C `$'..'`, locale `$".."`, concatenations, tilde, parameter
expansions (with values known from the script itself), brace expansion and field splitting.
Whatever cannot be known (an unset variable, an arithmetic result, a substitution) makes the
word *dynamic*; the caller decides what that means (a dynamic command name is at least ask).
"""

from __future__ import annotations

import re
from itertools import pairwise, product
from typing import Final

from acpd.policy.braces import brace_expand
from acpd.policy.budget import TooComplex, check

MAX_ALTERNATIVES: Final = 16
MAX_NESTING: Final = 16
"""`${a:-${b:-...}}` deeper than this is not modelled (TooComplex: the judge asks)."""
DYN: Final = "\x00?"
"""Stands for an unknown value inside a computed string."""

_NAME: Final = re.compile(r"[A-Za-z_][A-Za-z0-9_]*|[0-9]|[@*#?$!\-]")
_GLOB_CHARS: Final = frozenset("*?[")
_ANSI: Final = {"a": "\a", "b": "\b", "e": "\x1b", "E": "\x1b", "f": "\f", "n": "\n", "r": "\r",
                "t": "\t", "v": "\v", "\\": "\\", "'": "'", '"': '"', "?": "?"}


class Lit:
    """Literal text. (Lit, Param and Dyn are plain slotted classes, not dataclasses: mypyc
    leaves a dataclass's generated `__init__` interpreted, and the lexer makes several per
    word.)"""

    __slots__ = ("quoted", "text")

    def __init__(self, text: str, quoted: bool) -> None:
        self.text = text
        self.quoted = quoted


class Param:
    """A parameter expansion: `$name`, `${name}` or `${name OP arg}`."""

    __slots__ = ("arg", "bare", "name", "op", "quoted")

    def __init__(self, name: str, op: str, arg: str, quoted: bool, bare: bool = False) -> None:
        self.name = name
        self.op = op
        self.arg = arg
        self.quoted = quoted
        self.bare = bare
        """Written `$name`, not `${name}`: text right after it can lengthen the name."""


class Dyn:
    """A value not known before running (a substitution, arithmetic...), and why."""

    __slots__ = ("quoted", "reason")

    def __init__(self, reason: str, quoted: bool) -> None:
        self.reason = reason
        self.quoted = quoted


Seg = Lit | Param | Dyn


class Expanded:
    """The possible values of one word: each alternative is a list of fields. (A plain
    slotted class: one is made per word judged, and a compiled NamedTuple builds itself in
    interpreted code.)"""

    __slots__ = ("alternatives", "dynamic", "glob")

    def __init__(self, alternatives: tuple[tuple[str, ...], ...], dynamic: bool,
                 glob: bool) -> None:
        self.alternatives = alternatives
        self.dynamic = dynamic
        self.glob = glob

    def as_tuple(self) -> tuple[tuple[tuple[str, ...], ...], bool, bool]:
        return self.alternatives, self.dynamic, self.glob

    def __eq__(self, other: object) -> bool:
        """As the NamedTuple it was: equal to an Expanded or a tuple of the same fields."""
        if isinstance(other, Expanded):
            return self.as_tuple() == other.as_tuple()
        return isinstance(other, tuple) and self.as_tuple() == other

    def __hash__(self) -> int:
        return hash(self.as_tuple())

    def __repr__(self) -> str:
        return (f"Expanded(alternatives={self.alternatives!r}, dynamic={self.dynamic!r}, "
                f"glob={self.glob!r})")


_ANSI_ESCAPE: Final = re.compile(
    r"\\(?:x([0-9A-Fa-f]{1,2})|u([0-9A-Fa-f]{1,4})|U([0-9A-Fa-f]{1,8})|([0-7]{1,3})"
    r"|c(.)|(.))", re.DOTALL)


def decode_ansi_c(body: str) -> str:
    """The value of `$'body'` (one regex pass; the budget is checked every 4096 escapes)."""
    if "\\" not in body:
        return body
    count = 0

    def one(m: re.Match[str]) -> str:
        nonlocal count
        count += 1
        if not count & 4095:
            check()
        hex2, hex4, hex8, octal, ctrl, other = m.groups()
        digits = hex2 or hex4 or hex8
        if digits:
            return chr(min(int(digits, 16), 0x10FFFF))
        if octal:
            return chr(int(octal, 8) & 0xFF)
        if ctrl is not None:
            return chr(ord(ctrl) & 0x1F)
        if other in _ANSI:
            return _ANSI[other]
        return m.group(0)

    return _ANSI_ESCAPE.sub(one, body)


def _match_brace(text: str, start: int) -> int:
    """Index of the `}` closing the `${` at start (nesting and quotes respected), or -1."""
    # Single quotes hide braces only once inside ${...}, as in ${x:-'}'}.
    return _match_close(text, start, "{", "}", quotes_outside=False)


def _match_paren(text: str, start: int) -> int:
    """Index of the `)` closing the `(` at start; an unclosed one runs to the end."""
    end = _match_close(text, start, "(", ")", quotes_outside=True)
    return len(text) - 1 if end < 0 else end


def _match_close(text: str, start: int, opener: str, closer: str, *, quotes_outside: bool) -> int:
    """Index of the `closer` that balances the `opener` at start, skipping backslash escapes
    and single-quoted text (inside the brackets only, unless `quotes_outside`); -1 when it
    is never closed."""
    depth, i, n = 0, start, len(text)
    while i < n:
        ch = text[i]
        if ch == "\\":
            i += 2
            continue
        if ch == "'" and (quotes_outside or depth > 0):
            end = text.find("'", i + 1)
            if end < 0:
                return -1
            i = end + 1
            continue
        if ch == opener:
            depth += 1
        elif ch == closer:
            depth -= 1
            if depth == 0:
                return i
        i += 1
    return -1


def _dollar(text: str, i: int, quoted: bool, segs: list[Seg]) -> int:
    """Lex the expansion starting at text[i] == '$'; return the index after it."""
    n = len(text)
    nxt = text[i + 1] if i + 1 < n else ""
    if nxt == "(":
        end = _match_paren(text, i + 1)
        kind = "arithmetic" if text.startswith("$((", i) else "command substitution"
        segs.append(Dyn(kind, quoted))
        return end + 1
    if nxt == "[":
        end = text.find("]", i)
        segs.append(Dyn("arithmetic", quoted))
        return n if end < 0 else end + 1
    if nxt == "{":
        end = _match_brace(text, i + 1)
        if end < 0:
            segs.append(Dyn("unterminated ${", quoted))
            return n
        segs.append(_parse_braced(text[i + 2 : end], quoted))
        return end + 1
    m = _NAME.match(text, i + 1)
    if m:
        segs.append(Param(m.group(0), "", "", quoted, bare=True))
        return m.end()
    segs.append(Lit("$", quoted))
    return i + 1


_OPS: Final = (":-", ":=", ":+", ":?", "-", "=", "+", "?", "##", "#", "%%", "%", "//", "/", "^^",
               "^", ",,", ",", "@", ":")


def _parse_braced(body: str, quoted: bool) -> Seg:
    if body.startswith("!") or (body.startswith("#") and len(body) > 1):
        return Dyn("indirect or length expansion", quoted)
    m = _NAME.match(body)
    if not m:
        return Dyn("unparsed ${...}", quoted)
    rest = body[m.end() :]
    if rest.startswith("["):
        return Dyn("array element", quoted)
    if not rest:
        return Param(m.group(0), "", "", quoted)
    for op in _OPS:
        if rest.startswith(op):
            return Param(m.group(0), op, rest[len(op) :], quoted)
    return Dyn("unparsed ${...}", quoted)


_TILDE: Final = re.compile(r"~([^/\\'\"$`]*)(?=/|$)")
"""A tilde-prefix: up to the first slash, with nothing quoted or expanded in it."""
_ASSIGNISH: Final = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\+?=")
"""A word shaped like an assignment (`of=~/x`): bash expands a tilde-prefix after its `=`
and after each unquoted `:` in it, even as a command's argument (`dd of=~/.bashrc`)."""
_TILDE_IN_ASSIGN: Final = re.compile(r"~([^/:\\'\"$`]*)(?=[/:]|$)")
_STACK_PREFIX: Final = re.compile(r"[+-]?[0-9]*")
_IFS_RUN: Final = re.compile(r"[ \t\n]+")
"""What field splitting splits on (the default IFS)."""
_STACK: Final = "\x00stack"


def tilde_place(prefix: str, home: str) -> str | None:
    """What bash puts for `~PREFIX`: HOME; a user's home from the password database (read
    now); `_STACK` for `~+`, `~-` and `~N` (the working directory, OLDPWD, the directory
    stack: not known here); None when it stays as written (no such user)."""
    if not prefix:
        return home
    if _STACK_PREFIX.fullmatch(prefix):
        return _STACK
    import pwd

    try:
        return pwd.getpwnam(prefix).pw_dir
    except (KeyError, ValueError):  # ValueError: a NUL in the name
        return None


def lex(text: str, home: str) -> list[Seg]:
    """Split the source text of one shell word into literal and expansion segments."""
    segs: list[Seg] = []
    i, n = 0, len(text)
    if text.startswith("~"):
        i = _tilde(_TILDE, text, 0, home, segs)
    assign = 0  # where a tilde-prefix may follow `=` (an assignment-shaped word), else 0
    if "~" in text and (m := _ASSIGNISH.match(text)) is not None:
        segs.append(Lit(m.group(0), False))
        i = assign = m.end()
    while i < n:
        ch = text[i]
        if not len(segs) & 1023 and segs:  # a 64 KiB word is thousands of segments
            check()
        if assign and ch == "~" and (i == assign or text[i - 1] == ":"):
            j = _tilde(_TILDE_IN_ASSIGN, text, i, home, segs)
            if j > i:
                i = j
                continue
        if ch == "\\":
            if i + 1 < n:
                if text[i + 1] != "\n":
                    segs.append(Lit(text[i + 1], True))
                i += 2
            else:
                segs.append(Lit("\\", True))
                i += 1
        elif ch == "'":
            end = text.find("'", i + 1)
            end = n if end < 0 else end
            segs.append(Lit(text[i + 1 : end], True))
            i = end + 1
        elif ch == "$" and text.startswith("$'", i):
            j = i + 2
            while j < n and text[j] != "'":
                j += 2 if text[j] == "\\" else 1
            segs.append(Lit(decode_ansi_c(text[i + 2 : j]), True))
            i = j + 1
        elif ch == '"' or (ch == "$" and text.startswith('$"', i)):
            i = _double(text, i + (2 if ch == "$" else 1), segs)
        elif ch == "$":
            i = _dollar(text, i, False, segs)
        elif ch == "`":
            end = text.find("`", i + 1)
            segs.append(Dyn("backtick substitution", False))
            i = n if end < 0 else end + 1
        elif ch in "<>" and text.startswith("(", i + 1):
            segs.append(Dyn("process substitution", False))
            i = _match_paren(text, i + 1) + 1
        else:
            j = i + 1
            while j < n and text[j] not in "\\'\"$`<>" and not (
                    assign and text[j] == "~" and text[j - 1] == ":"):
                j += 1
            segs.append(Lit(text[i:j], False))
            i = j
    return segs


def _tilde(pattern: re.Pattern[str], text: str, i: int, home: str, segs: list[Seg]) -> int:
    """Expand the tilde-prefix at `i` into `segs`; where the word goes on (`i`: it stays)."""
    m = pattern.match(text, i)
    if m is None:
        return i
    place = tilde_place(m.group(1), home)
    if place is None:
        return i
    segs.append(Dyn("a directory stack entry (~+, ~-, ~N)", False) if place is _STACK
                else Lit(place, True))
    return m.end()


def _double(text: str, i: int, segs: list[Seg]) -> int:
    n = len(text)
    buf: list[str] = []
    while i < n and text[i] != '"':
        ch = text[i]
        if ch == "\\" and i + 1 < n:
            if text[i + 1] in '$`"\\':
                buf.append(text[i + 1])
            elif text[i + 1] != "\n":
                buf.append(text[i : i + 2])
            i += 2
        elif ch == "$" and i + 1 < n and (text[i + 1] in "({[" or _NAME.match(text, i + 1)):
            if buf:
                segs.append(Lit("".join(buf), True))
                buf = []
            i = _dollar(text, i, True, segs)
        elif ch == "`":
            if buf:
                segs.append(Lit("".join(buf), True))
                buf = []
            end = text.find("`", i + 1)
            segs.append(Dyn("backtick substitution", True))
            i = n if end < 0 else end + 1
        else:
            buf.append(ch)
            i += 1
    segs.append(Lit("".join(buf), True))
    return i + 1


Env = dict[str, tuple[str, ...]]
"""Known values of variables: every literal value the script could give them."""


def _param_values(seg: Param, env: Env, home: str, depth: int = 0) -> tuple[list[str], bool]:
    """Possible values of a parameter expansion and whether an unknown value is possible.
    Raises TooComplex past MAX_NESTING nested `${x:-${y:-...}}` operands."""
    known = env.get(seg.name)
    values = list(known) if known else []
    unknown = known is None
    if seg.op == "":
        return values, unknown
    if seg.op in (":-", "-", ":=", "="):
        default, default_dynamic = expand_text(seg.arg, env, home, depth + 1)
        return [*values, default], unknown or default_dynamic
    if seg.op in (":+", "+"):
        alt, alt_dynamic = expand_text(seg.arg, env, home, depth + 1)
        return ["", alt], alt_dynamic
    if seg.op in (":?", "?"):
        return values, unknown
    return [], True


def expand_text(text: str, env: Env, home: str, depth: int = 0) -> tuple[str, bool]:
    """A single best value of a word fragment (used for `${x:-default}`)."""
    if depth > MAX_NESTING:
        raise TooComplex("parameter expansions nested too deeply")
    check()
    out: list[str] = []
    dynamic = False
    for seg in lex(text, home):
        if isinstance(seg, Lit):
            out.append(seg.text)
        elif isinstance(seg, Param):
            vals, unk = _param_values(seg, env, home, depth)
            if vals:
                out.append(vals[0])
            dynamic = dynamic or unk or not vals
        else:
            dynamic = True
    return "".join(out), dynamic


PLAIN: Final = re.compile(r"[A-Za-z0-9_./:=,+@%^-]+")
"""A word made of these characters is its own only value."""


def simple_value(text: str) -> str | None:
    """The value of a word that is one field whatever the environment: plain characters, or
    one single- or double-quoted string with nothing to expand inside; else None."""
    if (text.isalnum() and text.isascii()) or PLAIN.fullmatch(text):
        return text  # (ASCII letters and digits are PLAIN without running the regex)
    if len(text) >= 2:
        quote = text[0]
        if quote == "'" and text[-1] == "'":
            inner = text[1:-1]
            if "'" not in inner:
                return inner
        elif quote == '"' and text[-1] == '"':
            inner = text[1:-1]
            if not ('"' in inner or "\\" in inner or "$" in inner or "`" in inner):
                return inner
    return None


def expand(text: str, env: Env, home: str) -> Expanded:
    """All values the word can take (bounded), with field splitting and brace expansion."""
    value = simple_value(text)
    if value is not None:
        return Expanded(((value,),), False, False)
    return expand_segments(text, env, home)


def expand_segments(text: str, env: Env, home: str) -> Expanded:
    """`expand` without the shortcut for simple words (every word goes through `lex`).
    Raises TooComplex for nesting past MAX_NESTING, OverBudget past the deadline."""
    check()
    segs = lex(text, home)
    _renaming_braces(segs)
    dynamic = False
    glob = False
    # Each choice list: the alternatives of one segment, as (text, quoted, splittable).
    choices: list[list[tuple[str, bool, bool]]] = []
    for seg in segs:
        if isinstance(seg, Lit):
            if not seg.quoted and not _GLOB_CHARS.isdisjoint(seg.text):
                glob = True
            choices.append([(seg.text, seg.quoted, False)])
        elif isinstance(seg, Param):
            if seg.op == "@":
                dynamic = True
                choices.append([(DYN, True, False)])
                continue
            vals, unknown = _param_values(seg, env, home)
            if unknown or not vals:
                dynamic = True
                vals = [*vals, DYN]
            if not seg.quoted and any(not _GLOB_CHARS.isdisjoint(v) for v in vals):
                glob = True  # an unquoted expansion's value is a pattern too (x='*'; cat $x)
            choices.append([(v, seg.quoted, not seg.quoted) for v in dict.fromkeys(vals)])
        else:
            dynamic = True
            choices.append([(DYN, seg.quoted, False)])
    alternatives: list[tuple[str, ...]] = []
    for combo in product(*choices):
        if len(alternatives) >= MAX_ALTERNATIVES:
            dynamic = True
            break
        alternatives.append(_fields(combo))
    return Expanded(tuple(dict.fromkeys(alternatives)), dynamic, glob)


def _renaming_braces(segs: list[Seg]) -> None:
    """bash brace-expands the text as written, before variables: `$a{b,}` is `$ab` and
    `$a`, two other variables than the `$a` the judge would fill in first. Raises
    TooComplex (the judge asks) for a bare `$name` right before a brace outside quotes."""
    for seg, after in pairwise(segs):
        if isinstance(seg, Param) and seg.bare and not seg.quoted and isinstance(after, Lit) \
                and not after.quoted and after.text.startswith("{"):
            raise TooComplex("brace expansion would change a variable's name")


def _fields(combo: tuple[tuple[str, bool, bool], ...]) -> tuple[str, ...]:
    """Join segments into fields: unquoted expansion results split on blanks (default IFS);
    brace expansion then turns one field into several words."""
    fields: list[list[tuple[str, bool]]] = [[]]
    keep_empty = False
    for text, quoted, split in combo:
        if quoted:
            keep_empty = True
        if split:
            parts = _IFS_RUN.split(text)
            for k, part in enumerate(parts):
                if k > 0 and fields[-1]:
                    fields.append([])
                if part:
                    fields[-1].append((part, False))
        else:
            fields[-1].append((text, quoted))
    words: list[str] = []
    for f in fields:
        if not f and not keep_empty:
            continue
        words.extend(brace_expand(f))
    return tuple(words)


def literal(text: str, home: str) -> str | None:
    """The single static value of a word, or None when it is dynamic or has several values."""
    exp = expand(text, {}, home)
    if exp.dynamic or len(exp.alternatives) != 1 or len(exp.alternatives[0]) != 1:
        return None
    return exp.alternatives[0][0]
