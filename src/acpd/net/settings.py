"""What a fetch may do (FetchSettings) and the test-only hooks (NetHooks): no I/O here.

Kept apart from acpd.net.client so that registering the web tools at start-up costs nothing
beyond these two classes; the client is imported on the first fetch.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from ipaddress import IPv4Network, IPv6Network, ip_network
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from acpd.net.addresses import IPAddress

log = logging.getLogger("acpd.net")

HOOKS_ENV = "ACPD_TEST_NET_HOOKS"
LOOPBACK = (IPv4Network("127.0.0.0/8"), IPv6Network("::1/128"))
Resolver = Callable[[str, int], Awaitable[Sequence[str]]]


@dataclass(frozen=True, slots=True)
class FetchSettings:
    timeout: float = 30.0
    """Seconds for the whole fetch, redirects included."""
    max_body_bytes: int = 2 * 1024 * 1024
    allowed_ports: frozenset[int] = frozenset({443})
    max_redirects: int = 3
    user_agent: str = "acpd-fetch/0.1"
    ca_file: str | None = None
    """Extra trusted CA certificates (PEM), besides the certifi bundle."""


@dataclass(frozen=True, slots=True)
class NetHooks:
    """Test-only loosening. `public`: loopback networks to count as public; `resolver`:
    answers instead of getaddrinfo; `allow_http`: plain http, to those loopback addresses
    only; `on_connect(ip, port)`: told before every connect."""

    public: tuple[IPv4Network | IPv6Network, ...] = ()
    resolver: Resolver | None = None
    allow_http: bool = False
    on_connect: Callable[[str, int], None] | None = None

    def __post_init__(self) -> None:
        for net in self.public:
            if not any(net.version == lo.version and net.subnet_of(lo)  # type: ignore[arg-type]
                       for lo in LOOPBACK):
                raise ValueError(f"test hooks may only mark loopback networks public, not {net}")

    def counts_public(self, address: IPAddress) -> bool:
        return any(address in net for net in self.public)

    @classmethod
    def from_env(cls, environ: dict[str, str] | None = None) -> NetHooks | None:
        """`ACPD_TEST_NET_HOOKS={"public": ["127.0.0.0/8"], "hosts": {"a.test": ["127.0.0.1"]},
        "allow_http": false}`, for end-to-end tests of the daemon; None when unset. Raises
        ValueError for a malformed value (a test must not silently run without its hooks)."""
        import json

        raw = (environ if environ is not None else os.environ).get(HOOKS_ENV)
        if not raw:
            return None
        data = json.loads(raw)
        hosts: dict[str, list[str]] = {k.lower(): list(v) for k, v in data.get("hosts", {}).items()}

        async def resolve(host: str, port: int) -> Sequence[str]:
            if host in hosts:
                return hosts[host]
            raise OSError(f"test hooks: no answer for {host}")

        log.warning("network test hooks are active (%s): fetch loopback test servers", HOOKS_ENV)
        return cls(tuple(ip_network(n) for n in data.get("public", [])),
                   resolve, bool(data.get("allow_http", False)))
