"""Progress only for clients that support it; the diagnostics tool's findings published."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from lsprotocol import types

from tests.lsp.conftest import lsp_session

pytestmark = pytest.mark.anyio


@pytest.mark.parametrize("client", ["neovim", "visual-studio-code"])
async def test_no_progress_without_the_capability(tmp_path: Path, client: str) -> None:
    async with lsp_session(tmp_path, client, progress=False) as s:
        assert await s.run_tool("read", {"path": "notes.txt"}) == "hello from the workspace\n"
        assert s.client.progress_reports == {}
        assert [u["status"] for u in s.statuses][-1] == "completed"


@pytest.mark.skipif(shutil.which("ruff") is None, reason="needs ruff (the test extra)")
async def test_diagnostics_tool_findings_are_published_per_file(tmp_path: Path) -> None:
    async with lsp_session(tmp_path, answers=["Allow once"] * 2) as s:
        (s.workspace / "pyproject.toml").write_text("[tool.ruff]\n")
        bad = s.workspace / "bad.py"
        bad.write_text("import os\n\n\nx = 1\n")
        result = await s.run_tool("diagnostics", {"checker": "ruff"})
        assert "F401" in result
        published = s.client.diagnostics[bad.as_uri()]
        [found] = [d for d in published if d.code == "F401"]
        assert found.message.startswith("`os` imported but unused"), found.message
        assert found.code == "F401"
        assert found.range.start == types.Position(line=0, character=7)
        assert found.source == "acpd/ruff"
        # fixed: the next run clears the file
        bad.write_text("x = 1\n")
        await s.run_tool("diagnostics", {"checker": "ruff"})
        assert list(s.client.diagnostics[bad.as_uri()]) == []
