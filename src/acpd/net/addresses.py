"""Which IP addresses a fetch may reach: public unicast only, decided by explicit tables.

Rules (Python 3.11's `is_global`/`is_private` are not used: they call 100.64/10 non-private,
NAT64 and 6to4 forms of 127.0.0.1 global, and fec0::/10 global):
  - IPv4: refused when inside any block of `V4_BLOCKS` (the IANA special-purpose registry's
    non-global entries: this network, private, CGNAT, loopback, link-local, IETF assignments,
    documentation, 6to4 relay anycast, benchmarking, multicast, reserved, broadcast).
  - IPv6: only 2000::/3 (global unicast) can pass, and inside it the blocks of `V6_BLOCKS`
    (Teredo and the rest of 2001::/23, documentation) are refused;
    everything outside 2000::/3 is refused (loopback, unspecified, IPv4-mapped/compatible,
    ULA fc00::/7, link-local, site-local fec0::/10, multicast, discard, SRv6) except NAT64.
  - Embedded IPv4: 64:ff9b::/96 (NAT64) and 2002::/16 (6to4) are judged by the IPv4 address
    inside them. 64:ff9b:1::/48 (local-use NAT64) is refused outright.
  - An address with a zone (`fe80::1%eth0`) is refused.

`host_address(host)` reads a URL host the way getaddrinfo would: any host whose last label is
numeric (`2130706433`, `0x7f.1`, `127.1`, `0177.0.0.1`) is an IPv4 address in inet_aton's
syntax, and only the canonical dotted quad is accepted; the others are refused (saying what
address they spell), so no encoding can slip an internal address past the table.
"""

from __future__ import annotations

import ipaddress
from ipaddress import IPv4Address, IPv4Network, IPv6Address, IPv6Network

IPAddress = IPv4Address | IPv6Address


class BlockedHost(ValueError):
    """A host or address a fetch may not reach; the message says why."""


def _v4(*entries: tuple[str, str]) -> tuple[tuple[IPv4Network, str], ...]:
    return tuple((IPv4Network(net), why) for net, why in entries)


def _v6(*entries: tuple[str, str]) -> tuple[tuple[IPv6Network, str], ...]:
    return tuple((IPv6Network(net), why) for net, why in entries)


V4_BLOCKS = _v4(
    ("0.0.0.0/8", "this network"),
    ("10.0.0.0/8", "private"),
    ("100.64.0.0/10", "shared address space (CGNAT)"),
    ("127.0.0.0/8", "loopback"),
    ("169.254.0.0/16", "link-local"),
    ("172.16.0.0/12", "private"),
    ("192.0.0.0/24", "IETF protocol assignments"),
    ("192.0.2.0/24", "documentation"),
    ("192.88.99.0/24", "6to4 relay anycast"),
    ("192.168.0.0/16", "private"),
    ("198.18.0.0/15", "benchmarking"),
    ("198.51.100.0/24", "documentation"),
    ("203.0.113.0/24", "documentation"),
    ("224.0.0.0/4", "multicast"),
    ("240.0.0.0/4", "reserved"),
)

GLOBAL_UNICAST = IPv6Network("2000::/3")
NAT64 = IPv6Network("64:ff9b::/96")
SIX_TO_FOUR = IPv6Network("2002::/16")

V6_OUTSIDE = _v6(
    ("::/128", "unspecified"),
    ("::1/128", "loopback"),
    ("::ffff:0:0/96", "IPv4-mapped"),
    ("::/96", "IPv4-compatible"),
    ("64:ff9b:1::/48", "local-use NAT64"),
    ("100::/64", "discard-only"),
    ("5f00::/16", "SRv6 SIDs"),
    ("fc00::/7", "unique local"),
    ("fe80::/10", "link-local"),
    ("fec0::/10", "site-local"),
    ("ff00::/8", "multicast"),
)
"""Names for the common addresses outside 2000::/3 (all of which are refused anyway)."""

V6_BLOCKS = _v6(
    ("2001::/32", "Teredo"),
    ("2001::/23", "IETF protocol assignments"),
    ("2001:db8::/32", "documentation"),
    ("3fff::/20", "documentation"),
)


def address_problem(address: IPAddress) -> str | None:
    """Why `address` is not public, or None when a fetch may connect to it."""
    if isinstance(address, IPv4Address):
        return _v4_problem(address)
    return _v6_problem(address)


def _v4_problem(address: IPv4Address) -> str | None:
    for net, why in V4_BLOCKS:
        if address in net:
            return why
    return None


def _v6_problem(address: IPv6Address) -> str | None:
    if address.scope_id:
        return "scoped address"
    if address in NAT64:
        inner = IPv4Address(int(address) & 0xFFFFFFFF)
        found = _v4_problem(inner)
        return None if found is None else f"NAT64 form of {inner} ({found})"
    if address in SIX_TO_FOUR:
        inner = IPv4Address((int(address) >> 80) & 0xFFFFFFFF)
        found = _v4_problem(inner)
        return None if found is None else f"6to4 form of {inner} ({found})"
    if address not in GLOBAL_UNICAST:
        for net, why in V6_OUTSIDE:
            if address in net:
                return why
        return "not global unicast"
    # The more specific blocks first: 2001:db8::/32 says "documentation", not "IETF".
    for net, why in sorted(V6_BLOCKS, key=lambda entry: -entry[0].prefixlen):
        if address in net:
            return why
    return None


def check_address(address: IPAddress, host: str) -> None:
    """Raise BlockedHost when `address` (an answer for `host`) is not public."""
    problem = address_problem(address)
    if problem is not None:
        shown = host if host == str(address) else f"{host} resolves to {address}"
        raise BlockedHost(f"blocked address: {shown} ({problem})")


# --- reading a URL's host ---------------------------------------------------------------------


def host_address(host: str) -> IPAddress | None:
    """The IP address a URL host spells, or None for a name (to be resolved).

    `host` is lower-case ASCII without brackets' content check: an IPv6 literal comes with
    its brackets. Raises BlockedHost for a numeric host that is not a canonical address.
    """
    if host.startswith("["):
        if not host.endswith("]"):
            raise BlockedHost(f"blocked url: malformed IPv6 literal {host!r}")
        try:
            return IPv6Address(host[1:-1])
        except ValueError:
            raise BlockedHost(f"blocked url: malformed IPv6 literal {host!r}") from None
    labels = host.split(".")
    if not _numeric(labels[-1]):
        return None
    spelled = inet_aton(host)
    if spelled is None:
        raise BlockedHost(f"blocked url: {host!r} is neither a name nor an IPv4 address")
    if str(spelled) != host:
        raise BlockedHost(
            f"blocked url: non-canonical numeric host {host!r} (it means {spelled}); "
            "write the address as four decimal numbers"
        )
    return spelled


def _numeric(label: str) -> bool:
    """WHATWG's "ends in a number": digits, or 0x followed by hex digits (possibly none)."""
    if label.isdigit() and label.isascii():
        return True
    if label[:2] in ("0x", "0X"):
        rest = label[2:]
        return all(c in "0123456789abcdefABCDEF" for c in rest)
    return False


def inet_aton(text: str) -> IPv4Address | None:
    """The address glibc's inet_aton reads in `text` (1 to 4 parts, each decimal, 0-octal
    or 0x-hex; the last part fills the remaining bytes), or None when it reads none."""
    parts = text.split(".")
    if not 1 <= len(parts) <= 4:
        return None
    values: list[int] = []
    for part in parts:
        value = _aton_part(part)
        if value is None:
            return None
        values.append(value)
    *head, last = values
    if any(v > 0xFF for v in head) or last >= 1 << (8 * (4 - len(head))):
        return None
    number = last
    for index, value in enumerate(head):
        number |= value << (8 * (3 - index))
    return IPv4Address(number)


def _aton_part(part: str) -> int | None:
    """One part in strtoul's base 0, digits only (no sign, space or underscore)."""
    if part[:2] in ("0x", "0X"):
        digits, base, allowed = part[2:], 16, "0123456789abcdefABCDEF"
    elif part.startswith("0"):
        digits, base, allowed = part[1:], 8, "01234567"
    else:
        digits, base, allowed = part, 10, "0123456789"
    if not part or not all(c in allowed for c in digits):
        return None
    return int(digits, base) if digits else 0


def parse_ip(text: str) -> IPAddress:
    """An address from a resolver's answer (raises ValueError)."""
    return ipaddress.ip_address(text)
