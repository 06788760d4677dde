"""fetch and web_scrape through the runner: the allow_network gate, the modes, the SSRF
refusal as a PolicyBlocked result, the page as markdown, selections, the audit line."""

from __future__ import annotations

import ipaddress
import json
from pathlib import Path
from typing import Any

import pytest

from acpd.daemon.local import LocalCommandRunner, LocalFileSystem
from acpd.net.client import FetchSettings, NetHooks
from acpd.tools.audit import AuditLog
from acpd.tools.builtin import core_sources
from acpd.tools.errors import ErrorCategory
from acpd.tools.permissions import PermissionAnswer, ToolPolicy
from acpd.tools.pipeline import CallEnv, CallResult, MemoryApprovals, ToolPipeline
from acpd.tools.registry import ToolRegistry, ToolSource
from acpd.tools.retry import RetryPolicy
from acpd.tools.shellpolicy import ShellPolicies, ShellPolicySettings
from acpd.tools.web.specs import make_web_specs
from tests.pipeline.conftest import Observer
from tests.web.server import CertAuthority, LoopbackServer

pytestmark = pytest.mark.anyio


class Rig:
    def __init__(self, tmp: Path, server: LoopbackServer, ca: CertAuthority, *,
                 allow_network: bool = True, mode: str = "auto",
                 answers: list[PermissionAnswer] | None = None, **settings: Any) -> None:
        policy = tmp / "policy.toml"
        policy.write_text(f"[policy]\nallow_network = {str(allow_network).lower()}\n")

        async def resolve(host: str, port: int) -> list[str]:
            return {"site.test": ["127.0.0.1"], "inside.test": ["192.168.7.7"]}[host]

        web = FetchSettings(timeout=10, allowed_ports=frozenset({server.port}),
                            ca_file=ca.ca_file, **settings)
        hooks = NetHooks((ipaddress.ip_network("127.0.0.1/32"),), resolve)
        sources = [s for s in core_sources() if s.name != "web"]
        registry = ToolRegistry.from_sources([*sources, ToolSource("web", make_web_specs(
            web, hooks))])
        self.audit_path = tmp / "audit.jsonl"
        shell = ShellPolicies(ShellPolicySettings(policy, "provisional", (),
                                                  (tmp / "no-plugins",)))
        self.pipeline = ToolPipeline(registry, ToolPolicy(), AuditLog(self.audit_path),
                                     RetryPolicy(jitter=lambda: 0.0, base_ms=1), shell)
        self.observer = Observer(answers)
        self.env = CallEnv(str(tmp), (str(tmp),), mode, LocalFileSystem(),
                           LocalCommandRunner(), self.observer, MemoryApprovals())
        self.base = f"https://site.test:{server.port}"
        self.n = 0

    async def call(self, name: str, **args: Any) -> CallResult:
        self.n += 1
        return await self.pipeline.run(f"c{self.n}", name, args, self.env)

    def audit(self) -> list[dict[str, Any]]:
        return [json.loads(line) for line in self.audit_path.read_text().splitlines()]


async def test_fetch_returns_the_page_as_markdown(
    tmp_path: Path, server: LoopbackServer, ca: CertAuthority
) -> None:
    rig = Rig(tmp_path, server, ca)
    result = await rig.call("fetch", url=f"{rig.base}/page")
    assert result.error is None, result.text
    assert result.text.startswith(f"# Test page\nURL: {rig.base}/page\n\n# Hello")
    assert f"[a link]({rig.base}/other)" in result.text and "**bold**" in result.text
    assert "- one\n- two" in result.text
    assert "secret()" not in result.text and "menu" not in result.text  # script, nav
    plain = await rig.call("fetch", url=f"{rig.base}/page", format="text")
    assert "First\nbold\nparagraph" in plain.text or "First bold paragraph" in plain.text
    (line, _) = rig.audit()
    assert line["call"]["url"] == f"{rig.base}/page" and line["result"]["status"] == 200
    assert "Hello" not in json.dumps(line)  # the page never goes to the audit log


async def test_fetch_says_when_the_body_was_cut(
    tmp_path: Path, server: LoopbackServer, ca: CertAuthority
) -> None:
    rig = Rig(tmp_path, server, ca, max_body_bytes=2048)
    result = await rig.call("fetch", url=f"{rig.base}/big?n=100000")
    assert result.error is None
    assert result.text.endswith("[truncated: the body is longer than max_body_bytes (2048 "
                                "bytes); the rest was not fetched]")
    assert result.text.count("a") >= 2048


async def test_an_ssrf_refusal_is_policy_blocked_and_connects_nowhere(
    tmp_path: Path, server: LoopbackServer, ca: CertAuthority, connects: list[Any]
) -> None:
    rig = Rig(tmp_path, server, ca)
    for url, start in [(f"https://inside.test:{server.port}/", "blocked address"),
                       (f"https://2130706433:{server.port}/", "blocked url"),
                       ("http://site.test/", "blocked url")]:
        result = await rig.call("fetch", url=url)
        assert result.error is not None
        assert result.error.category is ErrorCategory.POLICY_BLOCKED
        assert result.error.message.startswith(start), result.error.message
        assert "category: PolicyBlocked" in result.text
    result = await rig.call("web_scrape", url=f"https://[::1]:{server.port}/", selector="p")
    assert result.error is not None and result.error.message.startswith("blocked address")
    assert connects == [] and server.connections == 0


async def test_allow_network_false_denies_before_anything(
    tmp_path: Path, server: LoopbackServer, ca: CertAuthority
) -> None:
    rig = Rig(tmp_path, server, ca, allow_network=False)
    for name, extra in (("fetch", {}), ("web_scrape", {"selector": "p"})):
        result = await rig.call(name, url=f"{rig.base}/page", **extra)
        assert result.error is not None
        assert result.error.category is ErrorCategory.POLICY_BLOCKED
        assert "allow_network = false" in result.error.message
    assert server.connections == 0


async def test_urls_refused_without_io_are_refused_before_the_policy_and_the_user(
    tmp_path: Path, server: LoopbackServer, ca: CertAuthority, connects: list[Any]
) -> None:
    rig = Rig(tmp_path, server, ca, allow_network=False, mode="ask", answers=["allow_once"])
    for url in ("https://127.0.0.1/", "https://0x7f.1/", "http://site.test/",
                "https://u@site.test/", f"https://[fd00::1]:{server.port}/"):
        result = await rig.call("fetch", url=url)
        assert result.error is not None
        assert result.error.message.startswith(("blocked url", "blocked address"))
    assert rig.observer.asked == [] and connects == []
    # A name needs a DNS query: that waits for the policy (here: allow_network = false).
    named = await rig.call("fetch", url=f"https://inside.test:{server.port}/")
    assert named.error is not None and "allow_network = false" in named.error.message
    assert [line["decision"] for line in rig.audit()] == ["deny"] * 6


async def test_a_name_is_judged_after_the_user_allowed_the_call(
    tmp_path: Path, server: LoopbackServer, ca: CertAuthority, connects: list[Any]
) -> None:
    rig = Rig(tmp_path, server, ca, mode="ask", answers=["allow_once"])
    result = await rig.call("fetch", url=f"https://inside.test:{server.port}/")
    assert result.error is not None
    assert result.error.message == "blocked address: inside.test resolves to 192.168.7.7 (private)"
    assert len(rig.observer.asked) == 1 and connects == []


async def test_without_a_shell_policy_network_tools_are_denied(
    tmp_path: Path, server: LoopbackServer, ca: CertAuthority
) -> None:
    rig = Rig(tmp_path, server, ca)
    rig.pipeline.shell = None
    result = await rig.call("fetch", url=f"{rig.base}/text")
    assert result.error is not None and "no shell policy" in result.error.message
    assert server.connections == 0


@pytest.mark.parametrize(("mode", "answers", "runs", "asked"), [
    ("read-only", [], False, False),
    ("ask", ["reject_once"], False, True),
    ("ask", ["allow_once"], True, True),
    ("auto", [], True, False),
])
async def test_the_modes_judge_it_as_an_external_effect(
    tmp_path: Path, server: LoopbackServer, ca: CertAuthority, mode: str,
    answers: list[PermissionAnswer], runs: bool, asked: bool,
) -> None:
    rig = Rig(tmp_path, server, ca, mode=mode, answers=answers)
    result = await rig.call("fetch", url=f"{rig.base}/text")
    assert (result.error is None) is runs, result.text
    assert bool(rig.observer.asked) is asked
    assert server.connections == (1 if runs else 0)
    shown = [name for name, _ in rig.pipeline.catalog(mode)]
    assert ("fetch" in shown) is (mode != "read-only")


async def test_web_scrape_extracts(
    tmp_path: Path, server: LoopbackServer, ca: CertAuthority
) -> None:
    rig = Rig(tmp_path, server, ca)
    url = f"{rig.base}/page"
    items = await rig.call("web_scrape", url=url, selector="li.item")
    assert items.text.splitlines() == [f"2 matches for 'li.item' on {url}", "[1] one", "[2] two"]
    first = await rig.call("web_scrape", url=url, selector="li.item", limit=1)
    assert "(showing 1)" in first.text and "[2]" not in first.text
    links = await rig.call("web_scrape", url=url, selector="a", extract="attr:href")
    assert f"[1] {rig.base}/other" in links.text
    attrs = await rig.call("web_scrape", url=url, selector="p.note", extract="attr:data-x")
    assert "[1] 7" in attrs.text
    html = await rig.call("web_scrape", url=url, selector="p.note", extract="html")
    assert '[1] <p class="note" data-x="7">Note</p>' in html.text
    bad = await rig.call("web_scrape", url=url, selector="p[[[")
    assert bad.error is not None and bad.error.category is ErrorCategory.INVALID_PARAMETERS
    wrong = await rig.call("web_scrape", url=url, selector="p", extract="attr:")
    assert wrong.error is not None and wrong.error.category is ErrorCategory.INVALID_PARAMETERS


async def test_bodies_that_are_not_text_are_refused(
    tmp_path: Path, server: LoopbackServer, ca: CertAuthority
) -> None:
    rig = Rig(tmp_path, server, ca)
    result = await rig.call("fetch", url=f"{rig.base}/bin")
    assert result.error is not None and "image/png" in result.error.message
    text = await rig.call("fetch", url=f"{rig.base}/json")
    assert text.text.endswith('{"a": 1}')
    scrape = await rig.call("web_scrape", url=f"{rig.base}/json", selector="p")
    assert scrape.error is not None and "reads HTML pages" in scrape.error.message


@pytest.mark.parametrize("allow_network", [True, False])
async def test_the_catalog_shows_network_tools_only_where_the_policy_allows_the_network(
    tmp_path: Path, server: LoopbackServer, ca: CertAuthority, allow_network: bool
) -> None:
    """A tool every call of which would be denied is not offered to the model (as for the
    mode and `deny *`): with allow_network = false, fetch and web_scrape are not shown."""
    rig = Rig(tmp_path, server, ca, allow_network=allow_network)
    network = await rig.pipeline.network_allowed(str(tmp_path))
    assert network is allow_network
    shown = [name for name, _ in rig.pipeline.catalog("auto", network=network)]
    assert ("fetch" in shown) is allow_network and ("web_scrape" in shown) is allow_network
    assert "read" in shown
    rig.pipeline.shell = None  # no policy to allow the network: not shown either
    assert await rig.pipeline.network_allowed(str(tmp_path)) is False
