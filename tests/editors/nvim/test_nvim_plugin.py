"""The Neovim plugin against the real daemon: fs through buffers, bash in a Neovim terminal,
the tool status pane, permissions, cancel, resume after restarting Neovim."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from tests.editors.nvim.capture_pane import CAPTURE, capture
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
vim.api.nvim_buf_call(out, function() vim.cmd("undo") end)
T.out.out_after_undo = vim.api.nvim_buf_get_lines(out, 0, -1, false)
T.out.terminal_buffers = {{}}
for _, b in ipairs(T.acpd.terminal.buffers) do
  table.insert(T.out.terminal_buffers, {{ name = vim.api.nvim_buf_get_name(b),
    buftype = vim.bo[b].buftype }})
end
"""
    turns = [
        {"tool_calls": [{"name": "read", "arguments": {"path": "notes.txt"}}]},
        {"tool_calls": [{"name": "write",
                         "arguments": {"path": "out.txt", "content": "new\nno-eol"}}]},
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
    assert out["out_after_undo"] == ["old"]  # the agent's write is one undo step
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


ANSWER_PERMISSIONS = """
T.out.asked = {}
T.acpd.setup({ permission = function(options, o, choose)
  local want = table.remove(T.answers, 1)
  local kinds = {}
  for _, opt in ipairs(options) do table.insert(kinds, opt.kind) end
  table.insert(T.out.asked, { prompt = o.prompt, kinds = kinds, answered = want })
  for _, opt in ipairs(options) do if opt.kind == want then return choose(opt) end end
  choose(nil)
end })
"""


def test_permission_requests_show_the_diff_and_are_answered(
    scenario: Scenario, tmp_path: Path
) -> None:
    scenario.config.write_text('[agent]\ndefault_mode = "ask"\n')
    ws = scenario.workspace
    (ws / "a.txt").write_text("alpha\n")
    lua = 'T.answers = { "allow_once", "allow_once", "reject_once" }\n' + ANSWER_PERMISSIONS + """
T.acpd.new_session()
-- the session's "Confirm every command" option, switched on through the plugin
local _, err = T.acpd.set_config_option("confirm_commands", "on")
assert(not err, vim.inspect(err))
T.out.reason = T.turn("go")
"""
    turns = [
        {"tool_calls": [{"name": "write", "arguments": {"path": "a.txt", "content": "beta\n"}}]},
        {"tool_calls": [{"name": "bash", "arguments": {"command": "echo ran > c.txt"}}]},
        {"tool_calls": [{"name": "write", "arguments": {"path": "b.txt", "content": "nope\n"}}]},
        {"text": "ok"},
    ]
    out = scenario.run(lua, turns)
    assert out["reason"] == "end_turn"
    first, third, second = out["asked"]
    # a command's prompt shows the real command
    assert "$ echo ran > c.txt" in third["prompt"], third
    assert (ws / "c.txt").read_text() == "ran\n"
    # the prompt shows the real diff (first content item), the options are ACP's kinds
    assert "-alpha" in first["prompt"] and "+beta" in first["prompt"], first
    assert {"allow_once", "reject_once"} <= set(first["kinds"])
    assert "+nope" in second["prompt"]
    assert (ws / "a.txt").read_text() == "beta\n"
    assert not (ws / "b.txt").exists()
    allowed, ran, rejected = out["calls"]
    assert ran["status"] == "completed" and ran["kind"] == "execute"
    assert allowed["status"] == "completed"
    assert rejected["status"] == "failed" and "✗" in rejected["line"]


@pytest.mark.slow
def test_cancel_stops_a_long_command_in_the_terminal(scenario: Scenario) -> None:
    lua = """
local finished, reason = false, nil
T.acpd.prompt("go", function(r) finished, reason = true, r end)
vim.wait(20000, function()
  local call = T.acpd.pane.running()
  return call ~= nil and call.status == "in_progress" and #T.acpd.terminal.buffers > 0
end, 20)
T.out.status_while_running = T.acpd.status()
vim.wait(10000, function()
  local first = vim.api.nvim_buf_get_lines(T.acpd.pane.buffer(), 0, 1, false)[1] or ""
  return first:find("│ started") ~= nil
end, 20)
T.out.line_while_running = vim.api.nvim_buf_get_lines(T.acpd.pane.buffer(), 0, 1, false)[1]
T.acpd.cancel()
vim.wait(20000, function() return finished end, 20)
T.out.reason = reason
T.out.status_after = T.acpd.status()
local buf = T.acpd.terminal.buffers[1]
T.out.job_running = vim.fn.jobwait({ vim.b[buf].terminal_job_id }, 0)[1] == -1
"""
    turns = [
        {"tool_calls": [{"name": "bash", "arguments": {"command": "echo started; sleep 60"}}]},
        {"text": "never"},
    ]
    out = scenario.run(lua, turns, timeout=90)
    assert out["reason"] == "cancelled", out
    assert "sleep 60" in out["status_while_running"]
    # the running line shows the newest output line of its Neovim terminal
    assert "running" in out["line_while_running"], out["line_while_running"]
    assert out["line_while_running"].endswith("│ started"), out["line_while_running"]
    assert out["status_after"] == ""
    assert out["job_running"] is False
    (call,) = out["calls"]
    assert call["status"] in ("failed", "completed") and "running" not in call["line"]
    assert "never" not in out["chat"]


@pytest.mark.slow
def test_session_resumes_after_restarting_neovim(scenario: Scenario) -> None:
    ws = scenario.workspace
    first = scenario.run(
        'T.out.reason = T.turn("first")\nT.out.session = T.acpd.state.session_id\n',
        [{"tool_calls": [{"name": "write", "arguments": {"path": "r.txt", "content": "r1"}}]},
         {"text": "first answer"}], name="first", script_name="model")
    assert first["reason"] == "end_turn" and (ws / "r.txt").read_bytes() == b"r1"
    session = first["session"]
    lua = f"""
local sessions = T.acpd.list_sessions()
T.out.listed = {{}}
for _, s in ipairs(sessions or {{}}) do table.insert(T.out.listed, s.sessionId) end
assert(T.acpd.load_session("{session}"))
T.out.replayed = T.pane_calls()
T.out.chat_after_load = T.acpd.chat.text()
T.out.reason = T.turn("second")
T.out.session = T.acpd.state.session_id
"""
    second = scenario.run(lua, [{"text": "second answer"}], name="second", script_name="model")
    assert session in second["listed"]
    (replayed,) = second["replayed"]
    assert replayed["status"] == "completed" and "r.txt" in replayed["title"]
    assert "first answer" in second["chat_after_load"]
    assert "## You\nfirst" in second["chat_after_load"]
    assert second["reason"] == "end_turn" and second["session"] == session
    assert "second answer" in second["chat"]

    # and once more with session/resume: no replay, the conversation goes on
    lua = f"""
assert(T.acpd.resume_session("{session}"))
T.out.replayed = T.pane_calls()
T.out.reason = T.turn("third")
T.out.session = T.acpd.state.session_id
"""
    third = scenario.run(lua, [{"text": "third answer"}], name="third", script_name="model")
    assert third["replayed"] == [] and third["session"] == session
    assert third["reason"] == "end_turn" and "third answer" in third["chat"]


def test_checkhealth_runs_a_real_handshake(scenario: Scenario) -> None:
    lua = """
vim.cmd("checkhealth acpd")
T.out.health = table.concat(vim.api.nvim_buf_get_lines(0, 0, -1, false), "\\n")
"""
    out = scenario.run(lua, [{"text": "unused"}])
    assert "Neovim" in out["health"] and "initialize: protocol 1" in out["health"], out["health"]
    assert "ERROR" not in out["health"]


def test_reads_honour_line_and_limit_and_terminal_output_is_capped(scenario: Scenario) -> None:
    ws = scenario.workspace
    (ws / "lines.txt").write_text("1\n2\n3\n4\n5\n")
    (ws / "link.txt").symlink_to(ws / "lines.txt")
    lua = f"""
local fs = require("acpd.fs")
vim.cmd("edit {ws}/lines.txt")
vim.api.nvim_buf_set_lines(0, 0, 1, false, {{"one"}})
T.out.slice = fs.read({{ path = "{ws}/lines.txt", line = 1, limit = 2 }}).content
T.out.tail = fs.read({{ path = "{ws}/lines.txt", line = 4 }}).content
T.out.via_link = fs.read({{ path = "{ws}/link.txt", limit = 1 }}).content
local _, missing = fs.read({{ path = "{ws}/nope.txt" }})
T.out.missing_code = missing.code
local term = require("acpd.terminal")
local t = term.create({{ command = "printf", args = {{ "abcdé" }}, outputByteLimit = 3 }})
local done = nil
term.wait_for_exit({{ terminalId = t.terminalId }}, function(r) done = r end)
vim.wait(10000, function() return done ~= nil end, 10)
vim.wait(200)
T.out.capped = term.output({{ terminalId = t.terminalId }})
T.out.exit = done
term.release({{ terminalId = t.terminalId }})
local _, gone = term.output({{ terminalId = t.terminalId }})
T.out.released_code = gone.code
"""
    out = scenario.run(lua, [{"text": "unused"}])
    assert out["slice"] == "one\n2\n"
    assert out["tail"] == "4\n5\n"
    assert out["via_link"] == "one\n"  # the buffer of the link's target, unsaved text
    assert out["missing_code"] == -32002
    # "é" is two bytes: a 3-byte cap keeps "dé", never half a character
    assert out["capped"]["output"] == "dé" and out["capped"]["truncated"] is True, out["capped"]
    assert out["exit"]["exitCode"] == 0
    assert out["released_code"] == -32002


def test_mode_picker_switches_the_session_mode(scenario: Scenario) -> None:
    ws = scenario.workspace
    lua = """
T.acpd.new_session()
T.out.shown = {}
vim.ui.select = function(items, o, choose)
  for _, it in ipairs(items) do
    table.insert(T.out.shown, o.format_item(it))
    if it.value == "read-only" then choose(it) end
  end
end
T.acpd.pick("mode")
for _, opt in ipairs(T.acpd.state.config) do
  if opt.id == "mode" then T.out.mode = opt.currentValue end
end
T.out.reason = T.turn("go")
"""
    out = scenario.run(lua, [
        {"tool_calls": [{"name": "write", "arguments": {"path": "w.txt", "content": "x"}}]},
        {"text": "ok"},
    ])
    assert out["shown"] == ["Read-only", "Ask", "Auto"]
    assert out["mode"] == "read-only"
    (call,) = out["calls"]
    assert call["status"] == "failed" and not (ws / "w.txt").exists()


@pytest.mark.slow
def test_pane_capture_is_real(tmp_path: Path) -> None:
    """The committed capture's session, re-run: Enter (a real <CR> keypress in the pane
    window) expands each line; the committed file has the same pane lines."""
    text, out = capture(tmp_path)
    assert out["reason"] == "end_turn" and out["unexpected_permissions"] == []
    closed = [line.rsplit("  ", 1)[0] for line in out["closed"]]  # type: ignore[union-attr]
    assert closed == ["▤ Read app.py", "✎ Write app.py",
                      f"$ grep -n return app.py (in {tmp_path}/project)",
                      f"$ test -f missing.cfg (in {tmp_path}/project)"]
    statuses = [line.rsplit("  ", 1)[1].split()[0] for line in out["closed"]]  # type: ignore[union-attr]
    assert statuses == ["✓", "✓", "✓", "✗"]
    expanded = "\n".join(out["expanded"])  # type: ignore[arg-type]
    assert "return 'hi'  # unsaved" in expanded and "+def greet() -> str:" in expanded
    assert "[exit code: 1]" in expanded
    committed = CAPTURE.read_text()
    for line in text.splitlines():
        if "✓" not in line and "✗" not in line and "Undo:" not in line:
            assert line in committed.splitlines(), line


def test_a_misbehaving_agent_gets_errors_not_a_crash(scenario: Scenario) -> None:
    answers = scenario.tmp / "answers.jsonl"
    agent = Path(__file__).with_name("rude_agent.py")
    lua = f"""
T.acpd.setup({{ cmd = {{ "{sys.executable}", "{agent}", "{answers}" }} }})
T.out.init = T.acpd.start()
vim.wait(5000, function()
  local f = io.open("{answers}")
  local n = f and #vim.split(f:read("*a"), "\\n", {{ trimempty = true }}) or 0
  if f then f:close() end
  return n >= 3
end, 20)
T.out.alive = true
"""
    out = scenario.run(lua, [{"text": "unused"}])
    assert out["alive"] is True and out["init"]["protocolVersion"] == 1
    got = {a["id"]: a for a in map(json.loads, answers.read_text().splitlines())}
    assert got["u1"]["error"]["code"] == -32601
    assert got["r1"]["error"]["code"] == -32002
    assert got["t1"]["error"]["code"] == -32002  # a line split across reads still parses


def test_prompt_buffer_sends_on_enter(scenario: Scenario) -> None:
    lua = """
vim.cmd("AcpdInput")
vim.api.nvim_buf_set_lines(0, 0, -1, false, { "first line", "second line" })
vim.cmd("normal \\r")
vim.wait(20000, function() return T.acpd.state.stop_reason ~= nil end, 20)
T.out.reason = T.acpd.state.stop_reason
T.out.left = vim.api.nvim_buf_get_lines(0, 0, -1, false)
"""
    out = scenario.run(lua, [{"text": "got it"}])
    assert out["reason"] == "end_turn" and out["left"] == [""]
    assert "first line\nsecond line" in out["chat"] and "got it" in out["chat"]


@pytest.mark.slow
def test_daemon_death_mid_turn_ends_the_turn_and_the_next_prompt_starts_afresh(
    scenario: Scenario,
) -> None:
    lua = """
local finished, err = false, nil
T.acpd.prompt("go", function(_, e) finished, err = true, e end)
vim.wait(20000, function()
  local c = T.acpd.pane.running()
  return c and c.status == "in_progress"
end, 20)
local first = T.acpd.state.session_id
T.acpd.client.proc:kill(9)
vim.wait(10000, function() return finished end, 20)
T.out.error = err and err.message
T.out.busy_after = T.acpd.state.busy
T.out.reason = T.turn("again")
T.out.new_session = T.acpd.state.session_id ~= first
"""
    out = scenario.run(lua, [
        # the restarted daemon replays the script from its start: a short sleep, so the
        # second prompt runs it to the end
        {"tool_calls": [{"name": "bash", "arguments": {"command": "sleep 3"}}]},
        {"text": "after restart"},
    ])
    assert "acpd exited" in out["error"] and out["busy_after"] is False
    assert out["reason"] == "end_turn" and out["new_session"] is True
    assert "[acpd exited (code" in out["chat"] and "after restart" in out["chat"]
