"""The address table and the host reader, one case per class of internal address, and the
cases where Python 3.11's own ipaddress properties would have let the address through."""

from __future__ import annotations

import ipaddress

import pytest

from acpd.net.addresses import BlockedHost, address_problem, host_address, inet_aton

INTERNAL = {
    "0.0.0.0": "this network", "0.1.2.3": "this network", "10.1.2.3": "private",
    "100.64.0.1": "CGNAT", "100.127.255.254": "CGNAT", "127.0.0.1": "loopback",
    "127.255.255.254": "loopback", "169.254.169.254": "link-local", "172.16.0.1": "private",
    "172.31.255.255": "private", "192.0.0.8": "IETF", "192.0.2.1": "documentation",
    "192.88.99.1": "6to4 relay", "192.168.1.1": "private", "198.18.0.1": "benchmarking",
    "198.19.255.255": "benchmarking", "198.51.100.7": "documentation",
    "203.0.113.9": "documentation", "224.0.0.1": "multicast", "239.255.255.250": "multicast",
    "240.0.0.1": "reserved", "255.255.255.255": "reserved",
    "::": "unspecified", "::1": "loopback", "::ffff:127.0.0.1": "IPv4-mapped",
    "::ffff:8.8.8.8": "IPv4-mapped", "::127.0.0.1": "IPv4-compatible",
    "64:ff9b::127.0.0.1": "NAT64 form of 127.0.0.1", "64:ff9b::a9fe:a9fe": "NAT64 form of 169",
    "64:ff9b::10.0.0.1": "NAT64 form of 10", "64:ff9b:1::a00:1": "local-use NAT64",
    "64:ff9b:1::808:808": "local-use NAT64", "2002:7f00:1::": "6to4 form of 127.0.0.1",
    "2002:a9fe:a9fe::1": "6to4 form of 169.254", "2002:6440:1::": "6to4 form of 100.64",
    "2001::1": "Teredo", "2001:0:4136:e378:8000:63bf:3fff:fdd2": "Teredo",
    "2001:db8::1": "documentation", "2001:2::1": "IETF", "2001:10::1": "IETF",
    "3fff::1": "documentation", "fc00::1": "unique local", "fd12:3456::1": "unique local",
    "fe80::1": "link-local", "febf::1": "link-local", "fec0::1": "site-local",
    "feff::1": "site-local", "ff02::1": "multicast", "100::1": "discard", "5f00::1": "SRv6",
    "4000::1": "not global", "::2": "IPv4-compatible",
}
PUBLIC = ["8.8.8.8", "1.1.1.1", "93.184.215.14", "100.63.255.255", "100.128.0.0",
          "172.32.0.1", "198.17.255.255", "198.20.0.0", "223.255.255.255",
          "2606:4700:4700::1111", "2a00:1450:4001::200e", "64:ff9b::808:808",
          "2002:808:808::1", "2001:4860:4860::8888"]


@pytest.mark.parametrize(("text", "why"), INTERNAL.items())
def test_every_internal_address_is_refused_with_its_reason(text: str, why: str) -> None:
    problem = address_problem(ipaddress.ip_address(text))
    assert problem is not None and why.lower() in problem.lower(), (text, problem)


@pytest.mark.parametrize("text", PUBLIC)
def test_public_addresses_pass(text: str) -> None:
    assert address_problem(ipaddress.ip_address(text)) is None


def test_scoped_addresses_are_refused() -> None:
    assert address_problem(ipaddress.ip_address("fe80::1%eth0")) is not None
    assert address_problem(ipaddress.ip_address("2606:4700::1%1")) == "scoped address"


@pytest.mark.parametrize("text", ["100.64.0.1", "64:ff9b::7f00:1", "2002:7f00:1::", "fec0::1"])
def test_cases_python_gets_wrong_are_refused(text: str) -> None:
    address = ipaddress.ip_address(text)
    # Python 3.11 calls each of these global or not private; ours refuses them all.
    assert address.is_global or not address.is_private
    assert address_problem(address) is not None


@pytest.mark.parametrize(("host", "means"), [
    ("2130706433", "127.0.0.1"), ("0x7f000001", "127.0.0.1"), ("017700000001", "127.0.0.1"),
    ("127.1", "127.0.0.1"), ("127.0.1", "127.0.0.1"), ("0x7f.1", "127.0.0.1"),
    ("0177.0.0.1", "127.0.0.1"), ("0x7f.0x0.0x0.0x1", "127.0.0.1"), ("0", "0.0.0.0"),
    ("0x", "0.0.0.0"), ("10.0x10.1", "10.16.0.1"), ("3232235777", "192.168.1.1"),
    ("0251.0376.0251.0376", "169.254.169.254"), ("127.000.000.001", "127.0.0.1"),
    ("08.8.8.8", None), ("1.2.3.4.5", None), ("example.123", None), ("256.1.1.1", None),
    ("1.2.3.0x", "1.2.3.0"), ("0x100.1", None), ("4294967296", None), ("1.16777216", None),
])
def test_numeric_hosts_read_like_inet_aton_and_only_canonical_ones_pass(
    host: str, means: str | None
) -> None:
    assert (str(inet_aton(host)) if inet_aton(host) else None) == means
    with pytest.raises(BlockedHost) as caught:
        host_address(host)
    message = str(caught.value)
    assert message.startswith("blocked url")
    if means is not None:
        assert means in message


def test_canonical_hosts_and_names() -> None:
    assert str(host_address("8.8.8.8")) == "8.8.8.8"
    assert host_address("example.com") is None
    assert host_address("1x.example") is None  # the last label is a name, not a number
    assert str(host_address("[2606:4700::1111]")) == "2606:4700::1111"
    with pytest.raises(BlockedHost):
        host_address("[not-an-address]")
