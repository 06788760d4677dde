"""Newline-delimited JSON framing, sans-io.

`LineDecoder.feed()` takes whatever bytes arrived and returns the complete frames in them.
A line longer than the cap is not buffered: its bytes are dropped as they arrive and one
`Oversize` frame stands for it once its newline shows up, so a hostile peer cannot make
the daemon hold more than `max_line_bytes` of one line.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import orjson

DEFAULT_MAX_LINE_BYTES = 64 * 1024 * 1024
HEAD_BYTES = 256


@dataclass(frozen=True, slots=True)
class Line:
    data: bytes


@dataclass(frozen=True, slots=True)
class Oversize:
    size: int
    head: bytes
    """The first bytes of the line, so the caller can try to recover the request id."""


Frame = Line | Oversize


class LineDecoder:
    def __init__(self, max_line_bytes: int = DEFAULT_MAX_LINE_BYTES) -> None:
        if max_line_bytes < 1:
            raise ValueError("max_line_bytes must be positive")
        self.max_line_bytes = max_line_bytes
        self._buffer = bytearray()
        self._skipping = False
        self._skipped = 0
        self._skipped_head = b""

    def feed(self, data: bytes) -> list[Frame]:
        frames: list[Frame] = []
        start = 0
        while True:
            newline = data.find(b"\n", start)
            if newline < 0:
                self._absorb(data[start:])
                return frames
            frame = self._finish(data[start:newline])
            if frame is not None:
                frames.append(frame)
            start = newline + 1

    def close(self) -> list[Frame]:
        """Return the last frame of a stream that ended without a newline."""
        if self._skipping:
            return [self._oversize()]
        line = bytes(self._buffer)
        self._buffer.clear()
        if len(line) > self.max_line_bytes:
            return [Oversize(len(line), line[:HEAD_BYTES])]
        return [Line(line)] if line.strip() else []

    def _absorb(self, chunk: bytes) -> None:
        if self._skipping:
            self._skip(chunk)
            return
        self._buffer += chunk
        if len(self._buffer) > self.max_line_bytes:
            self._skipping = True
            self._skipped = len(self._buffer)
            self._skipped_head = bytes(self._buffer[:HEAD_BYTES])
            self._buffer.clear()

    def _skip(self, chunk: bytes) -> None:
        self._skipped += len(chunk)
        if len(self._skipped_head) < HEAD_BYTES:  # the head does not depend on chunking
            self._skipped_head += chunk[: HEAD_BYTES - len(self._skipped_head)]

    def _finish(self, tail: bytes) -> Frame | None:
        if self._skipping:
            self._skip(tail)
            return self._oversize()
        if self._buffer:
            self._buffer += tail
            line = bytes(self._buffer)
            self._buffer.clear()
        else:
            line = tail
        if len(line) > self.max_line_bytes:
            return Oversize(len(line), line[:HEAD_BYTES])
        if not line.strip():
            return None  # blank lines are keep-alives, not errors
        return Line(line)

    def _oversize(self) -> Oversize:
        frame = Oversize(self._skipped, self._skipped_head)
        self._skipping = False
        self._skipped = 0
        self._skipped_head = b""
        return frame


def encode(message: Any) -> bytes:
    """Serialise one message as a single line.

    orjson never emits a raw newline (control characters in strings are escaped) and never
    pretty-prints. It refuses strings that are not valid Unicode (lone surrogates, e.g. from
    bytes decoded with `surrogateescape`) and integers beyond 64 bits: such a message is
    repaired with `sanitize()` rather than allowed to take the writer down. Anything else
    orjson cannot serialise is a programming error and raises TypeError.
    """
    try:
        return orjson.dumps(message) + b"\n"
    except orjson.JSONEncodeError:
        return orjson.dumps(sanitize(message), option=orjson.OPT_NON_STR_KEYS) + b"\n"


_INT_MIN, _UINT_MAX = -(2**63), 2**64 - 1


def sanitize(value: Any) -> Any:
    """A copy of `value` that orjson can serialise: lone surrogates become U+FFFD (a
    well-formed surrogate pair becomes its character) and integers beyond 64 bits become
    their decimal string. Containers are rebuilt; other values are returned as they are."""
    if isinstance(value, str):
        return _repair_text(value)
    if isinstance(value, bool) or value is None or isinstance(value, float):
        return value
    if isinstance(value, int):
        return value if _INT_MIN <= value <= _UINT_MAX else str(value)
    if isinstance(value, dict):
        return {
            (_repair_text(k) if isinstance(k, str) else k): sanitize(v) for k, v in value.items()
        }
    if isinstance(value, list | tuple):
        return [sanitize(item) for item in value]
    return value


def _repair_text(text: str) -> str:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return text.encode("utf-16", "surrogatepass").decode("utf-16", "replace")
    return text
