-- Loaded before each test scenario: the plugin on the runtimepath, and helpers that
-- wait for a turn and write what Neovim saw to a JSON file for pytest to judge.
local spec = vim.json.decode(io.open(os.getenv("ACPD_NVIM_SPEC")):read("*a"))
vim.opt.runtimepath:prepend(spec.plugin)
vim.cmd("runtime plugin/acpd.lua")
local acpd = require("acpd").setup({ cmd = spec.cmd, cwd = spec.workspace, env = spec.env })
T = { spec = spec, acpd = acpd, out = { unexpected_permissions = {} } }
-- Headless Neovim's default vim.ui.select reads stdin; a test that does not expect a
-- permission prompt gets it recorded and rejected instead.
acpd.setup({ permission = function(_, o, choose)
  table.insert(T.out.unexpected_permissions, o.prompt)
  choose(nil)
end })

function T.turn(text, timeout_ms)
  local finished, reason = false, nil
  local ok, err = acpd.prompt(text, function(r) finished, reason = true, r end)
  assert(ok, vim.inspect(err))
  vim.wait(timeout_ms or 30000, function() return finished end, 20)
  assert(finished, "turn did not end: " .. text)
  return reason
end

function T.pane_calls()
  local calls = {}
  for _, id in ipairs(acpd.pane.order) do
    local c = acpd.pane.calls[id]
    table.insert(calls, { id = id, title = c.title, kind = c.kind, status = c.status,
      line = acpd.pane.line(c), details = acpd.pane.details(c) })
  end
  return calls
end

function T.finish()
  T.out.pane_lines = vim.api.nvim_buf_get_lines(acpd.pane.buffer(), 0, -1, false)
  T.out.calls = T.pane_calls()
  T.out.chat = acpd.chat.text()
  T.out.daemon_log = table.concat(acpd.client and acpd.client.log or {}, "")
  local f = io.open(spec.result, "w")
  f:write(vim.json.encode(T.out))
  f:close()
  acpd.stop()
  vim.wait(3000, function() return false end, 50)
end
