-- acpd.nvim: an Agent Client Protocol client for acpd (Neovim >= 0.10, no dependencies).
--
-- It spawns `acpd serve` (opts.cmd), initializes with fs and terminal capabilities, and
-- keeps one session: prompts go out as session/prompt, session/update fills the chat
-- buffer and the tool status pane, fs/* is answered from buffers (acpd.fs), terminal/* runs
-- in Neovim terminal buffers (acpd.terminal), permission requests are vim.ui.select.
-- Nothing the daemon sends can raise out of a handler: a failing handler answers -32603.
local rpc = require("acpd.rpc")
local fs = require("acpd.fs")
local terminal = require("acpd.terminal")
local pane = require("acpd.pane")
local chat = require("acpd.chat")

pane.tail_of = terminal.tail
terminal.on_output = function() pane.render_soon() end

local M = {
  opts = { cmd = { "acpd", "serve" }, cwd = nil, env = nil, permission = nil },
  pane = pane, chat = chat, terminal = terminal,
  state = { busy = false, stop_reason = nil, session_id = nil, config = nil, modes = nil },
  permissions = {},
}

function M.setup(opts)
  M.opts = vim.tbl_deep_extend("force", M.opts, opts or {})
  return M
end

local function describe_permission(params)
  local call = params.toolCall or {}
  local lines = { call.title or "tool call" }
  local first = (call.content or {})[1]
  if first and first.type == "diff" then
    table.insert(lines, "diff " .. tostring(first.path))
    vim.list_extend(lines, vim.split(pane.diff_text(first.oldText, first.newText), "\n", { plain = true }))
  elseif call.rawInput and call.rawInput.command then
    table.insert(lines, "$ " .. tostring(call.rawInput.command))
  end
  return table.concat(lines, "\n")
end

function M._ask_permission(params, respond)
  local options = params.options or {}
  local prompt = describe_permission(params)
  table.insert(M.permissions, { prompt = prompt, params = params })
  local chooser = M.opts.permission or vim.ui.select
  chooser(options, {
    prompt = prompt,
    format_item = function(o) return string.format("%s (%s)", o.name or o.optionId, o.kind or "") end,
    kind = "acpd.permission",
  }, function(choice)
    if choice then
      respond({ outcome = { outcome = "selected", optionId = choice.optionId } })
    else
      respond({ outcome = { outcome = "cancelled" } })
    end
  end)
end

local sync_handlers = {
  ["fs/read_text_file"] = fs.read,
  ["fs/write_text_file"] = fs.write,
  ["terminal/create"] = terminal.create,
  ["terminal/output"] = terminal.output,
  ["terminal/kill"] = terminal.kill,
  ["terminal/release"] = terminal.release,
}

local function on_request(method, params, respond)
  if method == "session/request_permission" then return M._ask_permission(params, respond) end
  if method == "terminal/wait_for_exit" then return terminal.wait_for_exit(params, respond) end
  local handler = sync_handlers[method]
  if not handler then return respond(nil, { code = -32601, message = "Method not found: " .. method }) end
  respond(handler(params))
end

local function on_update(params)
  local u = params.update or {}
  local kind = u.sessionUpdate
  if kind == "agent_message_chunk" and u.content and u.content.text then
    chat.agent(u.content.text)
  elseif kind == "user_message_chunk" and u.content and u.content.text then
    chat.user(u.content.text) -- a loaded session replays the user's side too
  elseif kind == "agent_thought_chunk" and u.content and u.content.text then
    chat.thought(u.content.text)
  elseif kind == "tool_call" or kind == "tool_call_update" then
    pane.on_update(u)
  elseif kind == "current_mode_update" then
    if M.state.modes then M.state.modes.currentModeId = u.currentModeId end
  elseif kind == "config_option_update" then
    M.state.config = u.configOptions
  end
  if M.on_update then pcall(M.on_update, u) end
end

local function on_notification(method, params)
  if method == "session/update" then on_update(params) end
end

--- Start the daemon and initialize (idempotent). Returns the initialize result or nil, err.
function M.start()
  if M.client and not M.client.closed then return M.init_result end
  M.client = rpc.start(M.opts.cmd, {
    cwd = M.opts.cwd, env = M.opts.env,
    on_request = on_request, on_notification = on_notification,
    on_exit = function(result)
      -- the daemon is gone, so is the session it held: the next prompt starts a new
      -- daemon and session (:AcpdSessions can load the old one back)
      M.state.busy, M.state.session_id = false, nil
      if not M.stopping then chat.note("acpd exited (code " .. tostring(result.code) .. ")") end
      M.stopping = false
    end,
  })
  local result, err = M.client:request_sync("initialize", {
    protocolVersion = 1,
    clientCapabilities = { fs = { readTextFile = true, writeTextFile = true }, terminal = true },
    clientInfo = { name = "acpd.nvim", version = "0.1.0" },
  }, 20000)
  if err then return nil, err end
  M.init_result = result
  return result
end

local function remember_session(result, id)
  M.state.session_id = id or (result and result.sessionId)
  M.state.modes = result and result.modes or nil
  M.state.config = result and result.configOptions or nil
end

function M.new_session()
  local _, err = M.start()
  if err then return nil, err end
  local result, err2 = M.client:request_sync("session/new",
    { cwd = M.opts.cwd or vim.fn.getcwd(), mcpServers = {} }, 20000)
  if err2 then return nil, err2 end
  remember_session(result)
  return result.sessionId
end

--- Load a stored session (its history replays into the chat and the pane).
function M.load_session(id)
  local _, err = M.start()
  if err then return nil, err end
  pane.reset()
  local result, err2 = M.client:request_sync("session/load",
    { sessionId = id, cwd = M.opts.cwd or vim.fn.getcwd(), mcpServers = {} }, 30000)
  if err2 then return nil, err2 end
  remember_session(result, id)
  return id
end

--- Resume a stored session without replaying its history (session/resume; falls back to
--- session/load when the agent does not offer resume).
function M.resume_session(id)
  local init, err = M.start()
  if err then return nil, err end
  local caps = (init.agentCapabilities or {}).sessionCapabilities or {}
  if caps.resume == nil then return M.load_session(id) end
  pane.reset()
  local result, err2 = M.client:request_sync("session/resume",
    { sessionId = id, cwd = M.opts.cwd or vim.fn.getcwd(), mcpServers = {} }, 30000)
  if err2 then return nil, err2 end
  remember_session(result, id)
  return id
end

function M.list_sessions()
  local _, err = M.start()
  if err then return nil, err end
  local result, err2 = M.client:request_sync("session/list", { cwd = M.opts.cwd or vim.fn.getcwd() })
  if err2 then return nil, err2 end
  return result.sessions or {}
end

--- Send a prompt; returns at once (the turn streams). `done(stop_reason, err)` when it ends.
function M.prompt(text, done)
  if not M.state.session_id then
    local _, err = M.new_session()
    if err then
      if done then done(nil, err) end
      return nil, err
    end
  end
  if M.state.busy then return nil, { message = "a prompt is already running (:AcpdCancel)" } end
  M.state.busy, M.state.stop_reason = true, nil
  chat.user(text)
  M.client:request("session/prompt", {
    sessionId = M.state.session_id, prompt = { { type = "text", text = text } },
  }, function(result, err)
    M.state.busy = false
    M.state.stop_reason = result and result.stopReason or nil
    M.state.error = err
    if err then chat.note("error: " .. tostring(err.message)) end
    if done then done(M.state.stop_reason, err) end
  end)
  return true
end

function M.cancel()
  if M.client and M.state.session_id then
    M.client:notify("session/cancel", { sessionId = M.state.session_id })
  end
end

function M.set_mode(mode_id)
  return M.client:request_sync("session/set_mode", { sessionId = M.state.session_id, modeId = mode_id })
end

function M.set_config_option(config_id, value)
  local result, err = M.client:request_sync("session/set_config_option",
    { sessionId = M.state.session_id, configId = config_id, value = value })
  if result and result.configOptions then M.state.config = result.configOptions end
  return result, err
end

--- Pick a value for a config option (category "mode" or "model") with vim.ui.select.
function M.pick(category)
  for _, option in ipairs(M.state.config or {}) do
    if option.category == category or option.id == category then
      local choices = option.options or {}
      vim.ui.select(choices, {
        prompt = option.name or option.id,
        format_item = function(c) return c.name or c.value end,
      }, function(choice)
        if choice then M.set_config_option(option.id, choice.value) end
      end)
      return true
    end
  end
  vim.notify("acpd: no " .. category .. " option in this session", vim.log.levels.WARN)
end

--- Statusline component: the running tool call with a spinner, or "".
function M.status() return pane.status() end

function M.stop()
  if M.client then M.stopping = true; M.client:stop() end
  M.client, M.init_result = nil, nil
  M.state.session_id = nil
end

return M
