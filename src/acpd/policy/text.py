"""Checks on the raw command text before parsing: size, NUL, bidi and invisible characters,
backslash-newline removal outside single quotes, and the NFKC variant."""

from __future__ import annotations

import re
import unicodedata
from typing import Final

from acpd.policy.budget import check
from acpd.policy.decision import Findings

BIDI: Final = frozenset("\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069\u200e\u200f\u061c")
"""Directional controls: they make the text an approver reads differ from the text bash runs."""

INVISIBLE: Final = frozenset(
    "\u200b\u200c\u200d\u2060\u2061\u2062\u2063\u2064\ufeff\u00ad\u034f\u180e\u115f\u1160"
    "\u3164\uffa0"
)
"""Zero-width and invisible characters (and Hangul fillers that render as nothing)."""


def check_text(command: str, max_bytes: int, out: Findings) -> bool:
    """Record findings on the raw text; return False when the text must not be parsed at all."""
    ascii_only = command.isascii()
    size = len(command) if ascii_only else len(command.encode("utf-8", "surrogatepass"))
    if size > max_bytes:
        out.add("deny", "input.too-large", f"command is {size} bytes, over the {max_bytes} cap")
        return False
    if "\x00" in command:
        out.add("deny", "input.nul", "command contains a NUL byte")
        return False
    if ascii_only:
        if not command.isprintable() and _CONTROL.search(command):  # (printable: none)
            ch = _CONTROL.search(command).group(0)  # type: ignore[union-attr]
            out.add("ask", "input.control", f"control character U+{ord(ch):04X} in command")
        return True
    unparsable = next((ch for ch in command if not parser_safe(ch)), None)
    if unparsable is not None:
        # tree-sitter-bash 0.25 reads out of bounds (and crashes the process, at random)
        # on code points in the unassigned and private-use planes, e.g. `$${U+10FFFF`.
        # No shell command needs them; the parser never sees them.
        out.add("deny", "input.unparsable-char",
                f"character U+{ord(unparsable):04X} (unassigned, private-use or surrogate) "
                "in command")
        return False
    odd_space = False
    for k, ch in enumerate(command):
        if not k & 4095:
            check()
        if ch in BIDI:
            out.add("deny", "blocklist.bidi", f"bidirectional control U+{ord(ch):04X} in command")
        elif ch in INVISIBLE:
            out.add("ask", "input.invisible", f"invisible character U+{ord(ch):04X} in command")
        elif ord(ch) > 127 and not odd_space and unicodedata.category(ch) in ("Zs", "Zl", "Zp"):
            odd_space = True
            out.add("ask", "input.invisible", f"non-ASCII space U+{ord(ch):04X} in command")
        elif ch in "\r\x0b\x0c" or (ord(ch) < 32 and ch not in "\t\n"):
            out.add("ask", "input.control", f"control character U+{ord(ch):04X} in command")
    return True


_CONTROL: Final = re.compile(r"[\x00-\x08\x0b-\x1f\x7f]")

LAST_PARSED_CODE_POINT: Final = 0x3FFFF
"""Planes 0-3 hold every script, symbol and emoji; nothing above is handed to the parser."""


def parser_safe(ch: str) -> bool:
    code = ord(ch)
    return code <= LAST_PARSED_CODE_POINT and not 0xD800 <= code <= 0xDFFF


def nfkc_variant(command: str) -> str | None:
    """The NFKC form with invisible characters removed, when it differs from the input."""
    if command.isascii():
        return None
    norm = unicodedata.normalize("NFKC", command)
    norm = "".join(ch for ch in norm if ch not in INVISIBLE and ch not in BIDI)
    norm = "".join(" " if unicodedata.category(ch) in ("Zs",) else ch for ch in norm)
    return norm if norm != command else None


def strip_line_continuations(command: str) -> str:
    """Remove backslash-newline pairs the way bash does: everywhere except inside single quotes
    (and ANSI-C strings) and comments. tree-sitter would read `r\\<nl>m` as two words."""
    if "\\\n" not in command:
        return command
    out: list[str] = []
    i, n = 0, len(command)
    word_start = True
    steps = 0
    while i < n:
        steps += 1
        if not steps & 4095:
            check()
        ch = command[i]
        if ch == "\\" and i + 1 < n:
            if command[i + 1] == "\n":
                i += 2
                continue
            out.append(command[i : i + 2])
            i += 2
            word_start = False
            continue
        if ch == "'":
            end = command.find("'", i + 1)
            end = n - 1 if end < 0 else end
            out.append(command[i : end + 1])
            i = end + 1
            word_start = False
            continue
        if ch == "$" and i + 1 < n and command[i + 1] == "'":
            j = i + 2
            while j < n and command[j] != "'":
                j += 2 if command[j] == "\\" else 1
            out.append(command[i : j + 1])
            i = j + 1
            word_start = False
            continue
        if ch == '"':
            j = i + 1
            buf = ['"']
            while j < n and command[j] != '"':
                if command[j] == "\\" and j + 1 < n:
                    if command[j + 1] != "\n":
                        buf.append(command[j : j + 2])
                    j += 2
                    continue
                buf.append(command[j])
                j += 1
            buf.append(command[j : j + 1])
            out.append("".join(buf))
            i = j + 1
            word_start = False
            continue
        if ch == "#" and word_start:
            end = command.find("\n", i)
            end = n if end < 0 else end
            out.append(command[i:end])
            i = end
            continue
        out.append(ch)
        word_start = ch in " \t\n;&|()<>"
        i += 1
    return "".join(out)
