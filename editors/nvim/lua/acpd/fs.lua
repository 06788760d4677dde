-- fs/read_text_file and fs/write_text_file answered through Neovim's buffers.
--
-- Rules: a loaded buffer is the truth (unsaved text counts); its final newline follows the
-- buffer's 'eol'/'fixeol' as :write would. `line` is 1-based, `limit` counts lines. A write
-- goes to disk byte-exact (no newline added) and, when the file is loaded, into the buffer,
-- which is then left unmodified. A missing file is a -32002 error, never a crash.
local M = {}

-- Symlinks resolved, so a buffer opened through a link answers for its target too.
local function normalize(path)
  local full = vim.fn.fnamemodify(path, ":p")
  return vim.fs.normalize(vim.uv.fs_realpath(full) or full)
end

function M.loaded_buffer(path)
  local want = normalize(path)
  for _, buf in ipairs(vim.api.nvim_list_bufs()) do
    if vim.api.nvim_buf_is_loaded(buf) and vim.bo[buf].buftype == "" then
      local name = vim.api.nvim_buf_get_name(buf)
      if name ~= "" and normalize(name) == want then return buf end
    end
  end
end

local function buffer_text(buf)
  local text = table.concat(vim.api.nvim_buf_get_lines(buf, 0, -1, false), "\n")
  if vim.bo[buf].eol or (vim.bo[buf].fixeol and not vim.bo[buf].binary) then
    text = text .. "\n"
  end
  return text
end

local function slice(text, line, limit)
  if not line and not limit then return text end
  local lines = vim.split(text, "\n", { plain = true })
  local first = math.max(line or 1, 1)
  local last = limit and (first + limit - 1) or #lines
  local out = {}
  for i = first, math.min(last, #lines) do table.insert(out, lines[i]) end
  local result = table.concat(out, "\n")
  if last < #lines and #out > 0 then result = result .. "\n" end
  return result
end

function M.read(params)
  local buf = M.loaded_buffer(params.path)
  local text
  if buf then
    text = buffer_text(buf)
  else
    local f = io.open(params.path, "rb")
    if not f then
      return nil, { code = -32002, message = "Resource not found: " .. tostring(params.path) }
    end
    text = f:read("*a")
    f:close()
  end
  return { content = slice(text, params.line, params.limit) }
end

function M.write(params)
  local path, content = params.path, params.content
  vim.fn.mkdir(vim.fs.dirname(path), "p")
  local f, why = io.open(path, "wb")
  if not f then return nil, { code = -32603, message = "cannot write " .. path .. ": " .. tostring(why) } end
  f:write(content)
  f:close()
  local buf = M.loaded_buffer(path)
  if buf then
    local lines = vim.split(content, "\n", { plain = true })
    local eol = content:sub(-1) == "\n"
    if eol then table.remove(lines) end
    vim.bo[buf].fixeol = eol
    vim.bo[buf].eol = eol
    vim.api.nvim_buf_set_lines(buf, 0, -1, false, lines)
    vim.bo[buf].modified = false
  end
  return vim.NIL
end

return M
