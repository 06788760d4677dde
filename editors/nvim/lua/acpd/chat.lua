-- The chat buffer (acpd://chat): the user's prompts, the agent's streamed text, and its
-- thoughts folded away (foldmethod=marker, one fold per run of thought chunks).
local M = { last = nil }

function M.buffer()
  if M.buf and vim.api.nvim_buf_is_valid(M.buf) then return M.buf end
  M.buf = vim.api.nvim_create_buf(false, true)
  pcall(vim.api.nvim_buf_set_name, M.buf, "acpd://chat")
  vim.bo[M.buf].filetype = "markdown"
  M.last = nil
  return M.buf
end

local function append(text)
  local buf = M.buffer()
  local count = vim.api.nvim_buf_line_count(buf)
  local tail = vim.api.nvim_buf_get_lines(buf, count - 1, count, false)[1] or ""
  local pieces = vim.split(text, "\n", { plain = true })
  pieces[1] = tail .. pieces[1]
  vim.api.nvim_buf_set_lines(buf, count - 1, count, false, pieces)
end

local function switch(kind)
  if M.last == kind then return end
  if M.last == "thought" then append("\n}}}\n") end
  if kind == "thought" then append("\n▸ thinking {{{\n") end
  if kind == "user" then
    local buf = M.buffer()
    local empty = vim.api.nvim_buf_line_count(buf) == 1 and vim.api.nvim_buf_get_lines(buf, 0, 1, false)[1] == ""
    append(empty and "## You\n" or "\n\n## You\n")
  end
  if kind == "agent" and M.last ~= nil then append("\n") end
  M.last = kind
end

function M.user(text) switch("user"); append(text) end
function M.agent(text) switch("agent"); append(text) end
function M.thought(text) switch("thought"); append(text) end
function M.note(text) switch(nil); append("\n[" .. text .. "]\n") end

function M.text()
  return table.concat(vim.api.nvim_buf_get_lines(M.buffer(), 0, -1, false), "\n")
end

function M.open()
  local buf = M.buffer()
  vim.cmd("botright vsplit")
  vim.api.nvim_win_set_buf(0, buf)
  vim.wo.foldmethod = "marker"
  vim.wo.foldlevel = 0
end

return M
