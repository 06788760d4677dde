"""fetch end to end: the real daemon with the scripted provider, `acpd tools run fetch`, and
the whole refusal set with the real resolver inside a fresh network namespace.

The daemon and the CLI are separate processes, so the test hooks reach them through
ACPD_TEST_NET_HOOKS: site.test resolves to 127.0.0.1 and 127.0.0.1 counts as public; the
loopback server's certificate comes from the test CA, trusted with `[tools.web] ca_file`.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.e2e.client import RecordingClient
from tests.e2e.harness import acpd, write_script
from tests.web.server import CertAuthority, LoopbackServer

REPO = Path(__file__).resolve().parents[2]
HOOKS = json.dumps({"public": ["127.0.0.1/32"], "hosts": {"site.test": ["127.0.0.1"]}})


def config(tmp: Path, server: LoopbackServer, ca: CertAuthority, *, network: bool = True
           ) -> Path:
    policy = tmp / "policy.toml"
    policy.write_text(f"[policy]\nallow_network = {str(network).lower()}\n")
    path = tmp / "config.toml"
    path.write_text(
        f'[tools.shell]\npolicy_file = "{policy}"\nplugin_dirs = []\n'
        f'[tools.web]\nallowed_ports = [443, {server.port}]\nca_file = "{ca.ca_file}"\n'
    )
    return path


@pytest.mark.anyio
@pytest.mark.slow
async def test_the_daemon_fetches_for_the_model_and_refuses_internal_targets(
    tmp_path: Path, data_dir: Path, workspace: Path, server: LoopbackServer, ca: CertAuthority
) -> None:
    url = f"https://site.test:{server.port}/page"
    script = write_script(tmp_path / "s.json", [
        {"tool_calls": [{"name": "fetch", "arguments": {"url": url}}]},
        {"tool_calls": [{"name": "fetch", "arguments": {"url": "https://169.254.169.254/"}}]},
        {"tool_calls": [{"name": "web_scrape",
                         "arguments": {"url": url, "selector": "li.item"}}]},
        {"text": "done"},
    ])
    client = RecordingClient()
    env = {"ACPD_CONFIG": str(config(tmp_path, server, ca)), "ACPD_TEST_NET_HOOKS": HOOKS}
    async with acpd(tmp_path, data_dir=data_dir, workspace=workspace, client=client,
                    script=script, env=env) as run:
        session = await run.open_session()
        assert await run.prompt(session, "read the page") == "end_turn"
        calls = client.tool_calls()
        assert [c["kind"] for c in calls] == ["fetch"] * 3
        finals = [client.final(c["toolCallId"]) for c in calls]
        assert [f["status"] for f in finals] == ["completed", "failed", "completed"]
        assert "# Hello" in json.dumps(finals[0])
        assert "blocked address: 169.254.169.254 (link-local)" in json.dumps(finals[1])
        assert "[2] two" in json.dumps(finals[2])
        # ask mode: the two calls that could run were put to the user (the client allowed
        # them once); the internal address was refused before anyone was asked.
        assert len(client.calls("session/request_permission")) == 2
    assert server.connections == 2


def cli(tmp: Path, cfg: Path, tool: str, args: dict[str, Any], *extra: str
        ) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "ACPD_TEST_NET_HOOKS": HOOKS, "PYTHONPATH": str(REPO)}
    return subprocess.run(
        [sys.executable, "-m", "acpd", "tools", "run", tool, "--args", json.dumps(args),
         "--config", str(cfg), "--data-dir", str(tmp / "data"), "--cwd", str(tmp), *extra],
        capture_output=True, text=True, env=env, timeout=60, stdin=subprocess.DEVNULL,
    )


@pytest.mark.slow
def test_acpd_tools_run_fetch(tmp_path: Path, server: LoopbackServer, ca: CertAuthority
                              ) -> None:
    cfg = config(tmp_path, server, ca)
    url = f"https://site.test:{server.port}/page"
    done = cli(tmp_path, cfg, "fetch", {"url": url}, "--mode", "auto")
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith(f"# Test page\nURL: {url}\n\n# Hello")
    refused = cli(tmp_path, cfg, "fetch", {"url": "https://[::ffff:10.0.0.1]/"},
                  "--mode", "auto")
    assert refused.returncode == 1
    assert "category: PolicyBlocked" in refused.stderr
    assert "message: blocked address: ::ffff:a00:1 (IPv4-mapped)" in refused.stderr
    asked = cli(tmp_path, cfg, "fetch", {"url": url}, "--mode", "ask")  # nobody to ask
    assert asked.returncode == 1 and "ConfirmationRequired" in asked.stderr
    closed = cli(tmp_path, config(tmp_path, server, ca, network=False), "fetch", {"url": url},
                 "--mode", "auto")
    assert closed.returncode == 1 and "allow_network = false" in closed.stderr
    assert server.connections == 1


NETNS_PROBE = """
import json, sys
import anyio
from acpd.net.client import SafeFetcher
from acpd.tools.errors import ToolError
connects = []
sys.addaudithook(lambda e, a: connects.append(a[1]) if e == "socket.connect" else None)
async def main():
    out = {}
    for url in json.loads(sys.argv[1]):
        try:
            await SafeFetcher().get(url)
            out[url] = "FETCHED"
        except ToolError as exc:
            out[url] = f"{exc.category.value}: {exc.message}"
    print(json.dumps({"results": out, "connects": [str(c) for c in connects]}))
anyio.run(main)
"""


@pytest.mark.slow
@pytest.mark.skipif(shutil.which("unshare") is None, reason="needs unshare")
def test_the_refusal_set_with_the_real_resolver_in_an_empty_network_namespace() -> None:
    """No hooks at all: the production fetcher, the system resolver (/etc/hosts names that
    point at loopback), inside `unshare -rn` where not even loopback is up."""
    from tests.web.test_refusals import LITERALS

    hosts = [line.split()[1] for line in Path("/etc/hosts").read_text().splitlines()
             if line.strip() and not line.startswith("#") and len(line.split()) > 1
             and line.split()[0] in ("127.0.0.1", "::1")]
    urls = [*LITERALS, *(f"https://{h}/" for h in hosts)]
    probe = subprocess.run(
        ["unshare", "-rn", sys.executable, "-c", NETNS_PROBE, json.dumps(urls)],
        capture_output=True, text=True, timeout=120, cwd=REPO,
        env={**os.environ, "PYTHONPATH": str(REPO / "src")},
    )
    if probe.returncode != 0 and "unshare" in probe.stderr:
        pytest.skip(f"no network namespaces here: {probe.stderr.strip()[:200]}")
    assert probe.returncode == 0, probe.stderr
    report = json.loads(probe.stdout)
    for url, outcome in report["results"].items():
        assert outcome.startswith(("PolicyBlocked: blocked address",
                                   "PolicyBlocked: blocked url")), (url, outcome)
    assert report["connects"] == []
