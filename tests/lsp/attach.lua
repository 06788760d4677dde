-- Attach `acpd lsp` with vim.lsp.start in a headless Neovim, run tools through
-- workspace/executeCommand, and write what Neovim saw as JSON to the file in ACPD_OUT.
local cmd = vim.json.decode(os.getenv("ACPD_CMD"))
local root = os.getenv("ACPD_ROOT")
local out = os.getenv("ACPD_OUT")
local seen = { statuses = {}, results = {}, errors = {}, progress = {} }

local function done(ok)
  seen.ok = ok
  local f = assert(io.open(out, "w"))
  f:write(vim.json.encode(seen))
  f:close()
  vim.cmd("qa!")
end

local id = vim.lsp.start({
  name = "acpd",
  cmd = cmd,
  root_dir = root,
  handlers = {
    ["acpd/toolStatus"] = function(_, status)
      table.insert(seen.statuses, status)
    end,
    ["$/progress"] = function(err, result, ctx)
      table.insert(seen.progress, result.value.kind)
      return vim.lsp.handlers["$/progress"](err, result, ctx)
    end,
  },
}, { bufnr = vim.api.nvim_get_current_buf() })
if not id then
  seen.errors.start = "vim.lsp.start returned nil"
  return done(false)
end
local client
vim.wait(60000, function()
  client = vim.lsp.get_client_by_id(id)
  return client ~= nil and client.initialized
end, 50)
if not (client and client.initialized) then
  seen.errors.start = "not initialized"
  return done(false)
end

local calls = {
  { tool = "read", arguments = { path = "notes.txt" } },
  { tool = "read", arguments = { path = ".env" } },
  { tool = "no_such_tool", arguments = {} },
}
local pending = #calls
for i, call in ipairs(calls) do
  client:request("workspace/executeCommand", {
    command = "acpd.runTool",
    arguments = { call },
  }, function(err, result)
    if err then
      seen.errors[tostring(i)] = { code = err.code, message = err.message }
    else
      seen.results[tostring(i)] = result
    end
    pending = pending - 1
  end)
  vim.wait(60000, function() return pending <= #calls - i end, 20)
end
local env_buf = vim.uri_to_bufnr(vim.uri_from_fname(root .. "/.env"))
vim.wait(10000, function() return #vim.diagnostic.get(env_buf) > 0 end, 20)
seen.diagnostics = {}
for _, d in ipairs(vim.diagnostic.get(env_buf)) do
  table.insert(seen.diagnostics, { message = d.message, source = d.source, lnum = d.lnum })
end
seen.status_line = vim.lsp.status()
done(pending == 0)
