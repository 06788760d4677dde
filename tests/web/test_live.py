"""The fetcher against loopback HTTPS servers: TLS on the host name, redirects re-checked,
rebinding, caps, timeouts, content types. Names resolve through a stub; the hook that counts
an address as public is given only the test server's own loopback address."""

from __future__ import annotations

import ipaddress
import json
from collections.abc import Sequence
from typing import Any

import anyio
import pytest

from acpd.net.client import FetchSettings, NetHooks, SafeFetcher
from acpd.tools.errors import ErrorCategory, ToolError
from tests.web.server import CertAuthority, LoopbackServer, serving

pytestmark = pytest.mark.anyio


def make(server: LoopbackServer, ca: CertAuthority | None, *,
         public: Sequence[str] = ("127.0.0.1/32",), names: dict[str, list[str]] | None = None,
         seen: list[tuple[str, int]] | None = None,
         **settings: Any) -> SafeFetcher:
    answers = names or {"site.test": ["127.0.0.1"]}

    async def resolve(host: str, port: int) -> list[str]:
        if host not in answers:
            raise OSError(f"no answer for {host}")
        return answers[host]

    options: dict[str, Any] = {"timeout": 10.0, "allowed_ports": frozenset({server.port}),
                               "ca_file": ca.ca_file if ca else None, **settings}
    hooks = NetHooks(tuple(ipaddress.ip_network(n) for n in public), resolve,
                     on_connect=(lambda ip, port: seen.append((ip, port))) if seen is not None
                     else None)
    return SafeFetcher(FetchSettings(**options), hooks)


async def failure(fetch: SafeFetcher, url: str) -> ToolError:
    with pytest.raises(ToolError) as caught:
        await fetch.get(url)
    return caught.value


async def test_a_page_over_tls_with_sni_and_host_on_the_name(
    server: LoopbackServer, ca: CertAuthority
) -> None:
    ca.sni.clear()
    result = await make(server, ca).get(f"https://site.test:{server.port}/headers")
    headers = json.loads(result.body)
    assert headers["Host"] == f"site.test:{server.port}"
    assert "Proxy-Authorization" not in headers and "Cookie" not in headers
    assert ca.sni == ["site.test"]
    assert result.status == 200 and not result.truncated


async def test_without_the_public_hook_the_loopback_server_is_never_reached(
    server: LoopbackServer, ca: CertAuthority, connects: list[Any]
) -> None:
    err = await failure(make(server, ca, public=()), f"https://site.test:{server.port}/page")
    assert err.category is ErrorCategory.POLICY_BLOCKED
    assert err.message.startswith("blocked address: site.test resolves to 127.0.0.1")
    assert connects == [] and server.connections == 0


async def test_the_certificate_is_checked_on_the_host_name_not_the_address(
    server: LoopbackServer, ca: CertAuthority
) -> None:
    # The certificate covers 127.0.0.1 and *.test; "site.example" resolves to 127.0.0.1 but
    # is not in it: verifying against the address would wrongly pass.
    fetch = make(server, ca, names={"site.example": ["127.0.0.1"]})
    err = await failure(fetch, f"https://site.example:{server.port}/page")
    assert err.category is ErrorCategory.PERMANENT_FAILURE
    assert "certificate" in err.message.lower() or "ssl" in err.message.lower()


async def test_an_untrusted_ca_fails(server: LoopbackServer) -> None:
    err = await failure(make(server, None), f"https://site.test:{server.port}/page")
    assert err.category is ErrorCategory.PERMANENT_FAILURE and "CERTIFICATE" in err.message


async def test_rebinding_cannot_move_the_connection(ca: CertAuthority, connects: list[Any]) -> None:
    """The first answer is the test server (marked public); every later answer is another
    loopback address that is not. The connection goes to the first: the name is resolved
    once, and the backend never resolves it again."""
    with serving("127.0.0.2", 0, ca.server_context()) as good:  # noqa: SIM117 (needs the port)
        with serving("127.0.0.3", good.port, ca.server_context()) as other:
            calls: list[str] = []

            async def rebinding(host: str, port: int) -> list[str]:
                calls.append(host)
                return ["127.0.0.2"] if len(calls) == 1 else ["127.0.0.3"]

            seen: list[tuple[str, int]] = []
            fetch = SafeFetcher(
                FetchSettings(timeout=10, allowed_ports=frozenset({good.port}),
                              ca_file=ca.ca_file),
                NetHooks((ipaddress.ip_network("127.0.0.2/32"),), rebinding,
                         on_connect=lambda ip, port: seen.append((ip, port))),
            )
            result = await fetch.get(f"https://rebind.test:{good.port}/page")
            assert b"Hello" in result.body
            assert calls == ["rebind.test"]
            assert seen == [("127.0.0.2", good.port)]
            assert [c[0] for c in connects] == ["127.0.0.2"]
            assert good.connections == 1 and other.connections == 0
            # The next fetch gets the rebound answer, and it is refused before a connect.
            err = await failure(fetch, f"https://rebind.test:{good.port}/page")
            assert err.message.startswith("blocked address: rebind.test resolves to 127.0.0.3")
            assert other.connections == 0 and len(connects) == 1


@pytest.mark.parametrize("to", [
    "https://127.0.0.2:{port}/page", "https://localhost:{port}/page",
    "https://2130706433:{port}/page", "https://inside.test:{port}/page",
    "https://[::1]:{port}/page", "http://site.test:{port}/page",
    "https://user@site.test:{port}/page", "https://site.test:1/page",
])
async def test_redirects_to_internal_or_weaker_targets_are_refused(
    server: LoopbackServer, ca: CertAuthority, connects: list[Any], to: str
) -> None:
    seen: list[tuple[str, int]] = []
    fetch = make(server, ca, names={"site.test": ["127.0.0.1"], "inside.test": ["10.0.0.7"]},
                 seen=seen)
    target = to.format(port=server.port)
    err = await failure(fetch, f"https://site.test:{server.port}/redirect?to={target}")
    assert err.category is ErrorCategory.POLICY_BLOCKED
    assert err.message.startswith(("blocked address", "blocked url")), err.message
    # Only the first hop connected.
    assert seen == [("127.0.0.1", server.port)] and len(connects) == 1
    assert len(server.paths) == 1 and server.paths[0].startswith("/redirect?to=")


async def test_redirects_are_followed_at_most_three_times(
    server: LoopbackServer, ca: CertAuthority
) -> None:
    fetch = make(server, ca)
    result = await fetch.get(f"https://site.test:{server.port}/chain?n=3")
    assert b"Hello" in result.body and len(result.redirects) == 3
    assert result.final_url == f"https://site.test:{server.port}/page"
    err = await failure(fetch, f"https://site.test:{server.port}/chain?n=4")
    assert err.category is ErrorCategory.PERMANENT_FAILURE and "redirects" in err.message
    assert server.paths.count("/page") == 1  # the fourth redirect was not followed


async def test_the_body_is_capped_while_streaming(
    server: LoopbackServer, ca: CertAuthority
) -> None:
    fetch = make(server, ca, max_body_bytes=10_000)
    result = await fetch.get(f"https://site.test:{server.port}/big?n=5000000")
    assert result.truncated and len(result.body) == 10_000
    whole = await fetch.get(f"https://site.test:{server.port}/big?n=10000")
    assert not whole.truncated and len(whole.body) == 10_000


async def test_a_gzip_bomb_stops_at_the_cap(server: LoopbackServer, ca: CertAuthority) -> None:
    fetch = make(server, ca, max_body_bytes=100_000)
    result = await fetch.get(f"https://site.test:{server.port}/bomb")
    assert result.truncated and len(result.body) == 100_000 and set(result.body) == {0}
    page = await fetch.get(f"https://site.test:{server.port}/gzip")
    assert b"<title>Test page</title>" in page.body and not page.truncated


async def test_a_slow_server_times_out(server: LoopbackServer, ca: CertAuthority) -> None:
    err = await failure(make(server, ca, timeout=0.5), f"https://site.test:{server.port}/slow?s=3")
    assert err.category is ErrorCategory.TIMEOUT


@pytest.mark.parametrize(("code", "category"), [
    (404, ErrorCategory.PERMANENT_FAILURE), (503, ErrorCategory.SERVER_ERROR),
    (429, ErrorCategory.RATE_LIMITED), (403, ErrorCategory.POLICY_BLOCKED),
])
async def test_error_statuses_are_classified(
    server: LoopbackServer, ca: CertAuthority, code: int, category: ErrorCategory
) -> None:
    err = await failure(make(server, ca), f"https://site.test:{server.port}/status?code={code}")
    assert err.category is category and str(code) in err.message


async def test_plain_http_needs_the_hook_even_on_loopback(ca: CertAuthority) -> None:
    with serving("127.0.0.1", 0, None) as plain:
        url = f"http://site.test:{plain.port}/text"
        err = await failure(make(plain, ca), url)
        assert err.message.startswith("blocked url: scheme 'http'")
        fetch = make(plain, ca)
        allowed = SafeFetcher(fetch.settings, NetHooks(fetch.hooks.public, fetch.hooks.resolver,
                                                       allow_http=True))
        assert (await allowed.get(url)).body == b"plain text body"
        assert plain.connections == 1
        # Even with the hook, http to an address that passes the real rules is refused.
        for public in ("http://8.8.8.8/", "http://dns.test/"):
            hooked = SafeFetcher(FetchSettings(allowed_ports=frozenset({80})), NetHooks(
                fetch.hooks.public, _answer("8.8.8.8"), allow_http=True))
            err = await failure(hooked, public)
            assert err.message == "blocked url: plain http is for loopback test servers only"


def _answer(address: str) -> Any:
    async def resolve(host: str, port: int) -> list[str]:
        return [address]

    return resolve


async def test_fetches_run_concurrently(server: LoopbackServer, ca: CertAuthority) -> None:
    fetch = make(server, ca)
    bodies: list[bytes] = []

    async def one() -> None:
        bodies.append((await fetch.get(f"https://site.test:{server.port}/text")).body)

    async with anyio.create_task_group() as tg:
        for _ in range(5):
            tg.start_soon(one)
    assert bodies == [b"plain text body"] * 5
