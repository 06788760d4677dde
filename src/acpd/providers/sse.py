"""An incremental server-sent events parser: feed bytes as they arrive, get events out.

Sans-io: no sockets, no clock. Follows the WHATWG "event stream interpretation" rules that
matter for model APIs: lines end in LF, CRLF or a lone CR (a CRLF may be split across two
chunks); `:` starts a comment; `data:` lines of one event are joined with `\\n`; one space
after the colon is dropped; an empty line dispatches the event; a field name without a colon
is a field with an empty value; an event still unterminated at the end of the stream is
dropped (but see `close`). `data: [DONE]` (OpenAI's end marker) is an ordinary event here;
the wire decoders give it meaning.

Lines are split on bytes before decoding, because a multi-byte UTF-8 character can straddle
two network reads but never contains the bytes CR or LF.
"""

from __future__ import annotations

from dataclasses import dataclass

DEFAULT_MAX_LINE_BYTES = 16 * 1024 * 1024
_BOM = "\ufeff"


class SSEError(ValueError):
    """The byte stream cannot be a sane event stream (e.g. a line past the size cap)."""


@dataclass(frozen=True, slots=True)
class SSEEvent:
    data: str
    event: str = "message"
    id: str | None = None


class SSEParser:
    """Feed bytes with `feed`, which returns the events completed by those bytes."""

    def __init__(self, *, max_line_bytes: int = DEFAULT_MAX_LINE_BYTES) -> None:
        self._max_line_bytes = max_line_bytes
        self._buffer = bytearray()
        # A chunk that ended in CR may be followed by the LF of the same CRLF.
        self._skip_lf = False
        self._first_line = True
        self._data: list[str] = []
        self._event = ""
        self._last_id: str | None = None

    def feed(self, chunk: bytes) -> list[SSEEvent]:
        """Consume `chunk`; raises SSEError when a line grows past the cap."""
        events: list[SSEEvent] = []
        if not chunk:
            return events
        if self._skip_lf:
            self._skip_lf = False
            if chunk[:1] == b"\n":
                chunk = chunk[1:]
        self._buffer += chunk
        start = 0
        buffer = self._buffer
        while True:
            end = _line_end(buffer, start)
            if end < 0:
                break
            line = bytes(buffer[start:end])
            if buffer[end] == 0x0D:
                if end + 1 < len(buffer):
                    start = end + 2 if buffer[end + 1] == 0x0A else end + 1
                else:
                    start = end + 1
                    self._skip_lf = True
            else:
                start = end + 1
            event = self._line(line.decode("utf-8", errors="replace"))
            if event is not None:
                events.append(event)
        del buffer[:start]
        if len(buffer) > self._max_line_bytes:
            raise SSEError(f"an event-stream line is longer than {self._max_line_bytes} bytes")
        return events

    def close(self) -> list[SSEEvent]:
        """The stream ended: return an event whose lines all arrived but whose blank line did not.

        The spec drops it; some servers omit the final blank line, and a complete `data:` line
        is safe to use. A last line without its line ending is a cut-off and stays dropped.
        """
        self._buffer.clear()
        event = self._dispatch()
        return [event] if event is not None else []

    def _line(self, line: str) -> SSEEvent | None:
        if self._first_line:
            self._first_line = False
            line = line.removeprefix(_BOM)
        if not line:
            return self._dispatch()
        if line.startswith(":"):
            return None
        name, colon, value = line.partition(":")
        if colon and value.startswith(" "):
            value = value[1:]
        if name == "data":
            self._data.append(value)
        elif name == "event":
            self._event = value
        elif name == "id" and "\0" not in value:
            self._last_id = value
        # `retry` and unknown fields are ignored: reconnection is not ours to do.
        return None

    def _dispatch(self) -> SSEEvent | None:
        data, event = self._data, self._event
        self._data, self._event = [], ""
        if not data:
            return None
        return SSEEvent("\n".join(data), event or "message", self._last_id)


def _line_end(buffer: bytearray, start: int) -> int:
    lf = buffer.find(b"\n", start)
    cr = buffer.find(b"\r", start, lf if lf >= 0 else len(buffer))
    return cr if cr >= 0 else lf
