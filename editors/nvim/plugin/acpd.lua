-- User commands and default keys for acpd.nvim (lazy: nothing starts until a command runs).
if vim.g.loaded_acpd then return end
vim.g.loaded_acpd = true

local function acpd() return require("acpd") end
local command = vim.api.nvim_create_user_command

command("AcpdPrompt", function(a)
  local ok, err = acpd().prompt(a.args)
  if not ok then vim.notify("acpd: " .. tostring(err and err.message), vim.log.levels.ERROR) end
end, { nargs = "+", desc = "Send a prompt to acpd" })
command("AcpdCancel", function() acpd().cancel() end, { desc = "Cancel the running acpd turn" })
command("AcpdChat", function() acpd().chat.open() end, { desc = "Open the acpd chat buffer" })
command("AcpdTools", function()
  vim.cmd("botright split")
  vim.api.nvim_win_set_buf(0, acpd().pane.buffer())
  acpd().pane.render()
end, { desc = "Open the acpd tool status pane" })
command("AcpdTerminal", function(a) acpd().terminal.open(a.args ~= "" and a.args or nil) end,
  { nargs = "?", desc = "Open an acpd terminal buffer" })
command("AcpdNew", function() acpd().new_session() end, { desc = "Start a new acpd session" })
command("AcpdSessions", function()
  local sessions, err = acpd().list_sessions()
  if not sessions then return vim.notify("acpd: " .. tostring(err and err.message), vim.log.levels.ERROR) end
  vim.ui.select(sessions, {
    prompt = "acpd sessions",
    format_item = function(s) return (s.title or s.sessionId) .. "  " .. (s.updatedAt or "") end,
  }, function(s) if s then acpd().load_session(s.sessionId) end end)
end, { desc = "List and load acpd sessions" })
command("AcpdMode", function() acpd().pick("mode") end, { desc = "Pick the acpd mode" })
command("AcpdModel", function() acpd().pick("model") end, { desc = "Pick the acpd model" })
command("AcpdStop", function() acpd().stop() end, { desc = "Stop the acpd daemon" })

vim.keymap.set("n", "<Plug>(acpd-cancel)", function() acpd().cancel() end, { desc = "acpd: cancel" })
if not vim.g.acpd_no_default_keys then
  vim.keymap.set("n", "<leader>ac", "<Plug>(acpd-cancel)", { desc = "acpd: cancel the turn" })
end
command("AcpdResume", function(a)
  local ok, err = acpd().resume_session(a.args)
  if not ok then vim.notify("acpd: " .. tostring(err and err.message), vim.log.levels.ERROR) end
end, { nargs = 1, desc = "Resume an acpd session by id (no history replay)" })
command("AcpdInput", function() require("acpd.input").open() end,
  { desc = "Open the acpd prompt buffer (<CR> or <C-s> sends)" })
