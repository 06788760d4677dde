-- Newline-delimited JSON-RPC 2.0 over a child's stdio (vim.system), the ACP transport.
--
-- Rules: one JSON object per line; stdout carries protocol only (stderr is kept for
-- :AcpdLog); every callback runs scheduled on the main loop, never in a luv fast event.
-- A line that is not JSON is dropped (logged), never fatal. An incoming request is handed
-- to `on_request(method, params, respond)`; respond(result) or respond(nil, {code, message})
-- may be called later (terminal/wait_for_exit, permission prompts answer asynchronously).
local M = {}
M.__index = M

local function encode(msg)
  return vim.json.encode(msg) .. "\n"
end

function M.start(cmd, opts)
  local self = setmetatable({
    next_id = 1, pending = {}, partial = "", log = {}, closed = false,
    on_request = opts.on_request, on_notification = opts.on_notification, on_exit = opts.on_exit,
  }, M)
  self.proc = vim.system(cmd, {
    stdin = true,
    cwd = opts.cwd,
    env = opts.env,
    stdout = function(_, data) if data then self:_feed(data) end end,
    stderr = function(_, data)
      if data then vim.schedule(function() table.insert(self.log, data) end) end
    end,
  }, function(result)
    vim.schedule(function()
      self.closed = true
      for id, cb in pairs(self.pending) do
        self.pending[id] = nil
        cb(nil, { code = -32603, message = "acpd exited (code " .. tostring(result.code) .. ")" })
      end
      if self.on_exit then self.on_exit(result) end
    end)
  end)
  return self
end

function M:_feed(data)
  local buffer = self.partial .. data
  local lines = {}
  for line in buffer:gmatch("([^\n]*)\n") do table.insert(lines, line) end
  self.partial = buffer:match("[^\n]*$") or ""
  if #lines == 0 then return end
  vim.schedule(function()
    for _, line in ipairs(lines) do self:_dispatch(line) end
  end)
end

function M:_dispatch(line)
  if line:match("^%s*$") then return end
  local ok, msg = pcall(vim.json.decode, line, { luanil = { object = true, array = true } })
  if not ok or type(msg) ~= "table" then
    table.insert(self.log, "acpd.nvim: dropped a non-JSON line\n")
    return
  end
  if msg.method and msg.id ~= nil then
    local id = msg.id
    local answered = false
    local function respond(result, err)
      if answered then return end
      answered = true
      if err then
        self:_write({ jsonrpc = "2.0", id = id, error = err })
      else
        self:_write({ jsonrpc = "2.0", id = id, result = result == nil and vim.NIL or result })
      end
    end
    local handled, failure = pcall(self.on_request, msg.method, msg.params or {}, respond)
    if not handled then respond(nil, { code = -32603, message = tostring(failure) }) end
  elseif msg.method then
    pcall(self.on_notification, msg.method, msg.params or {})
  elseif msg.id ~= nil then
    local cb = self.pending[msg.id]
    self.pending[msg.id] = nil
    if cb then cb(msg.result, msg.error) end
  end
end

function M:_write(msg)
  if self.closed then return end
  pcall(self.proc.write, self.proc, encode(msg))
end

--- Send a request; `cb(result, err)` runs on the main loop.
function M:request(method, params, cb)
  local id = self.next_id
  self.next_id = id + 1
  self.pending[id] = cb or function() end
  self:_write({ jsonrpc = "2.0", id = id, method = method, params = params or vim.empty_dict() })
  return id
end

--- Send a request and wait for its answer (for commands and tests; never from a callback).
function M:request_sync(method, params, timeout_ms)
  local done, result, err = false, nil, nil
  self:request(method, params, function(r, e) done, result, err = true, r, e end)
  vim.wait(timeout_ms or 10000, function() return done end, 10)
  if not done then return nil, { code = -32603, message = method .. ": no answer in time" } end
  return result, err
end

function M:notify(method, params)
  self:_write({ jsonrpc = "2.0", method = method, params = params or vim.empty_dict() })
end

function M:stop()
  if self.closed then return end
  pcall(self.proc.write, self.proc, nil) -- close stdin: acpd exits on EOF
end

return M
