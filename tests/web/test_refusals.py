"""Every internal target, in every spelling, refused before any connection is attempted.

The fetcher here has a stub resolver (no real DNS query leaves the process) and the audit hook
of conftest.py records any socket connect: each refusal must come with none at all.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pytest

from acpd.net.client import FetchSettings, NetHooks, SafeFetcher
from acpd.tools.errors import ErrorCategory, ToolError

pytestmark = pytest.mark.anyio

ANSWERS = {
    "ten.test": ["10.0.0.1"],
    "meta.test": ["169.254.169.254"],
    "cgnat.test": ["100.64.1.1"],
    "bench.test": ["198.18.0.5"],
    "nat64.test": ["64:ff9b::a9fe:a9fe"],
    "sixtofour.test": ["2002:0a00:0001::1"],
    "teredo.test": ["2001:0:4136:e378:8000:63bf:3fff:fdd2"],
    "mapped.test": ["::ffff:10.0.0.1"],
    "ula.test": ["fd00::1"],
    "sitelocal.test": ["fec0::1"],
    "loop6.test": ["::1"],
    # One public answer beside an internal one: the whole name is refused.
    "mixed.test": ["8.8.8.8", "127.0.0.1"],
    "mixed6.test": ["2606:4700:4700::1111", "fe80::1"],
}
LITERALS = [
    "https://127.0.0.1/", "https://2130706433/", "https://0x7f.1/", "https://127.1/",
    "https://0177.0.0.1/", "https://0x7f000001/", "https://017700000001/",
    "https://127.0.0.1./", "https://0/", "https://0.0.0.0/", "https://10.0.0.1/",
    "https://100.64.0.1/", "https://198.18.0.1/", "https://169.254.169.254/latest/meta-data",
    "https://0251.0376.0251.0376/", "https://192.168.0.1:443/", "https://224.0.0.1/",
    "https://255.255.255.255/", "https://192.0.2.1/", "https://[::1]/", "https://[::]/",
    "https://[::ffff:127.0.0.1]/", "https://[::ffff:7f00:1]/", "https://[64:ff9b::127.0.0.1]/",
    "https://[64:ff9b:1::a00:1]/", "https://[2002:7f00:1::1]/",
    "https://[2001:0:4136:e378:8000:63bf:3fff:fdd2]/", "https://[fe80::1%25eth0]/",
    "https://[fd00::1]/", "https://[fec0::1]/", "https://[ff02::1]/", "https://localhost/",
    "https://LOCALHOST./", "https://api.localhost/", "https://ip6-localhost/",
    "https://1.2.3.4.5/", "https://example.123/", "https://256.0.0.1/", "https://08.8.8.8/",
    # Unicode that IDNA maps to ASCII digits, dots or names: judged after the mapping.
    "https://\u2460\u2461\u2466.0.0.1/", "https://\uff11\uff12\uff17.\uff10.\uff10.\uff11/",
    "https://127\u30020\u30020\u30021/", "https://\u24db\u24de\u24d2\u24d0\u24db\u24d7"
    "\u24de\u24e2\u24e3/", "https://2130706433./", "https://0X7F.1/",
    "https://%31%32%37.0.0.1/", "https://127.0.0.1%2f/", "https://[::1]x/",
]
BAD_URLS = [
    "http://8.8.8.8/", "ftp://example.com/", "file:///etc/passwd", "gopher://x/",
    "https://user:pw@example.com/", "https://user@example.com/",
    "https://example.com@127.0.0.1/", "https://example.com\\@127.0.0.1/",
    "https://example.com:8443/", "https://example.com:0/", "https://example.com:+443/",
    "https://example.com:99999/", "https://exa mple.com/", "https://example.com/\r\nX: y",
    "https:///path", "//example.com/", "example.com", "https://[::1/", "https://ex_ample..com/",
    "https://" + "a" * 5000 + ".com/", "javascript:alert(1)", "",
]


class StubResolver:
    def __init__(self, answers: dict[str, Sequence[str]]) -> None:
        self.answers = answers
        self.asked: list[str] = []

    async def __call__(self, host: str, port: int) -> Sequence[str]:
        self.asked.append(host)
        if host not in self.answers:
            raise OSError(f"no test answer for {host}")
        return self.answers[host]


def fetcher(resolver: StubResolver, **settings: Any) -> SafeFetcher:
    return SafeFetcher(FetchSettings(timeout=5, **settings), NetHooks(resolver=resolver))


async def refused(fetch: SafeFetcher, url: str) -> str:
    with pytest.raises(ToolError) as caught:
        await fetch.get(url)
    assert caught.value.category is ErrorCategory.POLICY_BLOCKED, caught.value.message
    return caught.value.message


@pytest.mark.parametrize("url", LITERALS)
async def test_internal_literals_are_refused_without_dns_or_connect(
    url: str, connects: list[Any]
) -> None:
    resolver = StubResolver({})
    message = await refused(fetcher(resolver), url)
    assert message.startswith(("blocked address", "blocked url")), message
    assert resolver.asked == [] and connects == []


@pytest.mark.parametrize("name", sorted(ANSWERS))
async def test_names_with_any_internal_answer_are_refused_without_connect(
    name: str, connects: list[Any]
) -> None:
    resolver = StubResolver(ANSWERS)
    message = await refused(fetcher(resolver), f"https://{name}/path?q=1")
    assert message.startswith(f"blocked address: {name} resolves to "), message
    assert resolver.asked == [name] and connects == []


@pytest.mark.parametrize("url", BAD_URLS)
async def test_urls_outside_the_rules_are_refused_before_dns(
    url: str, connects: list[Any]
) -> None:
    resolver = StubResolver({"example.com": ["8.8.8.8"]})
    message = await refused(fetcher(resolver), url)
    assert message.startswith("blocked url"), message
    assert resolver.asked == [] and connects == []


async def test_the_port_allowlist_is_configurable(connects: list[Any]) -> None:
    resolver = StubResolver({"ten.test": ["10.0.0.1"]})
    wide = fetcher(resolver, allowed_ports=frozenset({443, 8443}))
    message = await refused(wide, "https://ten.test:8443/")
    assert message.startswith("blocked address")  # the port passed, the address did not
    assert connects == []


async def test_test_hooks_only_mark_loopback_public() -> None:
    import ipaddress

    with pytest.raises(ValueError, match="loopback"):
        NetHooks(public=(ipaddress.ip_network("10.0.0.0/8"),))
    with pytest.raises(ValueError, match="loopback"):
        NetHooks.from_env({"ACPD_TEST_NET_HOOKS": '{"public": ["0.0.0.0/0"]}'})


async def test_an_unresolvable_name_is_a_network_error(connects: list[Any]) -> None:
    with pytest.raises(ToolError) as caught:
        await fetcher(StubResolver({})).get("https://nowhere.test/")
    assert caught.value.category is ErrorCategory.NETWORK_ERROR
    assert connects == []
