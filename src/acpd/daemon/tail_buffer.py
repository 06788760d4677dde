"""The local runner's output buffer: the last `limit` bytes of a command's output, cut with
the secret scanner in mind (see TailBuffer), and the bounded tail a live terminal's snapshot
shows of it (`snapshot_tail`)."""

from __future__ import annotations

from typing import Protocol

import acpd.tools.filters  # noqa: F401  (before secrets: see tools/redaction.py)
from acpd.tools.secrets import key_open_at, redact_key_remainder


class TailBuffer:
    """Keeps the last `limit` bytes (None: all), like an editor terminal's outputByteLimit.

    The front is cut with the secret scanner in mind ("scan before cutting"): the cut moves
    forward to a whitespace byte (within SAFE_CUT_SCAN bytes) so no credential is left with
    its head cut off and its tail shown, and a private key whose BEGIN line was cut off is
    remembered, so `text()` hides its remaining lines instead of showing them as plain text.
    """

    def __init__(self, limit: int | None) -> None:
        self.limit = limit
        self.data = bytearray()
        self.truncated = False
        self.total = 0
        """Bytes ever added: grows with every chunk, whatever the cut keeps."""
        self.key_open = False
        """The kept text starts inside a private key whose BEGIN line was cut off."""

    def add(self, chunk: bytes) -> None:
        self.total += len(chunk)
        self.data += chunk
        if self.limit is not None and len(self.data) > self.limit:
            cut = _safe_cut(self.data, len(self.data) - self.limit)
            self.key_open = _key_open_after(self.data, cut, self.key_open)
            del self.data[:cut]
            self.truncated = True

    def text(self) -> str:
        text = self.data.decode("utf-8", errors="replace")
        return redact_key_remainder(text) if self.key_open else text

    def recent(self, size: int) -> tuple[str, bool]:
        """The text of the last `size` bytes or so (from a character boundary), and whether
        kept bytes come before it."""
        if size >= len(self.data):
            return self.text(), False
        start = len(self.data) - size
        while start < len(self.data) and self.data[start] & 0xC0 == 0x80:
            start += 1
        return bytes(self.data[start:]).decode("utf-8", errors="replace"), True


SAFE_CUT_SCAN = 4096


def _safe_cut(data: bytearray, cut: int) -> int:
    """A front cut at or after `cut`: after the next whitespace byte when there is one
    within SAFE_CUT_SCAN bytes (never inside a word, so never inside a token), else at a
    UTF-8 character boundary."""
    window = bytes(data[cut : cut + SAFE_CUT_SCAN])
    if cut > 0 and not data[cut - 1 : cut].isspace():
        spaces = [i for i in (window.find(c) for c in b" \n\t\r") if i >= 0]
        if spaces:
            return cut + min(spaces) + 1
    while cut < len(data) and data[cut] & 0xC0 == 0x80:
        cut += 1
    return cut


def _key_open_after(data: bytearray, cut: int, was_open: bool) -> bool:
    """Whether the text from `cut` on starts inside a private key, given whether the text
    before data[0] did."""
    head = bytes(data[: cut + 64]).decode("latin-1")  # ASCII markers; a BEGIN line may straddle
    if key_open_at(head, cut):
        return True
    if was_open:
        return "-----END " not in head[:cut]
    return False


class OutputSoFar(Protocol):
    """What a snapshot reads: TailBuffer."""

    truncated: bool

    def recent(self, size: int) -> tuple[str, bool]:
        """The text of (about) the last `size` bytes, and whether bytes before it exist."""
        ...


KEY_LOOKBACK = 64 * 1024
"""Bytes read before a snapshot's start to find a private key it may start inside."""


def snapshot_tail(output: OutputSoFar, chars: int) -> tuple[str, bool]:
    """The last `chars` characters of the output from a line start (a key whose BEGIN line
    is before it hidden), and whether anything before it is missing. Decodes only the end of
    the buffer (a limit of 1 GiB does not make each snapshot decode 1 GiB)."""
    text, cut_before = output.recent(4 * chars + KEY_LOOKBACK)
    start = max(0, len(text) - chars)
    if start > 0:
        line = text.find("\n", start)
        start = line + 1 if line >= 0 else start
    tail = text[start:]
    if start > 0 and key_open_at(text, start):
        tail = redact_key_remainder(tail)
    return tail, output.truncated or cut_before or start > 0
