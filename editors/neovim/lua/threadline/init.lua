--- threadline.nvim: chat with a Threadline sidecar from Neovim.
---
--- One sidecar per Neovim (started on first use) and one chat buffer per session.
--- Every chat buffer is bound to its session: a command given in a chat buffer acts on
--- that buffer's session; given elsewhere, on the session of the chat buffer used last.
--- Everything is asynchronous; the `User` autocommands `ThreadlineUpdate` (every
--- `session/update`, data = {sessionId, update}) and `ThreadlineTurnDone` (data =
--- {sessionId, stopReason, usage, error}) let other code (and the tests) follow along.
---
--- Layout: this module holds the state and the API; `commands` the `:Threadline`
--- command, `updates` the streaming into buffers, `chat` the buffers, `rpc` the
--- connection, `requests` the sidecar's requests (permission, tools, files),
--- `editor_tools` the built-in tools, `review` the diff of a proposed edit, `health`
--- `:checkhealth threadline`.
local config = require('threadline.config')
local rpc = require('threadline.rpc')
local chat = require('threadline.chat')
local requests = require('threadline.requests')
local updates = require('threadline.updates')
local editor_tools = require('threadline.editor_tools')
local util = require('threadline.util')

local M = {}

local notify, fire, describe_error = util.notify, util.fire, util.describe_error

---@class threadline.State
---@field conn threadline.Rpc?
---@field session_id string? the session of the chat buffer used last
---@field model string?
---@field running table<string, boolean> sessions with a turn in flight
---@field phase table<string, string> what a running session is doing: thinking, answering, tool, compacting
---@field last table<string, table> the last turn's outcome per session
---@field pending table<string, table[]> context attached to a session's next prompt
---@field dead {code: integer, signal: integer}? the sidecar died (until restarted)
local state = { conn = nil, session_id = nil, model = nil, running = {}, phase = {}, last = {}, pending = {} }
M.state = state

-- -- the sidecar ------------------------------------------------------------------------

local function capabilities()
  local fs = config.options.fs
  -- `session.compaction`: show compactions as ACP's `compaction_update`.
  return { fs = { readTextFile = fs, writeTextFile = fs }, session = { compaction = vim.empty_dict() } }
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

--- The sidecar died while this Neovim used it: say so in every buffer with a running
--- turn (what streamed stays), and once in the messages.
---@param code integer
---@param signal integer
local function on_death(code, signal)
  state.dead = { code = code, signal = signal }
  local how = signal ~= 0 and ('was killed by signal %d'):format(signal) or ('exited with code %d'):format(code)
  for sid in pairs(state.running) do
    state.running[sid] = nil
    updates.set_phase(state, sid, nil)
    local c = chat.all()[sid]
    if c then
      c:set_status(nil)
      c:close_segment()
      c:note(('[the sidecar %s; :Threadline restart starts it again]'):format(how), 'ThreadlineError')
    end
    fire('ThreadlineTurnDone', { sessionId = sid, error = 'the sidecar ' .. how })
  end
  notify(('the sidecar %s; run :Threadline restart'):format(how), vim.log.levels.ERROR)
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
      on_death(code, signal or 0)
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

-- -- sessions ---------------------------------------------------------------------------

--- The session a command acts on: the one given, else the current buffer's, else the
--- one used last.
---@param session_id? string
---@return string?
function M.target(session_id)
  if session_id and session_id ~= '' then
    return session_id
  end
  local own = vim.b[vim.api.nvim_get_current_buf()].threadline_session
  return own or state.session_id
end

local function switch_to(session_id)
  state.session_id = session_id
  local c = chat.get(session_id)
  c:show(config.options.open, config.options.reuse_window)
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

local function tool_wire(t)
  return {
    name = t.name,
    description = t.description or '',
    inputSchema = t.input_schema or { type = 'object', properties = vim.empty_dict() },
    needsApproval = t.needs_approval or false,
  }
end

--- Start a new session (and show its chat buffer).
---@param model? string
---@param callback? fun(session_id: string)
function M.new(model, callback)
  local meta = vim.deepcopy(config.options.session or {})
  meta.model = model or config.options.model
  local tools = M.tools()
  if #tools > 0 then
    meta.tools = meta.tools or {}
    for _, t in ipairs(tools) do
      table.insert(meta.tools, tool_wire(t))
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
    local c = switch_to(result.sessionId)
    local warning = type(result._meta) == 'table' and type(result._meta.threadline) == 'table' and result._meta.threadline.warning
    if type(warning) == 'string' then
      notify(warning, vim.log.levels.WARN)
      c:note('[' .. warning .. ']', 'ThreadlineError')
    end
    if callback then
      callback(result.sessionId)
    end
  end)
end

--- Attach context (a selection, a buffer) to a session's next prompt; with a
--- `question`, ask it at once.
---@param blocks table[] ACP `resource` blocks
---@param session_id? string
---@param question? string
function M.attach(blocks, session_id, question)
  local function add(sid)
    state.pending[sid] = vim.list_extend(state.pending[sid] or {}, blocks)
    if question and vim.trim(question) ~= '' then
      M.ask(question, sid)
      return
    end
    local c = switch_to(sid)
    local labels = vim.tbl_map(require('threadline.context').label, blocks)
    c:note('[attached ' .. table.concat(labels, ', ') .. ': it goes with your next prompt]', 'ThreadlineContext')
  end
  local sid = M.target(session_id)
  if sid then
    add(sid)
  else
    M.new(nil, add)
  end
end

--- Send a prompt (a new session is started if there is none). `#buffer` and
--- `@path` in the text attach that buffer or file.
---@param text string
---@param session_id? string default: the current buffer's session, else the last used
function M.ask(text, session_id)
  if not text or vim.trim(text) == '' then
    notify('nothing to ask', vim.log.levels.WARN)
    return
  end
  if state.dead then
    notify('the sidecar died: run :Threadline restart (your prompt was not sent)', vim.log.levels.ERROR)
    return
  end
  local sid = M.target(session_id)
  if not sid then
    M.new(nil, function(id)
      M.ask(text, id)
    end)
    return
  end
  if state.running[sid] then
    notify('a turn is already running (interrupt it with :Threadline interrupt)', vim.log.levels.WARN)
    return
  end
  local context = require('threadline.context')
  local blocks = vim.list_extend(state.pending[sid] or {}, context.references(text))
  state.pending[sid] = nil
  local c = switch_to(sid)
  c:user(text, vim.tbl_map(context.label, blocks))
  c:set_status('thinking…')
  state.running[sid] = true
  updates.set_phase(state, sid, 'thinking')
  local prompt = { { type = 'text', text = text } }
  vim.list_extend(prompt, blocks)
  M.request('session/prompt', { sessionId = sid, prompt = prompt }, function(err, result)
    if not state.running[sid] then
      return -- the sidecar died meanwhile: already reported
    end
    state.running[sid] = nil
    updates.set_phase(state, sid, nil)
    c:set_status(nil)
    c:close_segment()
    local outcome = { sessionId = sid }
    if err then
      c:note('[error: ' .. describe_error(err) .. ']', 'ThreadlineError')
      outcome.error = describe_error(err)
    else
      outcome.stopReason = result.stopReason
      outcome.usage = result.usage
      if result.stopReason == 'cancelled' then
        c:note('[interrupted]')
      elseif result.stopReason ~= 'end_turn' then
        c:note('[stopped: ' .. tostring(result.stopReason):gsub('_', ' ') .. ']')
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

local compose_count = 0

--- A buffer to write a multi-line prompt in, under the current window; `:w` (or
--- `<C-s>`) sends it to the session and closes the buffer, `:q!` drops it.
---@param session_id? string
---@return integer buf
function M.compose(session_id)
  local sid = M.target(session_id)
  compose_count = compose_count + 1
  local buf = vim.api.nvim_create_buf(false, true)
  vim.api.nvim_buf_set_name(buf, ('threadline://prompt/%s/%d'):format(sid or 'new', compose_count))
  vim.bo[buf].buftype = 'acwrite'
  vim.bo[buf].bufhidden = 'wipe'
  vim.bo[buf].swapfile = false
  vim.bo[buf].filetype = 'markdown'
  vim.cmd('belowright 8split')
  local win = vim.api.nvim_get_current_win()
  vim.api.nvim_win_set_buf(win, buf)
  local function send()
    local text = table.concat(vim.api.nvim_buf_get_lines(buf, 0, -1, false), '\n')
    vim.bo[buf].modified = false
    if vim.api.nvim_win_is_valid(win) and #vim.api.nvim_tabpage_list_wins(0) > 1 then
      vim.api.nvim_win_close(win, true)
    end
    if vim.api.nvim_buf_is_valid(buf) then
      vim.api.nvim_buf_delete(buf, { force = true })
    end
    vim.cmd('stopinsert')
    if vim.trim(text) ~= '' then
      M.ask(text, sid)
    end
  end
  vim.api.nvim_create_autocmd('BufWriteCmd', { buffer = buf, callback = send })
  vim.keymap.set({ 'n', 'i' }, '<C-s>', send, { buffer = buf, desc = 'Threadline: send the prompt' })
  return buf
end

--- Stop a session's running turn; its prompt answers `cancelled`.
---@param session_id? string
function M.interrupt(session_id)
  local sid = M.target(session_id)
  if not sid then
    notify('no session', vim.log.levels.WARN)
    return
  end
  if state.dead then
    notify('the sidecar is not running (it died): nothing to interrupt; :Threadline restart', vim.log.levels.WARN)
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

--- Branch a session at `message_id` (default: all of it) and switch to the branch.
---@param message_id? string
---@param session_id? string
function M.fork(message_id, session_id)
  local sid = M.target(session_id)
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

--- Summarise a session's older history.
---@param instructions? string
---@param session_id? string
function M.compact(instructions, session_id)
  local sid = M.target(session_id)
  if not sid then
    notify('no session to compact', vim.log.levels.WARN)
    return
  end
  local params = { sessionId = sid }
  if instructions and instructions ~= '' then
    params.instructions = instructions
  end
  M.request('session/compact', params, function(err, r)
    local c = chat.get(sid)
    c:set_status(state.running[sid] and 'thinking…' or nil)
    if err then
      notify('compact: ' .. describe_error(err), vim.log.levels.ERROR)
      return
    end
    c:note(
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

---@param s table a `session/list` entry
---@return string
local function session_label(s)
  local meta = type(s._meta) == 'table' and s._meta or {}
  return ('%s%s  %s  %s msgs  %s'):format(
    s.sessionId == state.session_id and '* ' or '  ',
    s.sessionId,
    (s.updatedAt or ''):sub(1, 16):gsub('T', ' '),
    meta.messageCount or '?',
    s.title or ''
  )
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
      format_item = session_label,
    }, function(choice)
      if choice then
        M.resume(choice.sessionId)
      end
    end)
  end)
end

--- Stored session ids (for completion), waiting at most a second.
---@return string[]
function M.session_ids()
  if not M.server_info() then
    return {}
  end
  local result = M.call('session/list', vim.empty_dict(), 1000)
  return vim.tbl_map(function(s)
    return s.sessionId
  end, result and result.sessions or {})
end

--- Delete a session (after a confirmation) and wipe its buffer.
---@param session_id? string
function M.delete(session_id)
  local sid = M.target(session_id)
  if not sid then
    notify('no session to delete', vim.log.levels.WARN)
    return
  end
  vim.ui.select({ 'Delete', 'Keep' }, {
    prompt = ('Threadline: delete session %s and its history?'):format(sid),
    kind = 'threadline.delete',
  }, function(choice)
    if choice ~= 'Delete' then
      return
    end
    M.request('session/delete', { sessionId = sid }, function(err)
      if err then
        notify('delete: ' .. describe_error(err), vim.log.levels.ERROR)
        return
      end
      if state.session_id == sid then
        state.session_id = nil
      end
      state.pending[sid] = nil
      chat.drop(sid)
      notify('deleted ' .. sid)
      fire('ThreadlineDeleted', { sessionId = sid })
    end)
  end)
end

--- Change the model of a session (a picker without `model`).
---@param model? string
---@param session_id? string
function M.set_model(model, session_id)
  local sid = M.target(session_id)
  if not sid then
    notify('no session', vim.log.levels.WARN)
    return
  end
  local function apply(choice)
    M.request(
      'session/set_config_option',
      { sessionId = sid, configId = 'model', value = choice },
      function(err, result)
        if err then
          notify('model: ' .. describe_error(err), vim.log.levels.ERROR)
          return
        end
        chat.get(sid):note('[model: ' .. choice .. ']')
        local meta = type(result) == 'table' and type(result._meta) == 'table' and result._meta.threadline
        if type(meta) == 'table' and type(meta.warning) == 'string' then
          -- A missing key is said when the model is chosen, not at the first prompt.
          notify(meta.warning, vim.log.levels.WARN)
          chat.get(sid):note('[' .. meta.warning .. ']', 'ThreadlineError')
        end
        fire('ThreadlineModel', { sessionId = sid, model = choice })
      end
    )
  end
  if model and model ~= '' then
    apply(model)
    return
  end
  vim.ui.select(M.models(), { prompt = 'Threadline model', kind = 'threadline.model' }, function(choice)
    if choice then
      apply(choice)
    end
  end)
end

--- Start the sidecar again (after it died) and reattach every open chat buffer.
function M.restart()
  if state.conn then
    state.conn.stopping = true
    state.conn:stop(1000)
  end
  state.conn, state.dead = nil, nil
  state.running, state.phase = {}, {}
  local open = chat.all()
  for sid, c in pairs(open) do
    M.request('session/resume', { sessionId = sid, cwd = config.options.cwd or vim.fn.getcwd() }, function(err)
      if err then
        c:note('[could not reattach: ' .. describe_error(err) .. ']', 'ThreadlineError')
      else
        c:note('[the sidecar was restarted]')
      end
    end)
  end
  if next(open) == nil then
    M.request('session/list', vim.empty_dict())
  end
  notify('sidecar restarted')
end

--- What a session is doing, for a statusline: '' when idle, else e.g. `⋯ thinking`.
---@param session_id? string default: the current buffer's session
---@return string
function M.status(session_id)
  if state.dead then
    return '✗ threadline sidecar died'
  end
  local sid = M.target(session_id)
  local phase = sid and state.phase[sid]
  if not phase then
    return ''
  end
  local label = { thinking = '⋯ thinking', answering = '✎ answering', tool = '⚙ running a tool', compacting = '⋯ compacting' }
  return label[phase] or phase
end

--- What the chat buffer shows for an assistant message of the current session.
---@param message_id string
---@return string?
function M.message_text(message_id)
  local sid = M.target()
  local c = sid and chat.all()[sid]
  return c and c:message_text(message_id) or nil
end

--- A session's chat buffer (default: the current session's; nil before the first).
---@param session_id? string
---@return integer?
function M.buffer(session_id)
  local sid = session_id or state.session_id
  local c = sid and chat.all()[sid]
  return c and c.buf or nil
end

--- A floating window with a tool call's whole arguments and result.
---@param buf integer
function M.details(buf)
  local c = chat.of_buffer(buf)
  local entry = c and c:tool_at(vim.api.nvim_win_get_cursor(0)[1] - 1)
  if not entry then
    return false
  end
  local lines = { entry.title .. ' (' .. entry.status .. ')', '', 'arguments:' }
  vim.list_extend(lines, vim.split(vim.inspect(entry.input or {}), '\n'))
  table.insert(lines, '')
  table.insert(lines, 'result:')
  vim.list_extend(lines, vim.split(entry.output ~= '' and entry.output or '(none yet)', '\n'))
  vim.lsp.util.open_floating_preview(lines, 'markdown', { border = 'rounded', focus_id = 'threadline.tool' })
  return true
end

--- Buffer-local keys of a chat buffer; each acts on that buffer's own session.
---@param buf integer
function M._keys(buf)
  if vim.b[buf].threadline_keys then
    return
  end
  vim.b[buf].threadline_keys = true
  local sid = vim.b[buf].threadline_session
  local keys = config.options.keys
  if keys.interrupt then
    vim.keymap.set('n', keys.interrupt, function()
      M.interrupt(sid)
    end, { buffer = buf, desc = 'Threadline: interrupt the turn' })
  end
  if keys.ask then
    vim.keymap.set('n', keys.ask, function()
      vim.ui.input({ prompt = 'Ask: ' }, function(text)
        if text then
          M.ask(text, sid)
        end
      end)
    end, { buffer = buf, desc = 'Threadline: ask' })
  end
  if keys.compose then
    vim.keymap.set('n', keys.compose, function()
      M.compose(sid)
      vim.cmd('startinsert')
    end, { buffer = buf, desc = 'Threadline: write a multi-line prompt' })
  end
  if keys.details then
    vim.keymap.set('n', keys.details, function()
      if not M.details(buf) then
        vim.cmd('normal! ' .. vim.api.nvim_replace_termcodes(keys.details, true, false, true))
      end
    end, { buffer = buf, desc = "Threadline: the tool call's arguments and result" })
  end
end

--- Stop the sidecar (it is started again on the next command).
function M.stop()
  if state.conn then
    state.conn.stopping = true
    state.conn:stop()
  end
  state.conn, state.session_id, state.dead = nil, nil, nil
  state.running, state.last, state.phase, state.pending = {}, {}, {}, {}
end

--- `:Threadline {sub} [args]` (see `threadline.commands`).
---@param line string
---@param range? {first: integer, last: integer}
function M.command(line, range)
  require('threadline.commands').run(line, range)
end

---@param lead string
---@param line string
---@return string[]
function M.complete(lead, line)
  return require('threadline.commands').complete(lead, line)
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
        state.conn.stopping = true
        state.conn:stop(1000)
      end
    end,
  })
  vim.api.nvim_create_autocmd({ 'BufEnter', 'WinEnter' }, {
    group = group,
    callback = function(ev)
      local sid = vim.b[ev.buf].threadline_session
      if sid then
        state.session_id = sid
      else
        editor_tools.track(ev.buf, vim.api.nvim_get_current_win())
      end
    end,
  })
end

return M
