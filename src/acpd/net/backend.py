"""httpcore's network backend for one hop of a fetch: it connects to checked addresses only.

httpcore hands `connect_tcp` the URL's host name; this backend never resolves it. It refuses
any host or port but the hop's own and connects to the addresses that passed the check, in
order, so a DNS answer that changes after the check cannot move the connection. TLS (SNI and
certificate verification) still uses the host name: httpcore starts it on the stream returned.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import httpcore

    from acpd.net.addresses import IPAddress
    from acpd.net.urls import Target


def _network_backend() -> httpcore.AsyncNetworkBackend:
    import httpcore

    return httpcore.AnyIOBackend()


class PinnedBackend:
    """httpcore's network backend for one hop: `connect_tcp` ignores name resolution and
    connects to the checked addresses, in order, and refuses any other host or port."""

    def __init__(self, target: Target, addresses: list[IPAddress],
                 on_connect: Callable[[str, int], None] | None = None) -> None:
        self.target = target
        self.addresses = addresses
        self.on_connect = on_connect
        self.inner = _network_backend()

    async def connect_tcp(
        self, host: str, port: int, timeout: float | None = None,  # noqa: ASYNC109 (httpcore API)
        local_address: str | None = None, socket_options: Any = None,
    ) -> httpcore.AsyncNetworkStream:
        import httpcore

        if host != self.target.hostname or port != self.target.port:
            raise httpcore.ConnectError(f"refusing to connect to {host}:{port}")
        failure: Exception | None = None
        for address in self.addresses:
            if self.on_connect is not None:
                self.on_connect(str(address), port)
            try:
                return await self.inner.connect_tcp(str(address), port, timeout,
                                                    local_address, socket_options)
            except (httpcore.ConnectError, httpcore.ConnectTimeout) as exc:
                failure = exc
        raise failure or httpcore.ConnectError("no address to connect to")

    async def connect_unix_socket(
        self, path: str, timeout: float | None = None,  # noqa: ASYNC109 (httpcore API)
        socket_options: Any = None,
    ) -> httpcore.AsyncNetworkStream:
        import httpcore

        raise httpcore.ConnectError("unix sockets are never fetched")

    async def sleep(self, seconds: float) -> None:
        await self.inner.sleep(seconds)
