"""Fetch benchmark: what the SSRF layer adds per request, and HTML to text speed.

    .venv/bin/python benchmarks/fetch.py [--requests N] [--page-kb KB]

Overhead: a loopback HTTPS server (tests/web/server.py, a test CA made for the run) is
fetched N times by acpd's SafeFetcher and N times by a plain httpx.AsyncClient, interleaved
(alternating which goes first), both with a fresh TLS connection per request (`Connection:
close`: the fetcher never reuses connections across fetches) and the same SSL context; the
URL is the address literal, so neither side resolves a name. Printed: median and p95 of
both, and the difference of the medians (target: < 1 ms). Also the check alone (URL parse +
address rules, no I/O).
HTML: a generated page of about --page-kb KB, parsed and rendered to markdown and to text, and
a CSS selection: MB/s (best of 5).
"""

from __future__ import annotations

import argparse
import ipaddress
import random
import statistics
import sys
import tempfile
import time
from pathlib import Path

import anyio

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "src"))
sys.path.insert(0, str(ROOT))

from tests.web.server import CertAuthority, serving  # noqa: E402

from acpd.net.client import FetchSettings, NetHooks, SafeFetcher  # noqa: E402


def stats(samples: list[float]) -> tuple[float, float]:
    ordered = sorted(samples)
    return statistics.median(ordered), ordered[int(len(ordered) * 0.95) - 1]


async def overhead(requests: int) -> None:
    import httpx

    with tempfile.TemporaryDirectory() as tmp:
        ca = CertAuthority(Path(tmp))
        with serving("127.0.0.1", 0, ca.server_context()) as server:
            url = f"https://127.0.0.1:{server.port}/text"
            fetcher = SafeFetcher(
                FetchSettings(allowed_ports=frozenset({server.port}), ca_file=ca.ca_file),
                NetHooks((ipaddress.ip_network("127.0.0.1/32"),)),
            )
            ctx = await fetcher.ssl_context()
            ours: list[float] = []
            plain: list[float] = []
            async with httpx.AsyncClient(verify=ctx, trust_env=False) as client:
                async def safe() -> bytes:
                    return (await fetcher.get(url)).body

                async def direct() -> bytes:
                    return (await client.get(url, headers={"Connection": "close"})).content

                for i in range(requests + 20):
                    # Alternate which goes first, so neither always follows the other.
                    pair = [(safe, ours), (direct, plain)]
                    for run, samples in pair if i % 2 else pair[::-1]:
                        start = time.perf_counter()
                        assert await run() == b"plain text body"
                        if i >= 20:  # warm-up
                            samples.append((time.perf_counter() - start) * 1000)
            checks: list[float] = []
            for _ in range(2000):
                start = time.perf_counter()
                await fetcher.check(url)
                checks.append((time.perf_counter() - start) * 1e6)
    om, op = stats(ours)
    pm, pp = stats(plain)
    cm, cp = stats(checks)
    print(f"requests: {requests} each, interleaved, fresh TLS connection per request")
    print(f"  plain httpx        median {pm:7.3f} ms   p95 {pp:7.3f} ms")
    print(f"  SafeFetcher (SSRF) median {om:7.3f} ms   p95 {op:7.3f} ms")
    print(f"  added by the SSRF layer: {om - pm:+.3f} ms median ({(om / pm - 1) * 100:+.1f}%), "
          f"target < 1 ms: {'met' if om - pm < 1 else 'NOT met'}")
    print(f"  the check alone (parse + address rules): median {cm:.1f} us, p95 {cp:.1f} us")


def page(kb: int) -> str:
    rng = random.Random(7)
    words = ["alpha", "beta", "gamma", "delta", "epsilon", "zeta", "eta", "theta", "iota",
             "kappa", "lambda", "mu"]
    parts = ["<html><head><title>Bench</title><script>var x = 1;</script></head><body><nav>"]
    parts += [f"<a href='/n{i}'>nav {i}</a>" for i in range(100)]
    parts.append("</nav><main>")
    section = 0
    while sum(map(len, parts)) < kb * 1024:
        section += 1
        parts.append(f"<h2>Section {section}</h2>")
        for _ in range(4):
            text = " ".join(rng.choice(words) for _ in range(60))
            parts.append(f"<p class='c'>{text} <b>bold</b> <a href='/p{section}'>link</a></p>")
        parts.append("<ul><li>one</li><li>two</li></ul><pre>code\n  block</pre>")
        parts.append("<table><tr><td>a</td><td>b</td></tr></table>")
    parts.append("</main></body></html>")
    return "".join(parts)


def html_speed(kb: int) -> None:
    from acpd.tools.web import html

    text = page(kb)
    size = len(text.encode()) / 1e6

    def best(run: object) -> float:
        times = []
        for _ in range(5):
            start = time.perf_counter()
            run()  # type: ignore[operator]
            times.append(time.perf_counter() - start)
        return min(times)

    base = "https://example.com/"
    for name, run in [
        ("parse only", lambda: html.parse(text)),
        ("parse + markdown", lambda: html.to_markdown(html.parse(text), base)),
        ("parse + text", lambda: html.to_text(html.parse(text))),
        ("parse + css p.c (text)", lambda: html.select(html.parse(text), "p.c", "text",
                                                       1000, base)),
    ]:
        seconds = best(run)
        print(f"  {name:<24} {seconds * 1000:8.1f} ms   {size / seconds:7.1f} MB/s")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--requests", type=int, default=300)
    parser.add_argument("--page-kb", type=int, default=1024)
    args = parser.parse_args()
    anyio.run(overhead, args.requests)
    print(f"HTML to text, a generated page of {args.page_kb} KB (best of 5):")
    html_speed(args.page_kb)


if __name__ == "__main__":
    main()
