"""The Neovim plugin against the real daemon: fs through buffers, bash in a Neovim terminal,
the tool status pane, permissions, cancel, resume after restarting Neovim."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.editors.nvim.harness import Scenario


@pytest.fixture
def scenario(tmp_path: Path) -> Scenario:
    workspace = tmp_path / "ws"
    workspace.mkdir()
    config = tmp_path / "acpd.toml"
    config.write_text('[agent]\ndefault_mode = "auto"\n')
    return Scenario(tmp=tmp_path, workspace=workspace, data_dir=tmp_path / "data", config=config)


def test_unsaved_buffer_edit_and_terminal(scenario: Scenario) -> None:
    ws = scenario.workspace
    (ws / "notes.txt").write_text("on disk\n")
    (ws / "out.txt").write_text("old\n")
    lua = f"""
vim.cmd("edit {ws}/notes.txt")
vim.api.nvim_buf_set_lines(0, 0, -1, false, {{"unsaved line one", "unsaved two"}})
vim.cmd("edit {ws}/out.txt")
vim.cmd("buffer {ws}/notes.txt")
T.out.reason = T.turn("go")
local out = vim.fn.bufnr("{ws}/out.txt")
T.out.out_buffer = vim.api.nvim_buf_get_lines(out, 0, -1, false)
T.out.out_modified = vim.bo[out].modified
T.out.notes_modified = vim.bo[vim.fn.bufnr("{ws}/notes.txt")].modified
T.out.terminal_buffers = {{}}
for _, b in ipairs(T.acpd.terminal.buffers) do
  table.insert(T.out.terminal_buffers, {{ name = vim.api.nvim_buf_get_name(b),
    buftype = vim.bo[b].buftype }})
end
"""
    turns = [
        {"tool_calls": [{"name": "read", "arguments": {"path": "notes.txt"}}]},
        {"tool_calls": [{"name": "write", "arguments": {"path": "out.txt", "content": "new\nno-eol"}}]},
        {"tool_calls": [{"name": "bash", "arguments": {"command": "echo from-term; exit 3"}}]},
        {"text": "all done"},
    ]
    out = scenario.run(lua, turns)
    assert out["reason"] == "end_turn", out
    read, write, bash = out["calls"]
    # the read saw the unsaved buffer, not the disk
    assert read["status"] == "completed"
    assert "unsaved line one" in "\n".join(read["details"]), read
    assert "on disk" not in "\n".join(read["details"])
    assert out["notes_modified"] is True
    # the write is byte-exact on disk and in the loaded buffer, which is left unmodified
    assert (ws / "out.txt").read_bytes() == b"new\nno-eol"
    assert out["out_buffer"] == ["new", "no-eol"] and out["out_modified"] is False
    assert write["status"] == "completed" and write["kind"] == "edit"
    # bash ran in a Neovim terminal buffer, and its failure shows
    assert bash["kind"] == "execute"
    assert bash["status"] == "failed", bash
    assert out["terminal_buffers"] and out["terminal_buffers"][0]["buftype"] == "terminal"
    assert "from-term" in "\n".join(bash["details"])
    assert read["line"].startswith("▤ ") and "✓" in read["line"]
    assert "✗" in bash["line"]
    assert out["pane_lines"][0] == read["line"]
    assert "all done" in out["chat"]
