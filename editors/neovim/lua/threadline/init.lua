--- threadline.nvim: chat with a Threadline sidecar from Neovim.
---
--- One sidecar per Neovim (started on first use), one chat buffer per session, one
--- current session that `:Threadline ask` talks to. Everything is asynchronous; the
--- `User` autocommands `ThreadlineUpdate` (every `session/update`, data = {sessionId,
--- update}) and `ThreadlineTurnDone` (data = {sessionId, stopReason, usage, error})
--- let other code (and the tests) follow along.
local config = require('threadline.config')
local rpc = require('threadline.rpc')
local chat = require('threadline.chat')
local requests = require('threadline.requests')

local M = {}

---@class threadline.State
---@field conn threadline.Rpc?
---@field session_id string?
---@field model string?
---@field running table<string, boolean> sessions with a turn in flight
---@field last table<string, table> the last turn's outcome per session
local state = { conn = nil, session_id = nil, model = nil, running = {}, last = {} }
M.state = state

local function notify(msg, level)
  vim.notify('threadline: ' .. msg, level or vim.log.levels.INFO)
end

local function fire(pattern, data)
  vim.api.nvim_exec_autocmds('User', { pattern = pattern, modeline = false, data = data })
end

local function describe_error(err)
  if type(err) ~= 'table' then
    return tostring(err)
  end
  local reason = type(err.data) == 'table' and err.data.reason or nil
  return ('%s (%s)%s'):format(err.message or '?', err.code or '?', reason and (': ' .. reason) or '')
end

-- -- session/update --------------------------------------------------------------------

local function block_text(content)
  if type(content) ~= 'table' then
    return ''
  end
  if content.type then
    content = { content }
  end
  local out = {}
  for _, c in ipairs(content) do
    local inner = c.type == 'content' and c.content or c
    if type(inner) == 'table' and type(inner.text) == 'string' then
      table.insert(out, inner.text)
    end
  end
  return table.concat(out)
end

---@param params {sessionId: string, update: table}
local function on_update(params)
  local sid, u = params.sessionId, params.update or {}
  fire('ThreadlineUpdate', { sessionId = sid, update = u })
  local kind = u.sessionUpdate
  if not sid or not state.running[sid] then
    return -- replays and announcements: the buffer is filled from history instead
  end
  local c = chat.get(sid)
  if kind == 'agent_message_chunk' then
    c:chunk(u.messageId or 'answer', block_text(u.content))
  elseif kind == 'tool_call' then
    c:tool(u.toolCallId, u.title or 'tool', u.status or 'pending')
  elseif kind == 'tool_call_update' then
    local cancelled = type(u._meta) == 'table' and type(u._meta.threadline) == 'table' and u._meta.threadline.cancelled
    local status = cancelled and 'failed' or u.status or 'in_progress'
    c:tool(u.toolCallId, c:tool_title(u.toolCallId) or u.toolCallId, status, block_text(u.content))
  elseif kind == 'compaction_update' and u.status ~= 'in_progress' then
    c:note(('[compaction %s]'):format(u.status))
  end
end

-- -- the sidecar ------------------------------------------------------------------------

local function capabilities()
  local fs = config.options.fs
  -- `session.compaction`: show compactions as ACP's `compaction_update`.
  return { fs = { readTextFile = fs, writeTextFile = fs }, session = { compaction = vim.empty_dict() } }
end

---@return threadline.Rpc
local function connection()
  if state.conn and not state.conn.closed then
    return state.conn
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
        on_update(params)
      end
    end,
    request = requests.handle,
    exit = function(code)
      if state.conn ~= this then
        return -- an earlier sidecar, already replaced: nothing of ours is running there
      end
      for sid in pairs(state.running) do
        state.running[sid] = nil
        fire('ThreadlineTurnDone', { sessionId = sid, error = 'the sidecar exited' })
      end
      if code ~= 0 then
        notify(('the sidecar exited with code %d'):format(code), vim.log.levels.WARN)
      end
    end,
  }, function(err)
    if err then
      notify('initialize failed: ' .. describe_error(err), vim.log.levels.ERROR)
    end
  end)
  if not ok then
    error(('threadline: cannot start %s: %s'):format(table.concat(config.options.cmd, ' '), conn), 0)
  end
  this = conn
  state.conn = conn
  return conn
end

--- Raw request to the sidecar (any method in PROTOCOL.md); `callback(err, result)`.
---@param method string
---@param params table?
---@param callback? fun(err: table?, result: any)
function M.request(method, params, callback)
  connection():request(method, params, callback)
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

-- -- sessions ---------------------------------------------------------------------------

local function current_chat()
  return state.session_id and chat.get(state.session_id) or nil
end

local function switch_to(session_id)
  state.session_id = session_id
  local c = chat.get(session_id)
  c:show(config.options.open)
  M._keys(c.buf)
  return c
end

local function replay_history(session_id, after)
  M.request('session/history', { sessionId = session_id }, function(err, result)
    if err then
      notify('history: ' .. describe_error(err), vim.log.levels.ERROR)
      return
    end
    local c = switch_to(session_id)
    c:replay(result.messages or {})
    if after then
      after(c)
    end
  end)
end

--- Start a new session (and show its chat buffer).
---@param model? string
---@param callback? fun(session_id: string)
function M.new(model, callback)
  local meta = vim.deepcopy(config.options.session or {})
  meta.model = model or config.options.model
  if #config.options.tools > 0 then
    meta.tools = meta.tools or {}
    for _, t in ipairs(config.options.tools) do
      table.insert(meta.tools, {
        name = t.name,
        description = t.description or '',
        inputSchema = t.input_schema or { type = 'object', properties = vim.empty_dict() },
        needsApproval = t.needs_approval or false,
      })
    end
  end
  local params = { cwd = config.options.cwd or vim.fn.getcwd(), mcpServers = {} }
  if next(meta) then
    params._meta = { threadline = meta }
  end
  M.request('session/new', params, function(err, result)
    if err then
      notify('new session: ' .. describe_error(err), vim.log.levels.ERROR)
      return
    end
    state.model = result.models and result.models.currentModelId or meta.model
    switch_to(result.sessionId)
    if callback then
      callback(result.sessionId)
    end
  end)
end

--- Send a prompt to the current session (a new one is started if there is none).
---@param text string
function M.ask(text)
  if not text or vim.trim(text) == '' then
    notify('nothing to ask', vim.log.levels.WARN)
    return
  end
  if not state.session_id then
    M.new(nil, function()
      M.ask(text)
    end)
    return
  end
  local sid = state.session_id
  if state.running[sid] then
    notify('a turn is already running (interrupt it with :Threadline interrupt)', vim.log.levels.WARN)
    return
  end
  local c = switch_to(sid)
  c:user(text)
  state.running[sid] = true
  M.request('session/prompt', { sessionId = sid, prompt = { { type = 'text', text = text } } }, function(err, result)
    state.running[sid] = nil
    c:close_segment()
    local outcome = { sessionId = sid }
    if err then
      c:note('[error: ' .. describe_error(err) .. ']')
      outcome.error = describe_error(err)
    else
      outcome.stopReason = result.stopReason
      outcome.usage = result.usage
      if result.stopReason == 'cancelled' then
        c:note('[interrupted]')
      elseif result.stopReason ~= 'end_turn' then
        c:note('[stopped: ' .. tostring(result.stopReason) .. ']')
      end
      local u = result.usage
      if type(u) == 'table' then
        c:note(('tokens in %s · out %s'):format(u.inputTokens or 0, u.outputTokens or 0))
      end
    end
    state.last[sid] = outcome
    fire('ThreadlineTurnDone', outcome)
  end)
end

--- Stop the current session's running turn; its prompt answers `cancelled`.
function M.interrupt()
  local sid = state.session_id
  if not sid then
    return
  end
  M.request('session/interrupt', { sessionId = sid }, function(err, result)
    if err then
      notify('interrupt: ' .. describe_error(err), vim.log.levels.ERROR)
    elseif not result.interrupted then
      notify('nothing was running')
    end
  end)
end

--- Branch the current session at `message_id` (default: all of it) and switch to it.
---@param message_id? string
function M.fork(message_id)
  local sid = state.session_id
  if not sid then
    notify('no session to fork', vim.log.levels.WARN)
    return
  end
  local params = { sessionId = sid, cwd = config.options.cwd or vim.fn.getcwd() }
  if message_id and message_id ~= '' then
    params.messageId = message_id
  end
  M.request('session/fork', params, function(err, result)
    if err then
      notify('fork: ' .. describe_error(err), vim.log.levels.ERROR)
      return
    end
    replay_history(result.sessionId, function(c)
      c:note(('[forked from %s at %s]'):format(sid, result.forkedAtMessageId or 'the end'))
      fire('ThreadlineForked', result)
    end)
  end)
end

--- Summarise the current session's older history.
---@param instructions? string
function M.compact(instructions)
  local sid = state.session_id
  if not sid then
    notify('no session to compact', vim.log.levels.WARN)
    return
  end
  local params = { sessionId = sid }
  if instructions and instructions ~= '' then
    params.instructions = instructions
  end
  M.request('session/compact', params, function(err, r)
    if err then
      notify('compact: ' .. describe_error(err), vim.log.levels.ERROR)
      return
    end
    chat.get(sid):note(
      ('[compacted: %s → %s messages, %s → %s tokens]'):format(
        r.messagesBefore,
        r.messagesAfter,
        r.tokensBefore,
        r.tokensAfter
      )
    )
    fire('ThreadlineCompacted', r)
  end)
end

--- Reattach to a stored session and show its history.
---@param session_id string
function M.resume(session_id)
  if not session_id or session_id == '' then
    notify('resume needs a session id (see :Threadline sessions)', vim.log.levels.WARN)
    return
  end
  local params = { sessionId = session_id, cwd = config.options.cwd or vim.fn.getcwd() }
  M.request('session/resume', params, function(err)
    if err then
      notify('resume: ' .. describe_error(err), vim.log.levels.ERROR)
      return
    end
    replay_history(session_id, function()
      fire('ThreadlineResumed', { sessionId = session_id })
    end)
  end)
end

--- Pick a stored session with `vim.ui.select` and resume it.
function M.sessions()
  M.request('session/list', vim.empty_dict(), function(err, result)
    if err then
      notify('sessions: ' .. describe_error(err), vim.log.levels.ERROR)
      return
    end
    local items = result.sessions or {}
    if #items == 0 then
      notify('no stored sessions')
      return
    end
    vim.ui.select(items, {
      prompt = 'Threadline sessions',
      kind = 'threadline.sessions',
      format_item = function(s)
        local meta = type(s._meta) == 'table' and s._meta or {}
        return ('%s%s  %s  %s msgs  %s'):format(
          s.sessionId == state.session_id and '* ' or '  ',
          s.sessionId,
          (s.updatedAt or ''):sub(1, 16):gsub('T', ' '),
          meta.messageCount or '?',
          s.title or ''
        )
      end,
    }, function(choice)
      if choice then
        M.resume(choice.sessionId)
      end
    end)
  end)
end

--- What the chat buffer shows for an assistant message of the current session.
---@param message_id string
---@return string?
function M.message_text(message_id)
  local c = current_chat()
  return c and c:message_text(message_id) or nil
end

--- The current session's chat buffer (nil before the first session).
---@return integer?
function M.buffer()
  local c = current_chat()
  return c and c.buf or nil
end

--- Buffer-local keys of a chat buffer.
---@param buf integer
function M._keys(buf)
  if vim.b[buf].threadline_keys then
    return
  end
  vim.b[buf].threadline_keys = true
  local keys = config.options.keys
  if keys.interrupt then
    vim.keymap.set('n', keys.interrupt, M.interrupt, { buffer = buf, desc = 'Threadline: interrupt the turn' })
  end
  if keys.ask then
    vim.keymap.set('n', keys.ask, function()
      vim.ui.input({ prompt = 'Ask: ' }, function(text)
        if text then
          M.ask(text)
        end
      end)
    end, { buffer = buf, desc = 'Threadline: ask' })
  end
end

--- Stop the sidecar (it is started again on the next command).
function M.stop()
  if state.conn then
    state.conn:stop()
  end
  state.conn, state.session_id = nil, nil
  state.running, state.last = {}, {}
end

local SUBCOMMANDS = {
  new = function(arg)
    M.new(arg ~= '' and arg or nil)
  end,
  ask = M.ask,
  interrupt = M.interrupt,
  fork = M.fork,
  compact = M.compact,
  sessions = M.sessions,
  resume = M.resume,
}

--- `:Threadline {sub} [args]`
---@param line string
function M.command(line)
  local sub, arg = line:match('^%s*(%S+)%s*(.-)%s*$')
  local fn = SUBCOMMANDS[sub or '']
  if not fn then
    notify('usage: :Threadline new|ask {text}|interrupt|fork [id]|compact [text]|sessions|resume {id}', vim.log.levels.ERROR)
    return
  end
  fn(arg)
end

---@param lead string
---@param line string
---@return string[]
function M.complete(lead, line)
  if line:match('^%s*%S+%s+%S*$') then
    return vim.tbl_filter(function(s)
      return vim.startswith(s, lead)
    end, vim.tbl_keys(SUBCOMMANDS))
  end
  return {}
end

---@param opts? table see `threadline.Config`
function M.setup(opts)
  local previous = vim.deepcopy(config.options.cmd)
  config.set(opts)
  if state.conn and not vim.deep_equal(previous, config.options.cmd) then
    M.stop()
  end
  local group = vim.api.nvim_create_augroup('threadline', { clear = true })
  vim.api.nvim_create_autocmd('VimLeavePre', {
    group = group,
    callback = function()
      if state.conn then
        state.conn:stop(1000)
      end
    end,
  })
end

return M
