"""Start-up is a feature: nothing on the way to `initialize`, nor the runtime a session
without MCP servers loads, imports the mcp SDK (1-4 s of imports on a busy machine)."""

from __future__ import annotations

import subprocess
import sys

from tests.e2e.harness import REPO

PROBE = """
import sys
import acpd.daemon.handshake, acpd.daemon.agent, acpd.daemon.methods, acpd.daemon.config
import acpd.tools.setup, acpd.tools.pipeline, acpd.mcpclient.hub, acpd.mcpclient.trust
heavy = sorted(m for m in sys.modules
               if m in ("mcp", "mcp_types", "httpx2", "starlette", "jsonschema")
               or m.startswith(("mcp.", "mcp_types.")))
print(",".join(heavy))
"""


def test_the_runtime_imports_no_mcp_sdk() -> None:
    done = subprocess.run([sys.executable, "-c", PROBE], cwd=REPO, capture_output=True,
                          text=True, timeout=120, check=True)
    assert done.stdout.strip() == "", done.stdout
