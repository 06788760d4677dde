"""A real HTTP server on 127.0.0.1 that replays recorded model-API streams.

Each POST takes the next queued `Reply`; every request is recorded (path, headers, JSON body)
so tests can assert what the provider sent. SSE bodies go out with chunked transfer encoding in
small writes, as the real APIs do, so the client sees the stream arrive piecemeal.
"""

from __future__ import annotations

import json
import socket
import sys
import threading
from collections import deque
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, Protocol

from acpd.providers.base import ModelEvent
from acpd.providers.sse import SSEEvent, SSEParser

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures" / "providers"


class Decoder(Protocol):
    def feed(self, sse: SSEEvent) -> list[ModelEvent]: ...
    def finish(self) -> list[ModelEvent]: ...


def decode_stream(decoder: Decoder, data: bytes) -> list[ModelEvent]:
    """Every event a wire decoder makes of a recorded SSE stream, the end of stream included."""
    events: list[ModelEvent] = []
    for sse in SSEParser().feed(data):
        events.extend(decoder.feed(sse))
    events.extend(decoder.finish())
    return events


def fixture(name: str) -> bytes:
    return (FIXTURES / name).read_bytes()


@dataclass
class Reply:
    status: int = 200
    sse: str | None = None
    """A fixture file name, sent as the event-stream body."""
    body: bytes = b""
    """Used when `sse` is None (an error body, a malformed stream...)."""
    content_type: str = "text/event-stream"
    headers: dict[str, str] = field(default_factory=dict)
    chunk_size: int = 97
    hold: bool = False
    """After the body, keep the connection open (no final chunk) until the client leaves."""


@dataclass
class Recorded:
    method: str
    path: str
    headers: dict[str, str]
    raw: bytes

    @property
    def json(self) -> Any:
        return json.loads(self.raw)


class FakeLLMServer:
    def __init__(self) -> None:
        self.replies: deque[Reply] = deque()
        self.requests: list[Recorded] = []
        self.client_left = threading.Event()
        """Set when a held connection is closed by the client."""
        self.stopping = threading.Event()
        self._lock = threading.Lock()
        self._httpd = _QuietServer(("127.0.0.1", 0), _handler(self))
        self._httpd.daemon_threads = True
        self._thread = threading.Thread(
            target=self._httpd.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True
        )

    @property
    def port(self) -> int:
        return int(self._httpd.server_address[1])

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def queue(self, *replies: Reply) -> None:
        with self._lock:
            self.replies.extend(replies)

    def next_reply(self) -> Reply | None:
        with self._lock:
            return self.replies.popleft() if self.replies else None

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self.stopping.set()
        self._httpd.shutdown()
        self._httpd.server_close()
        self._thread.join(5)


class _QuietServer(ThreadingHTTPServer):
    def handle_error(self, request: Any, client_address: Any) -> None:
        # A client that hangs up mid-response (a cancel, a timeout) is what several tests do
        # on purpose; anything else is still printed.
        if not isinstance(sys.exc_info()[1], ConnectionError):
            super().handle_error(request, client_address)


def _handler(server: FakeLLMServer) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, format: str, *args: Any) -> None:
            pass

        def do_POST(self) -> None:
            length = int(self.headers.get("content-length", "0"))
            raw = self.rfile.read(length)
            headers = {k.lower(): v for k, v in self.headers.items()}
            with server._lock:
                server.requests.append(Recorded("POST", self.path, headers, raw))
            reply = server.next_reply()
            if reply is None:
                reply = Reply(500, body=b'{"error": {"message": "no reply queued"}}',
                              content_type="application/json")
            body = fixture(reply.sse) if reply.sse else reply.body
            self.send_response(reply.status)
            self.send_header("content-type", reply.content_type)
            for name, value in reply.headers.items():
                self.send_header(name, value)
            if reply.status != 200 or reply.content_type != "text/event-stream":
                self.send_header("content-length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)
                return
            self.send_header("transfer-encoding", "chunked")
            self.send_header("cache-control", "no-cache")
            self.end_headers()
            try:
                for piece in _pieces(body, reply.chunk_size):
                    self.wfile.write(b"%x\r\n%s\r\n" % (len(piece), piece))
                    self.wfile.flush()
                if reply.hold:
                    self._hold()
                    return
                self.wfile.write(b"0\r\n\r\n")
                self.wfile.flush()
            except (BrokenPipeError, ConnectionResetError):
                # The client hung up while the body was still going out (it may cancel as
                # soon as it has the first event).
                self.close_connection = True
                server.client_left.set()

        def _hold(self) -> None:
            # Wait for the client to hang up (recv gives b"" or fails); the test asserts it does.
            self.close_connection = True
            sock: socket.socket = self.connection
            sock.settimeout(0.05)
            while not server.stopping.is_set():
                try:
                    if sock.recv(1) == b"":
                        break
                except TimeoutError:
                    continue
                except OSError:
                    break
            else:
                return
            server.client_left.set()

    return Handler


def _pieces(body: bytes, size: int) -> Iterator[bytes]:
    for start in range(0, len(body), size):
        yield body[start : start + size]
