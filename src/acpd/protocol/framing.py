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
        if self._buffer.strip():
            frame = Line(bytes(self._buffer))
            self._buffer.clear()
            return [frame]
        return []

    def _absorb(self, chunk: bytes) -> None:
        if self._skipping:
            self._skipped += len(chunk)
            return
        self._buffer += chunk
        if len(self._buffer) > self.max_line_bytes:
            self._skipping = True
            self._skipped = len(self._buffer)
            self._skipped_head = bytes(self._buffer[:256])
            self._buffer.clear()

    def _finish(self, tail: bytes) -> Frame | None:
        if self._skipping:
            self._skipped += len(tail)
            return self._oversize()
        if self._buffer:
            self._buffer += tail
            line = bytes(self._buffer)
            self._buffer.clear()
        else:
            line = tail
        if len(line) > self.max_line_bytes:
            return Oversize(len(line), line[:256])
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
    """Serialise one message as a single line; orjson never emits a raw newline."""
    return orjson.dumps(message) + b"\n"
