--- The one sidecar of this Neovim: started on first use, requests to it, and what its
--- `initialize` answered. A sidecar that exits unasked is a death (see `updates`); one
--- stopped here is not.
local config = require('threadline.config')
local rpc = require('threadline.rpc')
local requests = require('threadline.requests')
local updates = require('threadline.updates')
local editor_tools = require('threadline.editor_tools')
local state = require('threadline.state')
local util = require('threadline.util')

local M = {}

local notify, describe_error = util.notify, util.describe_error

local function capabilities()
  local fs = config.options.fs
  -- `session.compaction`: show compactions as ACP's `compaction_update`;
  -- `elicitation.form`: the agent's questions (`ask_user`) are asked here.
  return {
    fs = { readTextFile = fs, writeTextFile = fs },
    session = { compaction = vim.empty_dict() },
    elicitation = { form = vim.empty_dict() },
  }
end

--- Every tool this Neovim answers: the user's, then the built-in editor tools.
---@return threadline.Tool[]
function M.tools()
  local out = vim.list_extend({}, config.options.tools)
  if config.options.editor_tools then
    vim.list_extend(
      out,
      editor_tools.tools(function()
        return config.options.cwd or vim.fn.getcwd()
      end)
    )
  end
  return out
end
requests.tools = M.tools

--- Why the sidecar command cannot start, or nil if it can.
---@return string?
function M.cmd_problem()
  local cmd = config.options.cmd
  if type(cmd) ~= 'table' or type(cmd[1]) ~= 'string' or cmd[1] == '' then
    return 'the `cmd` setting must be a list like { "threadline", "serve" }'
  end
  if vim.fn.executable(cmd[1]) ~= 1 then
    return ("'%s' is not executable (not on PATH?): set `cmd` in require('threadline').setup()"):format(cmd[1])
  end
end

---@return threadline.Rpc? conn, string? problem
local function connection()
  if state.conn and not state.conn.closed then
    return state.conn
  end
  if state.dead then
    return nil, 'the sidecar is not running (it died): run :Threadline restart'
  end
  local problem = M.cmd_problem()
  if problem then
    return nil, problem
  end
  local this ---@type threadline.Rpc?
  local ok, conn = pcall(rpc.start, {
    cmd = config.options.cmd,
    env = config.options.env,
    cwd = config.options.cwd,
    capabilities = capabilities(),
  }, {
    notification = function(method, params)
      if method == 'session/update' and state.conn == this then
        updates.handle(state, params)
      end
    end,
    request = requests.handle,
    exit = function(code, signal)
      if state.conn ~= this or this.stopping then
        return -- stopped on purpose, or an earlier sidecar already replaced
      end
      updates.sidecar_died(state, code, signal or 0)
    end,
  }, function(err)
    if err then
      notify('initialize failed: ' .. describe_error(err), vim.log.levels.ERROR)
    end
  end)
  if not ok then
    return nil, ('cannot start %s: %s'):format(table.concat(config.options.cmd, ' '), conn)
  end
  this = conn
  state.conn = conn
  return conn
end

--- Raw request to the sidecar (any method of docs/protocol.md); `callback(err, result)`.
---@param method string
---@param params table?
---@param callback? fun(err: table?, result: any)
function M.request(method, params, callback)
  local conn, problem = connection()
  if not conn then
    if callback then
      callback({ message = problem }, nil)
    else
      notify(problem, vim.log.levels.ERROR)
    end
    return
  end
  conn:request(method, params, callback)
end

--- The same, waiting for the answer (at most `config.timeout` ms).
---@return any result, table? err
function M.call(method, params, timeout)
  local done, err, result = false, nil, nil
  M.request(method, params, function(e, r)
    done, err, result = true, e, r
  end)
  if not vim.wait(timeout or config.options.timeout, function()
    return done
  end, 10) then
    return nil, { code = -32099, message = method .. ' timed out' }
  end
  return result, err
end

--- The `initialize` answer of the running sidecar (nil before it answered).
---@return table?
function M.server_info()
  return state.conn and not state.conn.closed and state.conn.init_result or nil
end

--- Models users may pick (test models, `scripted:…`, are left out).
---@return string[]
function M.models()
  local info = M.server_info()
  local meta = info and info.agentCapabilities and info.agentCapabilities._meta
  local models = meta and meta.threadline and meta.threadline.models or {}
  local out = {}
  for _, m in ipairs(models) do
    if type(m.modelId) == 'string' and not vim.startswith(m.modelId, 'scripted:') then
      table.insert(out, m.modelId)
    end
  end
  return out
end

--- Stop the sidecar on purpose (its exit is not reported as a death); the next request
--- starts a new one.
---@param timeout? integer ms to wait for it to exit
function M.shutdown(timeout)
  if state.conn then
    state.conn.stopping = true
    state.conn:stop(timeout)
  end
  state.conn, state.dead = nil, nil
end

return M
