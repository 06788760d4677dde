"""Item 14: every capability acpd states is true. The real daemon's `initialize` answer is
read and each claim is exercised (loadSession, each sessionCapabilities method, embedded
context reaching the model); what it does not do (images with a model that takes none, audio)
it does not claim. MCP's http and sse transports are claimed because they work (tests/mcp
drives a real server over each), and `acpd doctor` says the same as `initialize`."""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

from tests.e2e.harness import daemon_env
from tests.helpers.daemon import raw_daemon, write_script
from tests.output.conftest import messages

SECRET_TEXT = "embedded-context-marker-41"


def test_each_stated_capability_works(tmp_path: Path, data_dir: Path, workspace: Path) -> None:
    script = write_script(tmp_path / "s.json", [{"text": "ok"}, {"text": "again"}])
    env = daemon_env(tmp_path)
    with raw_daemon(data_dir, "--model", f"scripted:{script}", env=env) as peer:
        caps = peer.initialize()["result"]["agentCapabilities"]
        prompt = caps["promptCapabilities"]
        # Both HTTP transports work through the mcp SDK (tests/mcp/test_e2e.py runs each).
        assert caps.get("mcpCapabilities") == {"http": True, "sse": True}
        assert importlib.util.find_spec("mcp") is not None
        assert prompt.get("image") is not True and prompt.get("audio") is not True
        session = ok(peer.request("session/new", {"cwd": str(workspace), "mcpServers": []}))
        sid = session["sessionId"]
        blocks: list[dict[str, Any]] = [{"type": "text", "text": "look"}]
        if prompt.get("embeddedContext"):
            blocks.append({"type": "resource", "resource": {
                "uri": "file:///x.txt", "text": SECRET_TEXT, "mimeType": "text/plain"}})
        ok(peer.request("session/prompt", {"sessionId": sid, "prompt": blocks}))
        stated = set(caps["sessionCapabilities"])
        if "list" in stated:
            listed = ok(peer.request("session/list", {}))
            assert sid in [s["sessionId"] for s in listed["sessions"]]
        if "close" in stated:
            ok(peer.request("session/close", {"sessionId": sid}))
        if "resume" in stated:
            ok(peer.request("session/resume", {"sessionId": sid, "cwd": str(workspace)}))
            ok(peer.request("session/close", {"sessionId": sid}))
        if caps.get("loadSession"):
            ok(peer.request("session/load", {"sessionId": sid, "cwd": str(workspace),
                                             "mcpServers": []}))
        if "delete" in stated:
            ok(peer.request("session/close", {"sessionId": sid}))
            ok(peer.request("session/delete", {"sessionId": sid}))
            listed = ok(peer.request("session/list", {}))
            assert sid not in [s["sessionId"] for s in listed["sessions"]]
        if "additionalDirectories" in stated:
            extra = tmp_path / "extra-root"
            extra.mkdir()
            more = ok(peer.request("session/new", {
                "cwd": str(workspace), "mcpServers": [], "additionalDirectories": [str(extra)]}))
            listed = ok(peer.request("session/list", {}))
            [info] = [s for s in listed["sessions"] if s["sessionId"] == more["sessionId"]]
            assert info["additionalDirectories"] == [str(extra.resolve())]
        assert stated <= {"list", "close", "resume", "delete", "additionalDirectories"}, (
            "a claim this test cannot check")
    if prompt.get("embeddedContext") and "delete" not in stated:
        user = [m["text"] for m in messages(data_dir, sid) if m["role"] == "user"]
        assert any(SECRET_TEXT in t for t in user)


def test_embedded_context_reaches_the_model(
    tmp_path: Path, data_dir: Path, workspace: Path
) -> None:
    script = write_script(tmp_path / "s.json", [{"text": "ok"}])
    with raw_daemon(data_dir, "--model", f"scripted:{script}", env=daemon_env(tmp_path)) as peer:
        peer.initialize()
        sid = ok(peer.request("session/new", {"cwd": str(workspace), "mcpServers": []}))[
            "sessionId"]
        ok(peer.request("session/prompt", {"sessionId": sid, "prompt": [
            {"type": "resource", "resource": {"uri": "file:///x.txt", "text": SECRET_TEXT}}]}))
    user = [m["text"] for m in messages(data_dir, sid) if m["role"] == "user"]
    assert any(SECRET_TEXT in t for t in user)


def test_doctor_states_the_mcp_transports_initialize_claims(
    tmp_path: Path, data_dir: Path
) -> None:
    env = {**os.environ, **daemon_env(tmp_path)}
    done = subprocess.run(
        [sys.executable, "-m", "acpd", "doctor", "--data-dir", str(data_dir)],
        capture_output=True, text=True, env=env, timeout=120,
    )
    out = done.stdout
    assert "agent caps" in out, out + done.stderr
    mcp = next(line for line in out.splitlines() if line.split()[1:2] == ["MCP"])
    assert "stdio, http, sse" in mcp and "not supported" not in mcp, mcp


def ok(reply: dict[str, Any]) -> dict[str, Any]:
    assert "error" not in reply, reply
    result: dict[str, Any] = reply["result"]
    return result
