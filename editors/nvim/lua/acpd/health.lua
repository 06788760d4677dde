-- :checkhealth acpd — Neovim version, the daemon command, and a real initialize handshake.
local M = {}

function M.check()
  local h = vim.health
  h.start("acpd")
  if vim.fn.has("nvim-0.10") == 1 then
    h.ok("Neovim " .. tostring(vim.version()))
  else
    h.error("Neovim >= 0.10 is required (vim.system, vim.uv)")
    return
  end
  local acpd = require("acpd")
  local cmd = acpd.opts.cmd
  if vim.fn.executable(cmd[1]) == 1 then
    h.ok("daemon command: " .. table.concat(cmd, " "))
  else
    h.error("`" .. cmd[1] .. "` is not executable", {
      "pip install . (from an acpd clone) puts `acpd` on PATH",
      "or require('acpd').setup({ cmd = { '/path/to/acpd', 'serve' } })",
    })
    return
  end
  local started = acpd.client and not acpd.client.closed
  local result, err = acpd.start()
  if not result then
    h.error("initialize failed: " .. tostring(err and err.message))
    return
  end
  local info = result.agentInfo or {}
  h.ok(string.format("initialize: protocol %s, agent %s %s", tostring(result.protocolVersion),
    tostring(info.name or "?"), tostring(info.version or "")))
  local caps = result.agentCapabilities or {}
  h.info("loadSession: " .. tostring(caps.loadSession == true))
  if not started then acpd.stop() end
end

return M
