"""Start-up is a feature: `acpd serve` (the ACP face) never imports pygls or lsprotocol, and
the LSP package imports none of the ACP face's modules."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from tests.e2e.harness import REPO

LSP_MODULES = ("pygls", "lsprotocol", "cattrs", "acpd.lsp")
ACP_FACE = ("acpd.daemon.agent", "acpd.daemon.methods", "acpd.daemon.rpc",
            "acpd.daemon.prompting", "acpd.daemon.turn", "acpd.daemon.server",
            "acpd.daemon.session", "acpd.daemon.updates", "acpd.daemon.v2face")


def _imported(stderr: str) -> set[str]:
    """Module names from `python -X importtime` lines."""
    names = set()
    for line in stderr.splitlines():
        if line.startswith("import time:") and "|" in line:
            names.add(line.rsplit("|", 1)[1].strip())
    return names


def test_acpd_serve_imports_no_lsp_library(tmp_path: Path) -> None:
    workspace = tmp_path / "ws"
    workspace.mkdir()
    lines = [
        {"jsonrpc": "2.0", "id": 1, "method": "initialize",
         "params": {"protocolVersion": 1, "clientCapabilities": {}}},
        {"jsonrpc": "2.0", "id": 2, "method": "session/new",
         "params": {"cwd": str(workspace), "mcpServers": []}},
    ]
    config = tmp_path / "config.toml"
    config.write_text("")
    process = subprocess.Popen(
        [sys.executable, "-X", "importtime", "-m", "acpd", "serve", "--config", str(config),
         "--data-dir", str(tmp_path / "data")],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        cwd=REPO, env={**os.environ, "ACPD_CONFIG": str(config)},
    )
    assert process.stdin is not None and process.stdout is not None
    answers = []
    for message in lines:  # one at a time: EOF must not race the session/new answer
        process.stdin.write(json.dumps(message) + "\n")
        process.stdin.flush()
        answers.append(json.loads(process.stdout.readline()))
    _, stderr = process.communicate(timeout=120)
    assert "sessionId" in answers[1].get("result", {}), answers
    imported = _imported(stderr)
    assert "acpd.daemon.agent" in imported  # the probe sees the daemon's own imports
    assert sorted(m for m in imported if m.startswith(LSP_MODULES)) == []


def test_the_lsp_face_uses_the_core_not_the_acp_face() -> None:
    probe = (
        "import sys, acpd.lsp.server, acpd.lsp.turn, acpd.lsp.observer\n"
        f"print(','.join(sorted(m for m in sys.modules if m in {ACP_FACE!r})))\n"
    )
    done = subprocess.run([sys.executable, "-c", probe], cwd=REPO, capture_output=True,
                          text=True, timeout=120, check=True)
    assert done.stdout.strip() == ""
