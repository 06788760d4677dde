"""Pathname expansion of glob words, the way bash does it, on the disk as it is now.

A word with an unquoted `*`, `?` or `[` is replaced by bash with the paths it matches (sorted),
or left as written when nothing matches. The judge does the same, once per decision, and
judges what the word expands to: `cat *` reads the files that are there (a `.env` among them
is a denied read), `ls *` in a workspace without denied files is fine. Rules, as bash 5.2 with
its defaults (what acpd's non-interactive bash runs with):

- a component's `*`, `?` and `[...]` never match a leading `.` (dotglob off); `.` and `..`
  are never matched by a pattern (globskipdots on); `/` is matched only literally;
- the options a command line may set are honoured wherever it sets them (a superset): a line
  naming `dotglob` or `GLOBIGNORE` is expanded with dot files, `nocaseglob` ignoring case,
  `globstar` with `**` recursive, `globskipdots` with `.` and `..`; a line that runs `shopt`
  or `set` with an argument not known before running is expanded with all of them; with
  `extglob` named, a word using its `@(...)` forms is not expanded (the judge asks);
- bracket expressions with classes (`[[:alpha:]]`) match any one character (a superset);
- matches are judged in byte order and in case-folded order (locales sort differently, and
  the last operand of `mv`/`cp` is the destination);
- bounded: at most MAX_MATCHES paths per word and MAX_ENTRIES directory entries read per
  decision; past either the word is not expanded and the judge asks. Nothing is cached
  across decisions (files come and go).
"""

from __future__ import annotations

import os
import re
from typing import Final

from acpd.policy import pathtext
from acpd.policy.budget import check

MAX_MATCHES: Final = 256
MAX_ENTRIES: Final = 8192
GLOB_CHARS: Final = re.compile(r"[*?\[]")
_EXTGLOB: Final = re.compile(r"[?*+@!]\(")
_OPTION_NAMES: Final = ("dotglob", "nocaseglob", "globstar", "globskipdots", "extglob")
_SETS_OPTIONS: Final = re.compile(r"\b(?:shopt|set)\b")
_BACKSLASHED: Final = re.compile(r"\\(.)")
_RE_SPECIAL: Final = frozenset("()[]{}?*+-|^$\\.&~# \t\n\r\v\f")
"""What `re.escape` escapes (called per character, an interpreted call each)."""
_FLAGS: Final = int(re.DOTALL)
_FLAGS_NOCASE: Final = int(re.DOTALL | re.IGNORECASE)
"""(as ints: or-ing the flag enums runs interpreted code)"""


class TooWide(Exception):
    """The word matches more than the bounds allow."""


class GlobState:
    """One decision's glob expansion: the options the line sets and the entries read. (A
    plain slotted class, made per line: mypyc leaves a dataclass's generated `__init__`
    interpreted.)"""

    __slots__ = ("dotglob", "dots", "entries", "extglob", "globstar", "literal", "nocase",
                 "seen")

    def __init__(self, dotglob: bool = False, nocase: bool = False, globstar: bool = False,
                 dots: bool = False, extglob: bool = False) -> None:
        self.dotglob = dotglob
        self.nocase = nocase
        self.globstar = globstar
        self.dots = dots
        """`.` and `..` match (globskipdots turned off)."""
        self.extglob = extglob
        self.entries = 0
        self.seen: dict[tuple[str, str], tuple[str, ...] | None] = {}
        self.literal: set[str] = set()
        """Words that had glob characters and matched nothing: bash passes them as written,
        so they are judged as the literal names they are."""

    @classmethod
    def for_line(cls, text: str) -> GlobState:
        named = {n for n in _OPTION_NAMES if n in text}
        if "GLOBIGNORE" in text:  # a non-empty GLOBIGNORE turns dotglob on
            named.add("dotglob")
        if _SETS_OPTIONS.search(text) and ("$" in text or "`" in text):
            named.update(_OPTION_NAMES)  # an option name built at run time
        return cls("dotglob" in named, "nocaseglob" in named, "globstar" in named,
                   "globskipdots" in named, "extglob" in named)


def has_glob(word: str) -> bool:
    return GLOB_CHARS.search(word) is not None


def expand(word: str, cwds: list[str], state: GlobState) -> list[tuple[str, ...]] | None:
    """The argument lists `word` becomes (one per sort order), or None when it cannot be
    expanded within the bounds (or uses extglob forms). A word matching nothing comes back
    as itself (and is remembered in `state.literal`)."""
    if state.extglob and _EXTGLOB.search(word):
        return None
    found: dict[str, None] = {}
    try:
        for cwd in cwds:
            key = (cwd, word)
            if key not in state.seen:
                state.seen[key] = tuple(_matches(word, cwd, state))
            for m in state.seen[key] or ():
                found[m] = None
            if len(found) > MAX_MATCHES:
                raise TooWide
    except TooWide:
        return None
    if not found:
        state.literal.add(word)
        return [(word,)]
    plain = tuple(sorted(found))
    folded = tuple(sorted(found, key=lambda s: (s.casefold(), s)))
    return [plain] if plain == folded else [plain, folded]


def _matches(word: str, cwd: str, state: GlobState) -> list[str]:
    absolute = word.startswith("/")
    parts = word.split("/")
    trailing = parts[-1] == ""
    comps = [p for p in parts if p]
    # (path as bash prints it, path on disk)
    current: list[tuple[str, str]] = [("/" if absolute else "", "/" if absolute else cwd)]
    for k, comp in enumerate(comps):
        check()
        last = k == len(comps) - 1 and not trailing
        nxt: list[tuple[str, str]] = []
        if not has_glob(comp):
            name = _unescape(comp)
            nxt = [(pathtext.join(shown, name), pathtext.join(real, name))
                   for shown, real in current]
        elif comp == "**" and state.globstar:
            for shown, real in current:
                nxt.extend(_recursive(shown, real, state, dirs_only=not last))
        else:
            regex = _component_regex(comp, state.nocase)
            hidden_ok = state.dotglob or comp.startswith(".")
            for shown, real in current:
                for name, is_dir in _entries(real, state):
                    if (name.startswith(".") and not hidden_ok) or not regex.fullmatch(name):
                        continue
                    if not last and not is_dir:
                        continue
                    nxt.append((pathtext.join(shown, name), pathtext.join(real, name)))
                    if len(nxt) > MAX_MATCHES:
                        raise TooWide
        current = nxt
        if not current:
            return []
    if trailing:
        return [shown + "/" for shown, real in current if pathtext.isdir(real)]
    return [shown for shown, real in current if pathtext.lexists(real)]


def _entries(directory: str, state: GlobState) -> list[tuple[str, bool]]:
    """Names in `directory` (and whether each is a directory, links followed), with `.` and
    `..` when globskipdots is off."""
    out: list[tuple[str, bool]] = [(".", True), ("..", True)] if state.dots else []
    try:
        with os.scandir(directory) as it:
            for entry in it:
                state.entries += 1
                if state.entries > MAX_ENTRIES:
                    raise TooWide
                if not state.entries & 255:
                    check()
                try:
                    is_dir = entry.is_dir()
                except OSError:
                    is_dir = False
                out.append((entry.name, is_dir))
    except (NotADirectoryError, FileNotFoundError, PermissionError, OSError):
        return out if pathtext.isdir(directory) else []
    return out


def _recursive(shown: str, real: str, state: GlobState,
               dirs_only: bool) -> list[tuple[str, str]]:
    """`**` with globstar: the directory itself and everything below (directories only when
    more components follow), hidden names only with dotglob."""
    out: list[tuple[str, str]] = [(shown, real)] if dirs_only else []
    stack = [(shown, real)]
    while stack:
        s, r = stack.pop()
        for name, is_dir in _entries(r, state):
            if name in (".", "..") or (name.startswith(".") and not state.dotglob):
                continue
            child = (pathtext.join(s, name), pathtext.join(r, name))
            if is_dir and not pathtext.islink(child[1]):
                stack.append(child)
            if is_dir or not dirs_only:
                out.append(child)
            if len(out) > MAX_MATCHES:
                raise TooWide
    return out


def _unescape(comp: str) -> str:
    return _BACKSLASHED.sub(_escaped_char, comp)


def _escaped_char(m: re.Match[str]) -> str:
    return m.group(1)


def component_may_match(pattern: str, name: str) -> bool:
    """May the one-component glob `pattern` match `name` (bash's matching, case ignored: a
    superset)?"""
    return _component_regex(pattern, True).fullmatch(name) is not None


def _component_regex(comp: str, nocase: bool) -> re.Pattern[str]:
    """bash's pattern matching for one path component."""
    out: list[str] = []
    i, n = 0, len(comp)
    while i < n:
        ch = comp[i]
        if ch == "*":
            out.append(".*")
        elif ch == "?":
            out.append(".")
        elif ch == "\\" and i + 1 < n:
            i += 1
            out.append(_escaped(comp[i]))
        elif ch == "[":
            end, cls = _bracket(comp, i)
            if end < 0:
                out.append("\\[")
            else:
                out.append(cls)
                i = end
        else:
            out.append(_escaped(ch))
        i += 1
    return re.compile("".join(out), _FLAGS_NOCASE if nocase else _FLAGS)


def _escaped(ch: str) -> str:
    return "\\" + ch if ch in _RE_SPECIAL else ch


def _bracket(comp: str, start: int) -> tuple[int, str]:
    """(index of the closing `]`, regex class) of the bracket expression at `start`, or
    (-1, "") when it does not close (then `[` is a literal character)."""
    i = start + 1
    negate = i < len(comp) and comp[i] in "!^"
    if negate:
        i += 1
    first = i
    while i < len(comp):
        if comp[i] == "]" and i > first:
            break
        if comp[i] == "[" and i + 1 < len(comp) and comp[i + 1] in ":=.":
            close = comp.find(comp[i + 1] + "]", i + 2)
            if close < 0:
                return -1, ""
            i = close + 2
            continue
        i += 2 if comp[i] == "\\" else 1
    else:
        return -1, ""
    body = comp[first:i]
    if "[:" in body or "[=" in body or "[." in body:
        return i, "."  # a class, negated or not: any one character (a superset)
    chars = _unescape(body)
    escaped = "".join("\\" + c if c in "\\]^[" else c for c in chars)
    return i, f"[{'^' if negate else ''}{escaped}]"
