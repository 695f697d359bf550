--- The connection to one `threadline serve` process, on Neovim's own JSON-RPC client
--- (`vim.lsp.rpc.start`, Content-Length framing).
---
--- Two traits of vim.lsp.rpc shape this module:
--- * an empty Lua table is encoded as `[]`; the sidecar reads `params: []` as `{}`,
---   and objects nested in params are built with `vim.empty_dict()` here;
--- * a `-32800` (request cancelled) reply never reaches the callback, so nothing
---   here relies on `$/cancelRequest`: a turn is stopped with `session/interrupt`,
---   which makes the pending `session/prompt` answer normally with `cancelled`.
---
--- vim.lsp.rpc delivers notifications and response callbacks through `vim.schedule`
--- (the read loop runs in a fast event, where buffers cannot be changed), one hop each
--- in arrival order, so every update of a turn is handled before the turn's answer.
local M = {}

---@class threadline.Rpc
---@field client vim.lsp.rpc.PublicClient
---@field ready boolean initialize answered
---@field closed boolean the process exited
---@field init_result table?
---@field private queue fun()[] requests waiting for initialize
local Rpc = {}
Rpc.__index = Rpc

---@class threadline.RpcHandlers
---@field notification fun(method: string, params: table)
---@field request fun(method: string, params: table): any, table? runs in a coroutine
---@field exit? fun(code: integer, signal: integer)

---@param opts {cmd: string[], env?: table, cwd?: string, capabilities: table}
---@param handlers threadline.RpcHandlers
---@param on_ready? fun(err: table?, result: table?)
---@return threadline.Rpc
function M.start(opts, handlers, on_ready)
  local self = setmetatable({ ready = false, closed = false, queue = {} }, Rpc)
  self.client = vim.lsp.rpc.start(opts.cmd, {
    -- vim.lsp.rpc already schedules this (as it does response callbacks): one hop
    -- each, so the two stay in arrival order. Scheduling again here would let a
    -- turn's answer overtake its last updates.
    notification = function(method, params)
      local function deliver()
        local ok, err = xpcall(handlers.notification, debug.traceback, method, params or {})
        if not ok then
          vim.notify('threadline: ' .. method .. ': ' .. tostring(err), vim.log.levels.ERROR)
        end
      end
      if vim.in_fast_event() then -- a Neovim whose rpc does not schedule notifications
        vim.schedule(deliver)
      else
        deliver()
      end
    end,
    server_request = function(method, params)
      return handlers.request(method, params or {})
    end,
    on_exit = function(code, signal)
      self.closed = true
      vim.schedule(function()
        if handlers.exit then
          handlers.exit(code, signal)
        end
      end)
    end,
    on_error = function(code, err)
      vim.schedule(function()
        vim.notify(
          ('threadline: rpc error %s: %s'):format(
            vim.lsp.rpc.client_errors[code] or code,
            vim.inspect(err)
          ),
          vim.log.levels.WARN
        )
      end)
    end,
  }, { cwd = opts.cwd, env = opts.env })
  self.client.request('initialize', {
    protocolVersion = 1,
    clientCapabilities = opts.capabilities,
    clientInfo = { name = 'threadline.nvim', version = '0.1.0' },
  }, function(err, result)
    self.ready = err == nil
    self.init_result = result
    if on_ready then
      on_ready(err, result)
    end
    local queued = self.queue
    self.queue = {}
    for _, send in ipairs(queued) do
      send()
    end
  end)
  return self
end

--- Send a request once the connection is initialized; `callback(err, result)` runs
--- on the main loop.
---@param method string
---@param params table?
---@param callback? fun(err: table?, result: any)
function Rpc:request(method, params, callback)
  local function send()
    local ok = self.client.request(method, params or vim.empty_dict(), function(err, result)
      if callback then
        callback(err, result)
      end
    end)
    if not ok and callback then
      vim.schedule(function()
        callback({ code = -32099, message = 'the sidecar is not running' }, nil)
      end)
    end
  end
  if self.ready then
    send()
  else
    table.insert(self.queue, send)
  end
end

---@param method string
---@param params table?
function Rpc:notify(method, params)
  if self.ready then
    self.client.notify(method, params or vim.empty_dict())
  else
    table.insert(self.queue, function()
      self.client.notify(method, params or vim.empty_dict())
    end)
  end
end

--- `shutdown` then `exit`, waiting at most `timeout_ms` for the first.
---@param timeout_ms? integer
function Rpc:stop(timeout_ms)
  if self.closed or self.client.is_closing() then
    return
  end
  local answered = false
  self.client.request('shutdown', nil, function()
    answered = true
  end)
  vim.wait(timeout_ms or 2000, function()
    return answered
  end, 10)
  self.client.notify('exit', nil)
  vim.wait(timeout_ms or 2000, function()
    return self.closed
  end, 10)
  if not self.closed then
    self.client.terminate()
  end
end

return M
