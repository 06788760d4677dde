"""`sanitize_output`: what every output goes through, whatever rule matched (or none)."""

from __future__ import annotations

import re

_ANSI = re.compile(
    r"\x1b(?:"  # one literal first character: the engine skips to each ESC at C speed
    r"\[[0-?]*[ -/]*[@-~]"  # CSI: colours, cursor moves, erase line
    r"|\][^\x07\x1b\n]*(?:\x07|\x1b\\)?"  # OSC: titles, hyperlinks
    r"|[PX^_][^\x1b\n]*(?:\x1b\\)?"  # DCS, SOS, PM, APC
    r"|[@-Z\\-_]"  # two-byte sequences
    r"|)"  # a lone ESC left over
)
_BLANK_RUN = re.compile(r"\n(?:[ \t]*\n){2,}")
_TRAILING_CR = re.compile(r"\r+\n")
_LINE_TO_LAST_CR = re.compile(r"\n[^\n]*\r")


def sanitize_output(text: str) -> str:
    """Strip ANSI escapes, keep only the last state of carriage-return progress lines and
    collapse runs of blank lines into one blank line. Returns `text` itself when it had
    nothing to clean. Each step runs only when its trigger character occurs, and works on
    the whole string (C-level passes), never line by line."""
    if "\x1b" in text:
        text = _ANSI.sub("", text)
    if "\r" in text:
        text = text.replace("\r\n", "\n")
        if "\r\n" in text:  # `\r\r\n`: rarer, left to the regex
            text = _TRAILING_CR.sub("\n", text)
        if "\r" in text:
            text = _collapse_carriage_returns(text)
    if "\n\n" in text or "\n \n" in text or "\n\t\n" in text:
        text = _BLANK_RUN.sub("\n\n", text)
    return text


def _collapse_carriage_returns(text: str) -> str:
    # A progress bar redraws its line with `\r`: the terminal shows only what follows the
    # last one. Trailing `\r`s (already folded above when before `\n`) are dropped, the line
    # before them kept. `\n[^\n]*\r` takes a line up to its last `\r` (greedy); its literal
    # first character lets the engine skip from newline to newline at C speed.
    return _LINE_TO_LAST_CR.sub("\n", "\n" + text.rstrip("\r"))[1:]
