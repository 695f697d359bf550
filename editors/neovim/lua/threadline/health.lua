--- `:checkhealth threadline`: Neovim's version, the sidecar found, its version and its
--- `initialize` answer, the model reachable, the data folder writable.
local M = {}

--- The sidecar command with `serve` replaced by other arguments (for `--version` and
--- `models`): the same program, run the way the plugin runs it.
---@param cmd string[]
---@param args string[]
---@return string[]
local function with_args(cmd, args)
  local out = vim.deepcopy(cmd)
  if out[#out] == 'serve' then
    table.remove(out)
  end
  return vim.list_extend(out, args)
end

---@param cmd string[]
---@param env? table
---@return vim.SystemCompleted?
local function run(cmd, env, timeout)
  local ok, proc = pcall(vim.system, cmd, { text = true, env = env })
  if not ok then
    return nil
  end
  return proc:wait(timeout)
end

--- What the sidecar answers to `initialize`, over the plugin's own connection: the one
--- already running, else a sidecar started for the check and stopped after it.
---@param config threadline.Config
---@return table? result, string? problem
local function initialize(config)
  local running = require('threadline').server_info()
  if running then
    return running
  end
  local done, result, problem = false, nil, nil
  local ok, conn = pcall(require('threadline.rpc').start, {
    cmd = config.cmd,
    env = config.env,
    cwd = config.cwd,
    capabilities = vim.empty_dict(),
  }, {
    notification = function() end,
    request = function()
      return nil, { code = -32601, message = 'not answered during :checkhealth' }
    end,
    exit = function(code, signal)
      if not done then
        done, problem = true, ('the sidecar exited (code %d, signal %d) before answering'):format(code, signal or 0)
      end
    end,
  }, function(err, answer)
    done = true
    if err then
      problem = require('threadline.util').describe_error(err)
    else
      result = answer
    end
  end)
  if not ok then
    return nil, tostring(conn)
  end
  if not vim.wait(20000, function()
    return done
  end, 10) then
    problem = 'no answer within 20 s'
  end
  conn:stop(1000)
  return result, problem
end

---@return string
local function data_dir(env)
  local home = (env and env.THREADLINE_HOME) or vim.env.THREADLINE_HOME
  if home and home ~= '' then
    return vim.fn.fnamemodify(vim.fn.expand(home), ':p')
  end
  local base = vim.env.XDG_DATA_HOME
  if not base or base == '' then
    base = vim.fn.expand('~/.local/share')
  end
  return base .. '/threadline'
end

function M.check()
  local health = vim.health
  local config = require('threadline.config').options
  local tl = require('threadline')
  health.start('threadline: Neovim')
  if vim.fn.has('nvim-0.10') == 1 then
    health.ok(('Neovim %s'):format(tostring(vim.version())))
  else
    health.error('Neovim 0.10 or newer is needed')
  end

  health.start('threadline: the sidecar')
  local problem = tl.cmd_problem()
  if problem then
    health.error(problem, {
      "Install Threadline (pip install -e . in the repository) and give its path: require('threadline').setup({ cmd = { '/path/to/.venv/bin/threadline', 'serve' } })",
    })
    return
  end
  health.ok(('command: %s (%s)'):format(table.concat(config.cmd, ' '), vim.fn.exepath(config.cmd[1])))
  local version = run(with_args(config.cmd, { '--version' }), config.env, 20000)
  if version and version.code == 0 then
    health.ok('version: ' .. vim.trim(version.stdout or ''))
  else
    health.warn('`--version` failed: ' .. vim.trim(version and (version.stderr or '') or 'did not run'))
  end
  if tl.state.dead then
    health.error('the sidecar died in this Neovim', { ':Threadline restart' })
  elseif tl.server_info() then
    health.ok('running in this Neovim')
  else
    health.info('not started yet (it starts with the first :Threadline command)')
  end
  local answer, why = initialize(config)
  if answer then
    local agent = type(answer.agentInfo) == 'table' and answer.agentInfo or {}
    health.ok(('initialize: %s %s, protocol %s'):format(
      agent.name or '?',
      agent.version or '?',
      tostring(answer.protocolVersion)
    ))
  else
    health.error('initialize failed: ' .. (why or '?'), {
      'Run the command in a terminal to see what it prints; docs/editors.md lists what it needs',
    })
  end

  health.start('threadline: model')
  local models = run(with_args(config.cmd, { 'models', '--json', '--timeout', '3' }), config.env, 20000)
  if not models or models.code ~= 0 then
    health.error('`threadline models` failed: ' .. vim.trim(models and (models.stderr or '') or 'did not run'))
  else
    local ok, data = pcall(vim.json.decode, models.stdout)
    local rows = ok and type(data) == 'table' and data.models or {}
    local want = config.model
    local row
    for _, r in ipairs(rows) do
      if (want and r.model == want) or (not want and r.default) then
        row = r
      end
    end
    if not row then
      if want and vim.startswith(want, 'scripted:') then
        health.info('model: ' .. want .. ' (a test model)')
      else
        health.warn(('model %s is not configured'):format(want or '(default)'), { 'threadline models lists the models' })
      end
    elseif row.reachable then
      health.ok(('model %s: reachable (%s)'):format(row.model, row.detail or ''))
    else
      health.error(('model %s: not reachable: %s'):format(row.model, row.detail or '?'), {
        'Set the key or endpoint it needs (docs/editors.md), or pick another model: setup({ model = ... })',
      })
    end
  end

  health.start('threadline: data folder')
  local dir = data_dir(config.env)
  vim.fn.mkdir(dir, 'p')
  local probe = dir .. '/.checkhealth'
  local f = io.open(probe, 'w')
  if f then
    f:close()
    os.remove(probe)
    health.ok('writable: ' .. dir)
  else
    health.error('not writable: ' .. dir, { 'Set THREADLINE_HOME (setup({ env = { THREADLINE_HOME = ... } }))' })
  end
end

return M
