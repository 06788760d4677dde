"""Secret redaction for output that is shown while it is still being written.

A credential may be split across two reads of a pipe (`ghp_abc` now, `def...` 3 ms later),
and several patterns need the words before the value (`Bearer `, `aws_secret_access_key = `,
a line start for `TOKEN=...`). So `StreamRedactor` never scans a fragment on its own:

- Bytes are decoded incrementally (UTF-8 with surrogateescape: a character split across reads
  waits for its other half; bytes that are not UTF-8 survive the round trip unchanged).
- Text is released a line at a time (`feed`). A line still being written is released only
  by `flush_partial` (the caller's idle timer), and then only up to its trailing word
  (`hold_point`): a token is never cut in two.
- Each release is scanned together with the text released just before it (at most
  LINE_CONTEXT characters, across lines), and only the part after that context is returned:
  a value whose keyword went out in an earlier release (`Bearer `, or `Bearer` at the end of
  the previous line) is still recognised.
- A private key spans lines: from a BEGIN line without its END line, lines are held (at most
  KEY_HOLD characters) until the END arrives; past that, the key is replaced by the
  placeholder and its further lines are dropped up to its END line.

`finish` releases everything left (a key without END is redacted to the end, as the scanner
does for a whole output). Every method is linear in what it is given.
"""

from __future__ import annotations

import codecs
from collections.abc import Callable

import acpd.tools.filters  # noqa: F401  (before secrets: see tools/redaction.py)
from acpd.tools.secrets import KEY_PLACEHOLDER, hold_point, key_open_at

Redact = Callable[[str], str]
"""Text in, text with every credential replaced out (the output stage's scanner)."""

LINE_CONTEXT = 4096
"""How much of the text already released is rescanned with what follows it."""
LONG_LINE = 16 * 1024
"""A line longer than this is released up to its last word without waiting for its end."""
KEY_HOLD = 64 * 1024
"""The most of an unfinished private key held back waiting for its END line."""
_KEY_END = "-----END "


class StreamRedactor:
    def __init__(self, redact: Redact) -> None:
        self._redact = redact
        self._decoder = codecs.getincrementaldecoder("utf-8")("surrogateescape")
        self._carry = ""
        """Decoded text not released yet."""
        self._line = ""
        """What was released of the current line (its last LINE_CONTEXT characters)."""
        self._in_key = False
        """A key's placeholder went out; its lines are dropped until its END line."""

    def feed(self, data: bytes) -> str:
        """Decode `data`; return the complete lines that can be shown now, redacted."""
        self._carry += self._decoder.decode(data)
        return self._release(partial=False)

    def flush_partial(self) -> str:
        """The line being written, up to its trailing word (the caller saw no new bytes for
        a while: a prompt or a progress line should not wait for its newline)."""
        return self._release(partial=True)

    def finish(self) -> str:
        """Everything left, redacted (the stream ended)."""
        self._carry += self._decoder.decode(b"", final=True)
        if self._in_key and not self._skip_key():
            self._carry = ""
            return ""
        context, text = self._line, self._carry
        self._carry = self._line = ""
        return _after(self._redact(context + text), self._redact(context) if context else "")

    @property
    def holding(self) -> bool:
        """Text is waiting for more (a partial line or an unfinished key)."""
        return bool(self._carry)

    # --- the steps ------------------------------------------------------------------------

    def _release(self, *, partial: bool) -> str:
        if self._in_key and not self._skip_key():
            return ""
        carry = self._carry
        end = hold_point(carry) if partial else carry.rfind("\n") + 1
        if end == 0 and len(carry) > LONG_LINE:
            end = hold_point(carry)
        segment = carry[:end]
        begin = _open_key_start(self._line, segment)
        if begin is not None:
            if len(carry) - begin <= KEY_HOLD:
                segment, end = segment[:begin], begin  # wait for the END line
            else:
                out = self._scan(segment[:begin]) + KEY_PLACEHOLDER + "\n"
                self._carry, self._in_key, self._line = "", True, ""
                return out
        if not segment:
            return ""
        self._carry = carry[end:]
        return self._scan(segment)

    def _scan(self, segment: str) -> str:
        if not segment:
            return ""
        context = self._line
        out = _after(self._redact(context + segment), self._redact(context) if context else "")
        # The context spans lines: `Bearer\n<token>` is one match for the scanner too.
        self._line = (context + segment)[-LINE_CONTEXT:]
        return out

    def _skip_key(self) -> bool:
        """Drop a redacted key's lines up to and with its END line; True once it was seen."""
        at = self._carry.find(_KEY_END)
        line_end = self._carry.find("\n", at) if at >= 0 else -1
        if line_end < 0:
            if at < 0:
                self._carry = self._carry[-len(_KEY_END) :]  # an END may straddle two reads
            return False
        self._carry = self._carry[line_end + 1 :]
        self._in_key, self._line = False, ""
        return True


def _open_key_start(context: str, segment: str) -> int | None:
    """Where, in `segment`, the held part of a private key starts: from the line of a BEGIN
    that has no END after it (part of that line may have gone out already, in `context`)."""
    text = context + segment
    if "PRIVATE KEY" not in text or not key_open_at(text, len(text)):
        return None
    begin = text.rfind("-----BEGIN ")
    return max(0, text.rfind("\n", 0, begin) + 1 - len(context))


def _after(redacted: str, redacted_context: str) -> str:
    """`redacted` without the part that was already released (`redacted_context`): their
    common prefix. A match that grew into the context is shown again whole rather than
    half."""
    if redacted.startswith(redacted_context):
        return redacted[len(redacted_context) :]
    n = 0
    for a, b in zip(redacted, redacted_context, strict=False):
        if a != b:
            break
        n += 1
    return redacted[n:]


def to_text(text: str) -> str:
    """Released text as valid Unicode for a JSON string (bytes that were not UTF-8 become
    U+FFFD)."""
    return text.encode("utf-8", "surrogateescape").decode("utf-8", "replace")


def to_bytes(text: str) -> bytes:
    """Released text back to the bytes the command wrote (redactions aside)."""
    return text.encode("utf-8", "surrogateescape")
