"""Loopback HTTPS test servers (a trustme CA made per run) that count their connections.

Routes: /page (HTML), /text, /json, /bin (PNG bytes), /big?n=BYTES, /bomb (gzip of 64 MB of
zeros), /gzip (a gzipped page), /slow (sleeps), /status?code=N, /headers (the request's
headers as JSON), /redirect?to=URL&code=302, /chain?n=K (K redirects, then /page).
"""

from __future__ import annotations

import contextlib
import gzip
import json
import socket
import ssl
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, urlsplit

import trustme

PAGE = """<!doctype html><html><head><title>Test page</title><style>p{}</style></head>
<body><nav>menu</nav><main><h1>Hello</h1><p>First <b>bold</b> paragraph with
<a href="/other">a link</a>.</p><ul><li class="item">one</li><li class="item">two</li></ul>
<script>secret()</script><p class="note" data-x="7">Note</p></main></body></html>"""
BOMB = gzip.compress(b"\0" * (64 << 20), compresslevel=9)


class CertAuthority:
    def __init__(self, tmp: Any) -> None:
        self.ca = trustme.CA()
        self.cert = self.ca.issue_cert("site.test", "rebind.test", "localhost", "127.0.0.1",
                                       "127.0.0.2", "127.0.0.3", "::1")
        self.ca_file = str(tmp / "ca.pem")
        self.ca.cert_pem.write_to_path(self.ca_file)
        self.sni: list[str | None] = []

    def server_context(self) -> ssl.SSLContext:
        ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        self.cert.configure_cert(ctx)
        ctx.sni_callback = lambda _sock, name, _ctx: self.sni.append(name)  # type: ignore
        return ctx


class _Handler(BaseHTTPRequestHandler):
    server: LoopbackServer

    def log_message(self, format: str, *args: Any) -> None:
        return

    def do_GET(self) -> None:
        parts = urlsplit(self.path)
        query = {k: v[0] for k, v in parse_qs(parts.query).items()}
        self.server.paths.append(self.path)
        route = getattr(self, "route_" + parts.path.strip("/").replace("-", "_"), None)
        if route is None:
            self.reply(404, "text/plain", b"not found")
        else:
            route(query)

    def reply(self, status: int, kind: str, body: bytes, **headers: str) -> None:
        self.send_response(status)
        self.send_header("Content-Type", kind)
        self.send_header("Content-Length", str(len(body)))
        for name, value in headers.items():
            self.send_header(name.replace("_", "-"), value)
        self.end_headers()
        with contextlib.suppress(OSError):  # the client stopped reading at its cap
            self.wfile.write(body)

    def route_page(self, q: dict[str, str]) -> None:
        self.reply(200, "text/html; charset=utf-8", PAGE.encode())

    def route_other(self, q: dict[str, str]) -> None:
        self.reply(200, "text/html", b"<p>other page</p>")

    def route_text(self, q: dict[str, str]) -> None:
        self.reply(200, "text/plain", b"plain text body")

    def route_json(self, q: dict[str, str]) -> None:
        self.reply(200, "application/json", b'{"a": 1}')

    def route_bin(self, q: dict[str, str]) -> None:
        self.reply(200, "image/png", b"\x89PNG\r\n\x1a\n" + bytes(100))

    def route_big(self, q: dict[str, str]) -> None:
        self.reply(200, "text/plain", b"a" * int(q.get("n", "100000")))

    def route_bomb(self, q: dict[str, str]) -> None:
        self.reply(200, "text/plain", BOMB, Content_Encoding="gzip")

    def route_gzip(self, q: dict[str, str]) -> None:
        self.reply(200, "text/html", gzip.compress(PAGE.encode()), Content_Encoding="gzip")

    def route_slow(self, q: dict[str, str]) -> None:
        time.sleep(float(q.get("s", "5")))
        self.reply(200, "text/plain", b"late")

    def route_status(self, q: dict[str, str]) -> None:
        self.reply(int(q["code"]), "text/plain", b"status page")

    def route_headers(self, q: dict[str, str]) -> None:
        self.reply(200, "application/json", json.dumps(dict(self.headers.items())).encode())

    def route_redirect(self, q: dict[str, str]) -> None:
        self.reply(int(q.get("code", "302")), "text/plain", b"", Location=q["to"])

    def route_chain(self, q: dict[str, str]) -> None:
        n = int(q["n"])
        to = f"/chain?n={n - 1}" if n > 1 else "/page"
        self.reply(302, "text/plain", b"", Location=to)


class LoopbackServer(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self, host: str, port: int, ctx: ssl.SSLContext | None) -> None:
        self.address_family = socket.AF_INET6 if ":" in host else socket.AF_INET
        super().__init__((host, port), _Handler)
        self.ctx = ctx
        self.connections = 0
        self.paths: list[str] = []
        self.host = host

    def get_request(self) -> tuple[Any, Any]:
        sock, addr = super().get_request()
        self.connections += 1
        if self.ctx is not None:
            sock = self.ctx.wrap_socket(sock, server_side=True, do_handshake_on_connect=False)
        return sock, addr

    def handle_error(self, request: Any, client_address: Any) -> None:
        return  # failed handshakes (an untrusted client) are expected in some tests

    @property
    def port(self) -> int:
        return int(self.server_address[1])


@contextmanager
def serving(host: str = "127.0.0.1", port: int = 0, ctx: ssl.SSLContext | None = None
            ) -> Iterator[LoopbackServer]:
    server = LoopbackServer(host, port, ctx)
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05},
                              daemon=True)
    thread.start()
    try:
        yield server
    finally:
        server.shutdown()
        server.server_close()
        thread.join(5)
