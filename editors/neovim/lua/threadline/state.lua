--- What this Neovim knows of its sidecar and sessions: one table, shared by the modules.

---@class threadline.State
---@field conn threadline.Rpc?
---@field session_id string? the session of the chat buffer used last
---@field model string?
---@field running table<string, boolean> sessions with a turn in flight
---@field phase table<string, string> what a running session is doing: thinking, answering, tool, compacting
---@field last table<string, table> the last turn's outcome per session
---@field pending table<string, table[]> context attached to a session's next prompt
---@field dead {code: integer, signal: integer}? the sidecar died (until restarted)
---@field compacting table<string, boolean> sessions with a `:Threadline compact` in flight
---@field unsent table<string, string> a prompt the sidecar refused, offered again by `<CR>`
---@field activity table<string, threadline.Activity> what each open session is doing, as the sidecar last said (any window)
local state = {
  conn = nil,
  session_id = nil,
  model = nil,
  running = {},
  phase = {},
  last = {},
  pending = {},
  compacting = {},
  unsent = {},
  activity = {},
}

return state
