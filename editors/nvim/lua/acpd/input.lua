-- The prompt buffer (acpd://prompt): write a prompt over several lines, then <CR> in normal
-- mode or <C-s> in either mode sends it and clears the buffer. An empty buffer sends nothing.
local M = {}

function M.send()
  local buf = M.buf
  local text = table.concat(vim.api.nvim_buf_get_lines(buf, 0, -1, false), "\n")
  if not text:match("%S") then return end
  local ok, err = require("acpd").prompt(text)
  if not ok then
    vim.notify("acpd: " .. tostring(err and err.message), vim.log.levels.ERROR)
    return
  end
  vim.api.nvim_buf_set_lines(buf, 0, -1, false, {})
end

function M.buffer()
  if M.buf and vim.api.nvim_buf_is_valid(M.buf) then return M.buf end
  M.buf = vim.api.nvim_create_buf(false, true)
  pcall(vim.api.nvim_buf_set_name, M.buf, "acpd://prompt")
  vim.bo[M.buf].filetype = "markdown"
  vim.keymap.set("n", "<CR>", M.send, { buffer = M.buf, desc = "acpd: send the prompt" })
  vim.keymap.set({ "n", "i" }, "<C-s>", M.send, { buffer = M.buf, desc = "acpd: send the prompt" })
  return M.buf
end

function M.open()
  vim.cmd("botright 8split")
  vim.api.nvim_win_set_buf(0, M.buffer())
end

return M
