-- terminal/* run in Neovim terminal buffers (jobstart with term=true) the user can open.
--
-- Rules: create answers at once; output is kept raw and truncated from the front to
-- `outputByteLimit` at a UTF-8 character boundary; wait_for_exit answers when the job
-- exits; kill stops the job (the process group: jobstop sends SIGHUP then SIGKILL);
-- release kills and forgets the id, the buffer stays for the user to read.
local M = { terminals = {}, buffers = {}, next_id = 1 }

local SIGNALS = { [1] = "SIGHUP", [2] = "SIGINT", [3] = "SIGQUIT", [6] = "SIGABRT",
  [9] = "SIGKILL", [13] = "SIGPIPE", [15] = "SIGTERM" }

local function truncate(output, limit)
  if not limit or #output <= limit then return output, false end
  local start = #output - limit + 1
  -- skip UTF-8 continuation bytes so the kept text starts on a character
  while start <= #output and output:byte(start) >= 0x80 and output:byte(start) < 0xC0 do
    start = start + 1
  end
  return output:sub(start), true
end
M.truncate = truncate

local function exit_status(t)
  if t.exit_code == nil then return nil end
  if t.signal then return { exitCode = vim.NIL, signal = t.signal } end
  return { exitCode = t.exit_code, signal = vim.NIL }
end

function M.create(params)
  local id = "nvim-term-" .. M.next_id
  M.next_id = M.next_id + 1
  local t = { id = id, output = "", truncated = false, limit = params.outputByteLimit,
              waiters = {}, command = params.command, args = params.args or {} }
  local env = {}
  for _, pair in ipairs(params.env or {}) do env[pair.name] = pair.value end
  local argv = { params.command }
  vim.list_extend(argv, params.args or {})
  t.buf = vim.api.nvim_create_buf(false, true)
  local ok, job = pcall(vim.api.nvim_buf_call, t.buf, function()
    -- Neovim 0.11 spells it jobstart{term=true}; 0.10 has only termopen()
    local start = vim.fn.has("nvim-0.11") == 1
        and function(a, o) return vim.fn.jobstart(a, vim.tbl_extend("force", o, { term = true })) end
      or vim.fn.termopen
    return start(argv, {
      cwd = params.cwd,
      env = next(env) and env or nil,
      on_stdout = function(_, data)
        local chunk = table.concat(data, "\n")
        local out, cut = truncate(t.output .. chunk, t.limit)
        t.output, t.truncated = out, t.truncated or cut
        if M.on_output then M.on_output(t) end
      end,
      on_exit = function(_, code)
        -- 128+N is how the job layer reports death by signal N
        if code > 128 and code < 160 then
          t.signal = SIGNALS[code - 128] or ("SIG" .. tostring(code - 128))
        end
        t.exit_code = code
        for _, respond in ipairs(t.waiters) do respond(exit_status(t)) end
        t.waiters = {}
      end,
    })
  end)
  if not ok or job <= 0 then
    return nil, { code = -32603, message = "cannot start " .. tostring(params.command) }
  end
  t.job = job
  pcall(vim.api.nvim_buf_set_name, t.buf, "acpd://terminal/" .. id)
  M.terminals[id] = t
  table.insert(M.buffers, t.buf)
  return { terminalId = id }
end

local function find(params)
  local t = M.terminals[params.terminalId]
  if not t then return nil, { code = -32002, message = "unknown terminal " .. tostring(params.terminalId) } end
  return t
end

function M.output(params)
  local t, err = find(params)
  if not t then return nil, err end
  return { output = t.output, truncated = t.truncated, exitStatus = exit_status(t) }
end

function M.wait_for_exit(params, respond)
  local t, err = find(params)
  if not t then return respond(nil, err) end
  if t.exit_code ~= nil then return respond(exit_status(t)) end
  table.insert(t.waiters, respond)
end

function M.kill(params)
  local t, err = find(params)
  if not t then return nil, err end
  if t.exit_code == nil then t.killed = true; vim.fn.jobstop(t.job) end
  return vim.NIL
end

function M.release(params)
  local t, err = find(params)
  if not t then return nil, err end
  if t.exit_code == nil then t.killed = true; vim.fn.jobstop(t.job) end
  M.terminals[params.terminalId] = nil
  return vim.NIL
end

-- The last non-empty output line of a terminal, without escapes or CRs (for the pane).
function M.tail(id)
  local t = M.terminals[id]
  if not t then return nil end
  local text = t.output:sub(-2048):gsub("\27%[[%d;?]*[%a@]", ""):gsub("\27%][^\7]*\7", ""):gsub("\r", "\n")
  local last
  for line in text:gmatch("[^\n]+") do
    if line:match("%S") then last = line end
  end
  if last and vim.fn.strchars(last) > 80 then last = vim.fn.strcharpart(last, 0, 80) .. "…" end
  return last
end

--- Open the terminal buffer of `id` (or the newest) in a split.
function M.open(id)
  local t = id and M.terminals[id]
  local buf = t and t.buf or M.buffers[#M.buffers]
  if buf and vim.api.nvim_buf_is_valid(buf) then vim.cmd("sbuffer " .. buf) end
end

return M
