--- Shared by the specs: a fresh sidecar home per test, scripted models, waiting.
local H = {}

local here = vim.fn.fnamemodify(debug.getinfo(1, 'S').source:sub(2), ':p')
local root = vim.fs.dirname(vim.fs.dirname(vim.fs.normalize(here)))
local repo = vim.fs.dirname(vim.fs.dirname(root)) -- editors/neovim -> repo root

--- The sidecar command: $THREADLINE_CMD (space separated), else the repo's venv.
function H.cmd()
  local env = os.getenv('THREADLINE_CMD')
  if env and env ~= '' then
    return vim.split(env, ' ', { trimempty = true })
  end
  return { repo .. '/.venv/bin/python', '-m', 'threadline', 'serve' }
end

---@param ... table[] rounds of scripted steps
function H.scripted(...)
  return 'scripted:' .. vim.json.encode({ rounds = { ... } })
end

--- setup() with a fresh THREADLINE_HOME; returns the plugin module and the home.
---@param opts? table
function H.start(opts)
  local home = vim.fn.tempname()
  vim.fn.mkdir(home, 'p')
  local tl = require('threadline')
  tl.stop()
  tl.setup(vim.tbl_deep_extend('force', {
    cmd = H.cmd(),
    env = { THREADLINE_HOME = home, THREADLINE_LOG_LEVEL = 'WARNING' },
    cwd = home,
    open = 'current',
  }, opts or {}))
  H.home = home
  return tl, home
end

--- Keep `tbl[key]` as it is now: the test may replace it, and H.stop() puts it back.
---@param tbl table
---@param key string
function H.keep(tbl, key)
  H.kept = H.kept or {}
  table.insert(H.kept, { tbl = tbl, key = key, value = tbl[key] })
end

--- Record what `vim.notify` is given ({msg, level}) instead of showing it, until H.stop().
---@return {msg: string, level: integer?}[]
function H.record_notify()
  local seen = {}
  H.keep(vim, 'notify')
  vim.notify = function(msg, level)
    table.insert(seen, { msg = msg, level = level })
  end
  return seen
end

--- A second editor on the same home: its own `threadline serve`, driven over the
--- plugin's rpc module (as another Neovim's plugin would drive it). Stopped by H.stop().
---@return {updates: table[], call: fun(method: string, params: table, timeout?: integer): any, request: fun(method: string, params: table, cb?: fun(err: table?, result: any))}
function H.other_editor()
  local updates = {}
  local conn = require('threadline.rpc').start({
    cmd = H.cmd(),
    env = { THREADLINE_HOME = H.home, THREADLINE_LOG_LEVEL = 'WARNING' },
    cwd = H.home,
    capabilities = { session = { compaction = vim.empty_dict() } },
  }, {
    notification = function(method, params)
      if method == 'session/update' then
        table.insert(updates, params.update)
      end
    end,
    request = function()
      return nil, { code = -32601, message = 'not served by this test editor' }
    end,
  })
  H.others = H.others or {}
  table.insert(H.others, conn)
  local other = { updates = updates }
  function other.request(method, params, cb)
    conn:request(method, params, cb)
  end
  function other.call(method, params, timeout)
    local done, err, result = false, nil, nil
    conn:request(method, params, function(e, r)
      done, err, result = true, e, r
    end)
    H.wait(function()
      return done
    end, method .. ' in the other editor', timeout)
    assert(not err, vim.inspect(err))
    return result
  end
  --- The text the other editor was shown streaming, so far.
  function other.streamed()
    local out = {}
    for _, u in ipairs(updates) do
      if u.sessionUpdate == 'agent_message_chunk' then
        table.insert(out, u.content.text)
      end
    end
    return table.concat(out)
  end
  return other
end

function H.stop()
  for _, conn in ipairs(H.others or {}) do
    conn:stop(2000)
  end
  H.others = {}
  require('threadline').stop()
  -- Chat buffers are bound to sessions of this sidecar's home: they go with it.
  for sid in pairs(require('threadline.chat').all()) do
    require('threadline.chat').drop(sid)
  end
  if H.home then
    vim.fn.delete(H.home, 'rf')
    H.home = nil
  end
  for _, id in ipairs(H.autocmds or {}) do
    pcall(vim.api.nvim_del_autocmd, id)
  end
  H.autocmds = {}
  for i = #(H.kept or {}), 1, -1 do -- the latest first: the first kept is the original
    local k = H.kept[i]
    k.tbl[k.key] = k.value
  end
  H.kept = {}
end

--- H.stop() for specs that open files: their buffers are wiped too.
function H.stop_and_wipe()
  vim.cmd('silent! %bwipeout!')
  H.stop()
end

--- Wait for `cond()` (processing events meanwhile) or fail with `what`.
function H.wait(cond, what, timeout)
  local ok = vim.wait(timeout or 20000, cond, 10)
  assert(ok, 'timed out waiting for ' .. (what or 'a condition'))
end

--- Record `User {pattern}` autocommand data into a list.
function H.record(pattern)
  local seen = {}
  H.autocmds = H.autocmds or {}
  table.insert(
    H.autocmds,
    vim.api.nvim_create_autocmd('User', {
      pattern = pattern,
      callback = function(ev)
        table.insert(seen, ev.data)
      end,
    })
  )
  return seen
end

--- Wait until `list` (a recording) holds `n` entries.
---@param list table
---@param n integer
---@param what? string
function H.wait_for(list, n, what)
  H.wait(function()
    return #list >= n
  end, what)
end

--- Do `action` (an Ex command line, or a function) and wait for the turn it starts to
--- end; returns the recorded `ThreadlineTurnDone` data (which goes on recording).
---@param action string|fun()
---@param what? string
---@return table[]
function H.turn(action, what)
  local done = H.record('ThreadlineTurnDone')
  if type(action) == 'string' then
    vim.cmd(action)
  else
    action()
  end
  H.wait_for(done, 1, what or 'the turn')
  return done
end

--- Answer every `vim.ui.select` until H.stop(), later (as a real picker does):
--- `choose(items, opts)` gives the item (nil dismisses). Returns the questions asked,
--- `{items, opts}` and whatever `note(opts)` adds (what the screen showed meanwhile).
---@param choose fun(items: any[], opts: table): any
---@param note? fun(opts: table): table
---@return table[]
function H.answer_select(choose, note)
  local asked = {}
  H.keep(vim.ui, 'select')
  vim.ui.select = function(items, opts, on_choice)
    table.insert(asked, vim.tbl_extend('force', { items = items, opts = opts }, note and note(opts) or {}))
    vim.schedule(function()
      on_choice(choose(items, opts))
    end)
  end
  return asked
end

--- A `choose` for H.answer_select: the permission option of `kind` (none: dismissed).
---@param kind string
function H.option(kind)
  return function(items)
    for _, item in ipairs(items) do
      if type(item) == 'table' and item.kind == kind then
        return item
      end
    end
  end
end

--- Start a session with `model` and wait until it is current.
function H.new_session(tl, model)
  local sid
  tl.new(model, function(id)
    sid = id
  end)
  H.wait(function()
    return sid ~= nil
  end, 'session/new')
  return sid
end

--- The whole text of a buffer.
function H.text(buf)
  return table.concat(vim.api.nvim_buf_get_lines(buf, 0, -1, true), '\n')
end

--- `session/history` of a session, synchronously.
function H.history(tl, sid)
  local result, err = tl.call('session/history', { sessionId = sid })
  assert(not err, vim.inspect(err))
  return result.messages
end

function H.text_of(message)
  local out = {}
  for _, b in ipairs(message.content) do
    if b.type == 'text' then
      table.insert(out, b.text)
    end
  end
  return table.concat(out)
end

return H
