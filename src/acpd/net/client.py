"""An HTTPS GET that cannot be steered to an internal address (the fetch tools' client).

Per hop: parse and check the URL (acpd.net.urls) -> resolve the host once -> refuse when ANY
answer is not public (acpd.net.addresses) -> connect, through our own httpcore network
backend, to those checked addresses only (the host name is never resolved again, so a DNS
answer that changes between check and connect cannot move the connection) -> TLS with SNI and
certificate verification on the host name -> GET. Redirects are followed by hand, at most
`max_redirects`, each hop checked again from the start; https -> http is refused. The whole
fetch runs under one `timeout`; the body is streamed and cut at `max_body_bytes` (after
decoding gzip/deflate, so a small compressed body cannot expand without bound).

Every refusal raises ToolError(PolicyBlocked) whose message starts with "blocked url" or
"blocked address", before any connection is attempted for that hop. No proxy from the
environment is used (httpcore reads none): a proxy would connect to whatever it resolves.

Test hooks (`NetHooks`) can stand in for the resolver, count loopback networks as public and
allow plain http; they accept loopback networks only, so no hook opens a real network.
"""

from __future__ import annotations

import logging
import socket
import zlib
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import partial
from typing import TYPE_CHECKING, Any, cast
from urllib.parse import urljoin

import anyio
import anyio.to_thread

from acpd.net.addresses import BlockedHost, IPAddress, check_address, parse_ip
from acpd.net.backend import PinnedBackend
from acpd.net.settings import FetchSettings, NetHooks
from acpd.net.static import check_static
from acpd.net.urls import Target
from acpd.tools.errors import ErrorCategory, ToolError, classify_exception, http_error

if TYPE_CHECKING:
    import ssl

    import httpcore

log = logging.getLogger("acpd.net")
__all__ = ["FetchResult", "FetchSettings", "NetHooks", "SafeFetcher", "blocked"]

REDIRECTS = frozenset({301, 302, 303, 307, 308})


@dataclass(slots=True)
class FetchResult:
    url: str
    final_url: str
    status: int
    headers: dict[str, str]
    body: bytes
    truncated: bool
    redirects: list[str] = field(default_factory=list)

    @property
    def content_type(self) -> str:
        return self.headers.get("content-type", "").split(";")[0].strip().lower()

    @property
    def charset(self) -> str | None:
        for part in self.headers.get("content-type", "").split(";")[1:]:
            key, _, value = part.strip().partition("=")
            if key.lower() == "charset" and value:
                return value.strip('"').strip()
        return None


def blocked(exc: BlockedHost) -> ToolError:
    return ToolError(ErrorCategory.POLICY_BLOCKED, str(exc))


class SafeFetcher:
    def __init__(self, settings: FetchSettings | None = None, hooks: NetHooks | None = None):
        self.settings = settings or FetchSettings()
        self.hooks = hooks or NetHooks()
        self._ssl: ssl.SSLContext | None = None

    async def check(self, url: str) -> tuple[Target, list[IPAddress]]:
        """The checked target of `url` and the addresses it may connect to; raises
        ToolError: PolicyBlocked for a refused URL or address, NetworkError when the name
        does not resolve. Connects nowhere."""
        try:
            target = check_static(url, self.settings, self.hooks)
            if target.address is not None:
                return target, [target.address]
            answers = await self._resolve(target.hostname, target.port)
            for address in answers:
                self._check(address, target.hostname)
            if target.scheme == "http" and not all(map(self.hooks.counts_public, answers)):
                raise BlockedHost("blocked url: plain http is for loopback test servers only")
        except BlockedHost as exc:
            raise blocked(exc) from None
        return target, answers

    def _check(self, address: IPAddress, host: str) -> None:
        if not self.hooks.counts_public(address):
            check_address(address, host)

    async def _resolve(self, host: str, port: int) -> list[IPAddress]:
        try:
            if self.hooks.resolver is not None:
                texts = list(await self.hooks.resolver(host, port))
            else:
                infos = await anyio.to_thread.run_sync(
                    partial(socket.getaddrinfo, host, port, type=socket.SOCK_STREAM,
                            proto=socket.IPPROTO_TCP),
                    abandon_on_cancel=True,
                )
                texts = [str(info[4][0]) for info in infos]
            found = list(dict.fromkeys(parse_ip(t) for t in texts))
        except (OSError, ValueError) as exc:
            raise ToolError(ErrorCategory.NETWORK_ERROR,
                            f"could not resolve {host}: {exc}") from None
        if not found:
            raise ToolError(ErrorCategory.NETWORK_ERROR, f"could not resolve {host}: no answer")
        return found

    async def get(self, url: str, accept: str = "*/*") -> FetchResult:
        """GET `url`, following redirects; raises ToolError (see the module docstring)."""
        try:
            with anyio.fail_after(self.settings.timeout):
                return await self._get(url, accept)
        except TimeoutError:
            raise ToolError(ErrorCategory.TIMEOUT,
                            f"fetching {url[:200]} took longer than {self.settings.timeout:g} s"
                            ) from None

    async def _get(self, url: str, accept: str) -> FetchResult:
        current = url
        redirects: list[str] = []
        while True:
            target, addresses = await self.check(current)
            response = await self._hop(target, addresses, accept)
            location = response.headers.get("location")
            if response.status not in REDIRECTS or not location:
                response.url, response.redirects = url, redirects
                if response.status >= 400:
                    reason = f"{response.final_url}"
                    raise http_error(response.status, reason)
                return response
            if len(redirects) >= self.settings.max_redirects:
                raise ToolError(ErrorCategory.PERMANENT_FAILURE,
                                f"more than {self.settings.max_redirects} redirects "
                                f"(last to {location[:200]})")
            following = urljoin(target.url, location.strip())
            if target.scheme == "https" and not following.lower().startswith("https:"):
                raise ToolError(ErrorCategory.POLICY_BLOCKED,
                                f"blocked url: redirect from https to {following[:200]}")
            redirects.append(following)
            current = following

    async def _hop(self, target: Target, addresses: list[IPAddress], accept: str
                   ) -> FetchResult:
        import httpcore

        backend = PinnedBackend(target, addresses, self.hooks.on_connect)
        headers = [
            (b"Host", target.authority.encode("ascii")),
            (b"User-Agent", self.settings.user_agent.encode("ascii", "replace")),
            (b"Accept", accept.encode("ascii")),
            (b"Accept-Encoding", b"gzip, deflate"),
            (b"Connection", b"close"),
        ]
        request_url = httpcore.URL(scheme=target.scheme.encode(),
                                   host=target.hostname.encode("ascii"),
                                   port=target.port, target=target.target.encode("ascii"))
        t = self.settings.timeout
        extensions: dict[str, Any] = {
            "timeout": {"connect": t, "read": t, "write": t, "pool": t},
            "sni_hostname": target.hostname,
        }
        ctx = await self.ssl_context() if target.scheme == "https" else None
        try:
            async with httpcore.AsyncConnectionPool(
                ssl_context=ctx, network_backend=cast(Any, backend), max_connections=1,
            ) as pool, pool.stream(b"GET", request_url, headers=headers,
                                   extensions=extensions) as response:
                fields = {k.decode("latin-1").lower(): v.decode("latin-1")
                          for k, v in response.headers}
                if response.status in REDIRECTS:
                    body, truncated = b"", False
                else:
                    body, truncated = await self._read(response, fields)
        except ToolError:
            raise
        except (httpcore.TimeoutException, TimeoutError) as exc:
            raise ToolError(ErrorCategory.TIMEOUT, f"{target.url[:200]}: {exc}") from None
        except Exception as exc:  # a transport failure of any kind: classified, never raised
            # A certificate that does not verify will not verify on a retry either.
            category = ErrorCategory.PERMANENT_FAILURE if _is_tls(exc) else classify_exception(exc)
            raise ToolError(category, f"{target.url[:200]}: {type(exc).__name__}: "
                            f"{str(exc)[:300]}") from None
        return FetchResult(target.url, target.url, response.status, fields, body, truncated)

    async def _read(self, response: httpcore.Response, headers: dict[str, str]
                    ) -> tuple[bytes, bool]:
        """The body, decoded, at most max_body_bytes; True when more was cut off."""
        limit = self.settings.max_body_bytes
        decoder = _decoder(headers.get("content-encoding", "identity"))
        chunks: list[bytes] = []
        size = raw = 0
        async for chunk in response.aiter_stream():
            raw += len(chunk)
            data = decoder(chunk, limit - size + 1)
            chunks.append(data)
            size += len(data)
            if size > limit or raw > limit:
                body = b"".join(chunks)
                return body[:limit], True
        return b"".join(chunks), False

    async def ssl_context(self) -> ssl.SSLContext:
        """Certificates verified on the host name (certifi's bundle, plus `ca_file`); built
        once, off the event loop (loading the bundle takes tens of milliseconds)."""
        if self._ssl is None:
            self._ssl = await anyio.to_thread.run_sync(self._build_ssl)
        return self._ssl

    def _build_ssl(self) -> ssl.SSLContext:
        import ssl

        import certifi

        ctx = ssl.create_default_context(cafile=certifi.where())
        if self.settings.ca_file:
            try:
                ctx.load_verify_locations(cafile=self.settings.ca_file)
            except (OSError, ssl.SSLError) as exc:
                raise ToolError(ErrorCategory.PERMANENT_FAILURE,
                                f"[tools.web] ca_file cannot be used: {exc}") from None
        return ctx


def _is_tls(exc: BaseException) -> bool:
    import ssl

    seen: BaseException | None = exc
    for _ in range(5):
        if seen is None:
            return False
        if isinstance(seen, ssl.SSLError):
            return True
        seen = seen.__cause__ or seen.__context__
    return False


Decoder = Callable[[bytes, int], bytes]


def _decoder(encoding: str) -> Decoder:
    """Decode one chunk into at most `room` bytes (a bomb stops at the cap)."""
    encoding = encoding.strip().lower()
    if encoding in ("", "identity"):
        return lambda chunk, room: chunk
    if encoding in ("gzip", "x-gzip", "deflate"):
        wbits = 16 + zlib.MAX_WBITS if encoding != "deflate" else zlib.MAX_WBITS
        inflater = zlib.decompressobj(wbits)

        def decode(chunk: bytes, room: int) -> bytes:
            try:
                return inflater.decompress(chunk, max(room, 1))
            except zlib.error as exc:
                raise ToolError(ErrorCategory.PERMANENT_FAILURE,
                                f"the body is not valid {encoding}: {exc}") from None

        return decode
    raise ToolError(ErrorCategory.PERMANENT_FAILURE,
                    f"unsupported content-encoding {encoding[:40]!r}")
