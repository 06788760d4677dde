"""A GNU sed 4.x script reader that follows `compile.c` to the letter.

Rules (each one is GNU's, not a guess): a label (`:`, `b`, `t`, `T`, `v`) ends at a blank,
`;`, `}`, `#` or a newline, and the next non-blank character starts a new command (so
`:a e CMD` runs CMD); `r`/`R`/`w`/`W` and `s///w` take the rest of the line as a file name,
`;` and `}` included; `a`/`i`/`c`/`e` take text to the end of the line, a backslash continues
it onto the next line, and one that ends an `-e` chunk continues into the next chunk; a regex
ends at its delimiter outside a bracket expression; commands that take no argument must be
followed by `;`, `}`, `#` or a newline. `w` files are opened while the script is read, so a
`w` that is never reached (branched over, or followed by a syntax error) still creates its
file: every command up to the point where reading stops is reported.

Limits: a script GNU would reject, or one whose reading depends on the locale (a delimiter
outside ASCII), is reported `uncertain` with the commands read so far; the callers ask.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from typing import Final

_BLANK: Final = " \t"
_SPACE: Final = " \t\n\v\f\r"
_DIGITS: Final = "0123456789"
_NO_ARG: Final = "=dDFgGhHnNpPzx"


@dataclass(frozen=True, slots=True)
class SedScript:
    commands: tuple[tuple[str, str], ...]
    """(command letter, argument): label, file name, text, or the flags of `s`; `s///w FILE`
    is reported as `s` and a `w` of FILE."""
    uncertain: str | None
    """Why the script cannot be read as GNU sed would (None: read to the end)."""


class _Stop(Exception):
    """GNU sed would stop reading here (bad_prog) or the reading is not certain."""


class _Reader:
    __slots__ = ("i", "n", "s")

    def __init__(self, text: str) -> None:
        self.s, self.i, self.n = text, 0, len(text)

    def get(self) -> str:
        if self.i >= self.n:
            return ""
        ch = self.s[self.i]
        self.i += 1
        return ch

    def unget(self, ch: str) -> None:
        if ch:
            self.i -= 1

    def nonblank(self) -> str:
        ch = self.get()
        while ch and ch in _BLANK:
            ch = self.get()
        return ch

    def end_of_cmd(self) -> None:
        ch = self.nonblank()
        if ch in ("}", "#"):
            self.unget(ch)
        elif ch not in ("", "\n", ";"):
            raise _Stop("extra characters after a command")

    def integer(self, ch: str) -> None:
        while ch and ch in _DIGITS:
            ch = self.get()
        self.unget(ch)

    def label(self) -> str:
        ch = self.nonblank()
        start = self.i - (1 if ch else 0)
        while ch and ch not in "\n \t;}#":
            ch = self.get()
        self.unget(ch)
        return self.s[start : self.i]

    def filename(self) -> str:
        ch = self.nonblank()
        out: list[str] = []
        while ch and ch != "\n":
            out.append(ch)
            ch = self.get()
        if not out:
            raise _Stop("a file name is missing")
        return "".join(out)

    def char_class(self) -> str:
        """snarf_char_class: the character that ended the bracket expression."""
        ch = self.get()
        if ch == "^":
            ch = self.get()
        if ch == "]":
            ch = self.get()
        state, delim = 0, ""
        while True:
            if ch in ("", "\n"):
                return ch
            if ch in ".:=":
                if state == 1:
                    delim, state = ch, 2
                    ch = self.get()
                    continue
                if state == 2 and ch == delim:
                    state = 3
                    ch = self.get()
                    continue
            elif ch == "[":
                if state == 0:
                    state = 1
                ch = self.get()
                continue
            elif ch == "]":
                if state in (0, 1):
                    return ch
                if state == 3:
                    state = 0
            state &= ~1
            ch = self.get()

    def slash(self, slash: str, regex: bool) -> None:
        """match_slash: read up to the unescaped delimiter `slash`."""
        if not slash.isascii():
            raise _Stop("a delimiter outside ASCII (its reading depends on the locale)")
        ch = self.get()
        while ch and ch != "\n":
            if ch == slash:
                return
            if ch == "\\":
                ch = self.get()
                if not ch:
                    break
            elif ch == "[" and regex:
                ch = self.char_class()
                if ch != "]":
                    break
            ch = self.get()
        raise _Stop("an unterminated regex or s/y command")


def _text(r: _Reader, leadin: str) -> bool:
    """read_text: a/i/c/e text up to an unescaped newline; True when it is still open (it
    ended with a backslash at the end of the chunk)."""
    if not leadin:
        return True
    ch = r.get()
    while ch and ch != "\n":
        if ch == "\\":
            ch = r.get()
        if not ch:
            return True
        ch = r.get()
    return False


def _address(r: _Reader, ch: str) -> bool:
    if ch in ("/", "\\"):
        if ch == "\\":
            ch = r.get()
        r.slash(ch, True)
        ch = r.nonblank()
        while ch in ("I", "M"):
            ch = r.nonblank()
        r.unget(ch)
        return True
    if ch and ch in _DIGITS:
        r.integer(ch)
        ch = r.nonblank()
        if ch != "~":
            r.unget(ch)
        else:
            r.integer(r.nonblank())
        return True
    if ch in ("+", "~"):
        r.integer(r.nonblank())
        return True
    return ch == "$"


class _State:
    __slots__ = ("depth", "pending")

    def __init__(self) -> None:
        self.pending = False
        self.depth = 0


def _subst_flags(r: _Reader, out: list[tuple[str, str]]) -> None:
    flags: list[str] = []
    while True:
        ch = r.nonblank()
        if ch in ("i", "I", "m", "M", "e", "p", "g"):
            flags.append(ch)
        elif ch == "w":
            out.append(("s", "".join(flags) + "w"))
            out.append(("w", r.filename()))
            return
        elif ch and ch in _DIGITS:
            flags.append(ch)
            r.integer(r.get())
        elif ch in ("}", "#"):
            r.unget(ch)
            break
        elif ch in ("", "\n", ";") or (ch == "\r" and r.get() == "\n"):
            break
        else:
            raise _Stop(f"unknown option to s: {ch!r}")
    out.append(("s", "".join(flags)))


def _command(r: _Reader, ch: str, addressed: bool, st: _State,
             out: list[tuple[str, str]]) -> None:
    if ch == "#":
        if addressed:
            raise _Stop("comments take no address")
        while ch and ch != "\n":
            ch = r.get()
    elif ch == "v":
        r.label()
    elif ch == "{":
        st.depth += 1
        out.append(("{", ""))
    elif ch == "}":
        if st.depth == 0 or addressed:
            raise _Stop("unexpected }")
        r.end_of_cmd()
        st.depth -= 1
        out.append(("}", ""))
    elif ch in ("e", "a", "i", "c"):
        start = r.i
        lead = r.nonblank()
        if ch == "e" and lead in ("", "\n"):
            out.append(("e", ""))
            return
        if not lead:
            raise _Stop(f"{ch} expects text")
        if lead == "\\":
            lead = r.get()
        else:
            r.unget(lead)
            lead = "\n"
        st.pending = _text(r, lead)
        out.append((ch, r.s[start : r.i]))
    elif ch in (":", "b", "t", "T"):
        if ch == ":" and addressed:
            raise _Stop(": takes no address")
        label = r.label()
        if ch == ":" and not label:
            raise _Stop(": lacks a label")
        out.append((ch, label))
    elif ch in ("q", "Q", "l", "L"):
        nxt = r.nonblank()
        if nxt and nxt in _DIGITS:
            r.integer(nxt)
        else:
            r.unget(nxt)
        r.end_of_cmd()
        out.append((ch, ""))
    elif ch and ch in _NO_ARG:
        r.end_of_cmd()
        out.append((ch, ""))
    elif ch in ("r", "R", "w", "W"):
        out.append((ch, r.filename()))
    elif ch == "s":
        delim = r.get()
        r.slash(delim, True)
        r.slash(delim, False)
        _subst_flags(r, out)
    elif ch == "y":
        delim = r.get()
        r.slash(delim, False)
        r.slash(delim, False)
        r.end_of_cmd()
        out.append(("y", ""))
    else:
        raise _Stop(f"unknown command {ch!r}" if ch else "a command is missing")


def _chunk(text: str, st: _State, out: list[tuple[str, str]]) -> None:
    """compile_program over one -e chunk (or the script operand)."""
    r = _Reader(text)
    if st.pending:
        st.pending = _text(r, "\n")
    while True:
        ch = r.get()
        while ch and (ch == ";" or ch in _SPACE):
            ch = r.get()
        if not ch:
            return
        addressed = _address(r, ch)
        if addressed:
            ch = r.nonblank()
            if ch == ",":
                if not _address(r, r.nonblank()):
                    raise _Stop("a second address is missing after ','")
                ch = r.nonblank()
        if ch == "!":
            ch = r.nonblank()
            if ch == "!":
                raise _Stop("multiple '!'")
        _command(r, ch, addressed, st, out)


@lru_cache(maxsize=256)
def parse_sed(chunks: tuple[str, ...]) -> SedScript:
    """The commands of the GNU sed script made of `chunks` (the -e values in order, or the
    script operand). A pure function of its text."""
    out: list[tuple[str, str]] = []
    st = _State()
    try:
        for text in chunks:
            _chunk(text, st, out)
    except _Stop as stop:
        return SedScript(tuple(out), str(stop))
    if st.depth:
        return SedScript(tuple(out), "an unclosed {")
    return SedScript(tuple(out), None)
