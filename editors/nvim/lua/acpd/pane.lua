-- The inline tool status pane: one line per tool call, in the order the calls began.
--
-- A line reads `<kind icon> <title>  <status> <duration>`; status goes pending (…) →
-- running (spinner) → ✓ completed / ✗ failed. Enter on a line expands the call's output,
-- diff or failure reason below it (again to fold it). The pane is a scratch buffer
-- named acpd://tools; it is redrawn whole (a turn has tens of calls, not thousands).
local M = { order = {}, calls = {}, expanded = {}, spinner = 1 }

local ICONS = { read = "▤", edit = "✎", delete = "⌫", move = "⇄", search = "⌕",
  execute = "$", think = "∴", fetch = "⇣", switch_mode = "⇆", other = "•" }
local SPIN = { "⠋", "⠙", "⠹", "⠸", "⠼", "⠴", "⠦", "⠧", "⠇", "⠏" }
M.ICONS = ICONS

local function now_ms() return vim.uv.hrtime() / 1e6 end

function M.buffer()
  if M.buf and vim.api.nvim_buf_is_valid(M.buf) then return M.buf end
  M.buf = vim.api.nvim_create_buf(false, true)
  pcall(vim.api.nvim_buf_set_name, M.buf, "acpd://tools")
  vim.bo[M.buf].filetype = "acpd-tools"
  vim.keymap.set("n", "<CR>", function() M.toggle(vim.api.nvim_win_get_cursor(0)[1]) end,
    { buffer = M.buf, desc = "acpd: expand tool call" })
  return M.buf
end

local function status_text(call)
  local s = call.status
  if s == "completed" then return "✓" end
  if s == "failed" then return "✗" end
  if s == "in_progress" then return SPIN[M.spinner] .. " running" end
  return "… pending"
end

local function duration(call)
  if not call.started then return "" end
  local stop = call.finished or now_ms()
  local ms = stop - call.started
  if ms < 1000 then return string.format("%dms", ms) end
  return string.format("%.1fs", ms / 1000)
end

local function one_line(text)
  return (tostring(text or ""):gsub("[\r\n]+", " ⏎ "))
end

function M.line(call)
  local icon = ICONS[call.kind or "other"] or ICONS.other
  local line = string.format("%s %s  %s %s", icon, one_line(call.title), status_text(call), duration(call))
  if call.status == "in_progress" and M.tail_of then
    -- a running command shows its newest output line, read from its Neovim terminal
    for _, item in ipairs(call.content or {}) do
      local tail = item.type == "terminal" and M.tail_of(item.terminalId)
      if tail then line = line .. "  │ " .. tail end
    end
  end
  return line
end

-- A unified diff of two texts; a missing final newline must not read as a changed line.
function M.diff_text(old, new)
  local function nl(text)
    text = text or ""
    if text ~= "" and text:sub(-1) ~= "\n" then text = text .. "\n" end
    return text
  end
  local ok, text = pcall(vim.diff, nl(old), nl(new))
  if ok and type(text) == "string" then return (text:gsub("\n$", "")) end
  return "-" .. (old or "") .. "\n+" .. (new or "")
end

--- The lines shown under an expanded call: its diff, its output text, its failure reason.
function M.details(call)
  local out = {}
  local function add(text)
    for _, l in ipairs(vim.split(tostring(text), "\n", { plain = true })) do
      table.insert(out, "    " .. l)
    end
  end
  for _, item in ipairs(call.content or {}) do
    if item.type == "diff" then
      add("diff " .. tostring(item.path))
      add(M.diff_text(item.oldText, item.newText))
    elseif item.type == "terminal" then
      add("terminal " .. tostring(item.terminalId) .. " (:AcpdTerminal to open)")
    elseif item.type == "content" and item.content and item.content.text then
      add(item.content.text)
    end
  end
  if call.status == "failed" and #out == 0 then
    add(call.rawOutput and vim.inspect(call.rawOutput) or "failed (no reason given)")
  end
  if #out == 0 then add("(no output)") end
  return out
end

function M.render()
  local buf = M.buffer()
  local lines, rows = {}, {}
  for _, id in ipairs(M.order) do
    local call = M.calls[id]
    table.insert(lines, M.line(call))
    rows[#lines] = id
    if M.expanded[id] then vim.list_extend(lines, M.details(call)) end
  end
  M.rows = rows
  vim.bo[buf].modifiable = true
  vim.api.nvim_buf_set_lines(buf, 0, -1, false, lines)
  vim.bo[buf].modifiable = false
end

-- Coalesce redraws: output can arrive many times per event-loop turn.
function M.render_soon()
  if M.render_pending then return end
  M.render_pending = true
  vim.schedule(function()
    M.render_pending = false
    M.render()
  end)
end

function M.toggle(row)
  local id = M.rows and M.rows[row]
  if not id then return end
  M.expanded[id] = not M.expanded[id] or nil
  M.render()
end

local function merge(call, update)
  for _, key in ipairs({ "title", "kind", "status", "content", "locations", "rawInput", "rawOutput" }) do
    if update[key] ~= nil then call[key] = update[key] end
  end
  if call.status == "in_progress" and not call.started then call.started = now_ms() end
  if (call.status == "completed" or call.status == "failed") and not call.finished then
    call.started = call.started or call.created
    call.finished = now_ms()
  end
end

function M.on_update(update)
  local id = update.toolCallId
  local call = M.calls[id]
  if update.sessionUpdate == "tool_call" or not call then
    if not call then
      call = { id = id, status = "pending", created = now_ms() }
      M.calls[id] = call
      table.insert(M.order, id)
    end
  end
  merge(call, update)
  M.render()
  M._tick()
end

function M.running()
  for i = #M.order, 1, -1 do
    local call = M.calls[M.order[i]]
    if call.status == "in_progress" or call.status == "pending" then return call end
  end
end

-- The spinner turns while some call is running; the timer stops when none is.
function M._tick()
  if M.timer or not M.running() then return end
  M.timer = vim.uv.new_timer()
  M.timer:start(100, 100, vim.schedule_wrap(function()
    M.spinner = M.spinner % #SPIN + 1
    if not M.running() then
      if M.timer then M.timer:stop(); M.timer:close(); M.timer = nil end
    end
    M.render()
  end))
end

function M.status()
  local call = M.running()
  if not call then return "" end
  return string.format("%s %s", SPIN[M.spinner], one_line(call.title))
end

function M.reset()
  M.order, M.calls, M.expanded = {}, {}, {}
  if M.buf and vim.api.nvim_buf_is_valid(M.buf) then M.render() end
end

return M
