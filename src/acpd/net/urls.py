"""Reading a URL a model sent into the parts a fetch may use, refusing the rest.

Rules: scheme https (http only when a test hook allows it), no userinfo (`@` anywhere in the
authority), a port from the allowlist (the scheme's default when absent), a host that is an
ASCII name of LDH labels (IDNA-encoded first when it is not ASCII), a canonical IPv4 address
or a bracketed IPv6 literal; no whitespace, control characters or backslashes anywhere. The
request is built from these parts alone, so no second parser can read the URL differently.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from urllib.parse import quote, urlsplit

from acpd.net.addresses import BlockedHost, IPAddress, host_address

MAX_URL_CHARS = 4096
_LABEL = re.compile(r"^[a-z0-9_](?:[a-z0-9_-]{0,61}[a-z0-9_])?$")
_BAD_CHARS = re.compile(r"[\x00-\x20\x7f\\]")
_SAFE_TARGET = "/%:@!$&'()*+,;=?~-._"
DEFAULT_PORTS = {"https": 443, "http": 80}
LOCAL_NAMES = ("localhost", "localhost.localdomain", "ip6-localhost", "ip6-loopback")


@dataclass(frozen=True, slots=True)
class Target:
    scheme: str
    host: str
    """As it goes in the Host header and the URL: lower-case ASCII, IPv6 in brackets."""
    port: int
    target: str
    """Path and query, percent-encoded; the fragment is dropped."""
    address: IPAddress | None
    """The host is this IP literal; None for a name."""

    @property
    def hostname(self) -> str:
        """For SNI, certificate checks and resolution: without IPv6 brackets."""
        return self.host[1:-1] if self.host.startswith("[") else self.host

    @property
    def authority(self) -> str:
        default = DEFAULT_PORTS[self.scheme]
        return self.host if self.port == default else f"{self.host}:{self.port}"

    @property
    def url(self) -> str:
        return f"{self.scheme}://{self.authority}{self.target}"


def parse_target(
    url: str, allowed_ports: frozenset[int], *, allow_http: bool = False
) -> Target:
    """The parts of `url` a fetch may use; raises BlockedHost ("blocked url: ...")."""
    if len(url) > MAX_URL_CHARS:
        raise BlockedHost(f"blocked url: longer than {MAX_URL_CHARS} characters")
    if _BAD_CHARS.search(url):
        raise BlockedHost("blocked url: whitespace, control characters or backslashes")
    try:
        parts = urlsplit(url)
    except ValueError as exc:
        raise BlockedHost(f"blocked url: {exc}") from None
    scheme = parts.scheme.lower()
    if scheme != "https" and not (scheme == "http" and allow_http):
        raise BlockedHost(f"blocked url: scheme {scheme or '(none)'!r}; only https is fetched")
    authority = parts.netloc
    if "@" in authority:
        raise BlockedHost("blocked url: credentials (user@) in the URL")
    host_text, port = _split_authority(authority, scheme)
    if port not in allowed_ports:
        allowed = ", ".join(str(p) for p in sorted(allowed_ports)) or "none"
        raise BlockedHost(f"blocked url: port {port} is not allowed (allowed: {allowed})")
    host = _normal_host(host_text)
    address = host_address(host)
    if address is None and (host in LOCAL_NAMES or host.endswith(".localhost")):
        raise BlockedHost(f"blocked address: {host} is the local machine")
    target = quote(parts.path or "/", safe=_SAFE_TARGET)
    if parts.query:
        target += "?" + quote(parts.query, safe=_SAFE_TARGET)
    return Target(scheme, host, port, target, address)


def _split_authority(authority: str, scheme: str) -> tuple[str, int]:
    if authority.startswith("["):
        end = authority.find("]")
        if end < 0:
            raise BlockedHost("blocked url: unclosed IPv6 literal")
        host, rest = authority[: end + 1], authority[end + 1 :]
    else:
        host, _, port_text = authority.partition(":")
        rest = f":{port_text}" if _ else ""
    if not rest:
        return host, DEFAULT_PORTS[scheme]
    port_text = rest[1:]
    if not rest.startswith(":") or not (port_text.isascii() and port_text.isdigit()):
        raise BlockedHost(f"blocked url: bad port {rest!r}")
    port = int(port_text)
    if not 0 < port < 65536:
        raise BlockedHost(f"blocked url: bad port {port}")
    return host, port


def _normal_host(text: str) -> str:
    if not text:
        raise BlockedHost("blocked url: no host")
    if text.startswith("["):
        return text.lower()
    host = text.lower()
    if host.endswith("."):
        host = host[:-1]  # the root label: "localhost." is localhost
    if not host.isascii():
        host = _idna(host)
    labels = host.split(".")
    if len(host) > 253 or not all(_LABEL.match(label) for label in labels):
        raise BlockedHost(f"blocked url: {text[:100]!r} is not a valid host name")
    return host


def _idna(host: str) -> str:
    try:
        import idna

        return idna.encode(host, uts46=True).decode("ascii")
    except Exception:  # any failure of the codec is a host we cannot name safely
        raise BlockedHost(f"blocked url: {host[:100]!r} is not a valid host name") from None
