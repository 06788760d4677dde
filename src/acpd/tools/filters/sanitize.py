"""`sanitize_output`: what every output goes through, whatever rule matched (or none)."""

from __future__ import annotations

import re

_ANSI = re.compile(
    r"\x1b\[[0-?]*[ -/]*[@-~]"  # CSI: colours, cursor moves, erase line
    r"|\x1b\][^\x07\x1b\n]*(?:\x07|\x1b\\)?"  # OSC: titles, hyperlinks
    r"|\x1b[PX^_][^\x1b\n]*(?:\x1b\\)?"  # DCS, SOS, PM, APC
    r"|\x1b[@-Z\\-_]"  # two-byte sequences
    r"|\x1b"  # a lone ESC left over
)
_BLANK_RUN = re.compile(r"\n(?:[ \t]*\n){2,}")
_TRAILING_CR = re.compile(r"\r+\n")


def sanitize_output(text: str) -> str:
    """Strip ANSI escapes, keep only the last state of carriage-return progress lines and
    collapse runs of blank lines into one blank line."""
    if "\x1b" in text:
        text = _ANSI.sub("", text)
    if "\r" in text:
        text = _collapse_carriage_returns(_TRAILING_CR.sub("\n", text))
    if "\n\n" in text or "\n \n" in text or "\n\t\n" in text:
        text = _BLANK_RUN.sub("\n\n", text)
    return text


def _collapse_carriage_returns(text: str) -> str:
    # A progress bar redraws its line with `\r`: the terminal shows only what follows the
    # last one. A trailing `\r` (already folded above when before `\n`) leaves the line as is.
    lines = text.split("\n")
    for i, line in enumerate(lines):
        if "\r" in line:
            stripped = line.rstrip("\r")
            lines[i] = stripped[stripped.rfind("\r") + 1 :]
    return "\n".join(lines)
