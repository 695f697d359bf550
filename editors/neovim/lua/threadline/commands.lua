--- What a person can do: the API the `:Threadline` subcommands, the chat buffers' keys
--- and other code call, each acting on a session (the one given, else the current chat
--- buffer's, else the one used last).
local config = require('threadline.config')
local chat = require('threadline.chat')
local editor_tools = require('threadline.editor_tools')
local sidecar = require('threadline.sidecar')
local state = require('threadline.state')
local updates = require('threadline.updates')
local util = require('threadline.util')

local M = {}

local notify, fire, describe_error = util.notify, util.fire, util.describe_error

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

--- The session a command acts on, or nil after saying there is none.
---@param session_id? string
---@param none string what to say when there is no session
---@return string?
local function session_or_say(session_id, none)
  local sid = M.target(session_id)
  if not sid then
    notify(none, vim.log.levels.WARN)
  end
  return sid
end

--- A request's callback that says a failure as `what: reason` and hands on a result.
---@param what string
---@param on_result fun(result: any)
---@return fun(err: table?, result: any)
local function answered(what, on_result)
  return function(err, result)
    if err then
      notify(what .. ': ' .. describe_error(err), vim.log.levels.ERROR)
      return
    end
    on_result(result)
  end
end

local function switch_to(session_id)
  state.session_id = session_id
  local c = chat.get(session_id)
  c:show(config.options.open, config.options.reuse_window)
  M.keys(c.buf)
  return c
end

local function replay_history(session_id, after)
  sidecar.request('session/history', { sessionId = session_id }, answered('history', function(result)
    local c = switch_to(session_id)
    c:replay(result.messages or {})
    if after then
      after(c)
    end
  end))
end

--- A stored session's `session/list` entry (title, `_meta.model`, `_meta.messageCount`),
--- or nil; the pages are walked until it is found.
---@param sid string
---@param callback fun(entry: table?)
function M.info(sid, callback)
  local function page(cursor)
    local params = cursor and { cursor = cursor } or vim.empty_dict()
    sidecar.request('session/list', params, function(err, result)
      if err or type(result) ~= 'table' then
        callback(nil)
        return
      end
      for _, s in ipairs(result.sessions or {}) do
        if s.sessionId == sid then
          callback(s)
          return
        end
      end
      if result.nextCursor then
        page(result.nextCursor)
      else
        callback(nil)
      end
    end)
  end
  page(nil)
end

---@param entry table? a `session/list` entry
---@param sid string
---@return string
local function titled(entry, sid)
  return entry and entry.title and entry.title ~= '' and ('“' .. entry.title .. '”') or ('session ' .. sid)
end

local syncing = {} ---@type table<string, fun(c: threadline.Chat?)[]> callbacks waiting for a sync

--- Whether a sync of `sid` is under way.
---@param sid string
---@return boolean
function M.syncing(sid)
  return syncing[sid] ~= nil
end

--- Bring a chat buffer up to date with its session: what `session/history` holds that
--- the buffer does not (turns made in another editor), then, with `watch`, a
--- `session/load`, after which a turn running in another editor streams into the
--- buffer (its partial answer first). Later changes stream by themselves (the
--- sidecar's standing subscription, see `threadline.updates`); a sync on entering the
--- buffer, on focus and before a prompt is a second net. A sync asked for while one
--- runs waits for it; one for a session whose turn runs here does nothing.
---@param sid string
---@param watch? boolean
---@param after? fun(c: threadline.Chat?)
function M.sync(sid, watch, after)
  local c = chat.all()[sid]
  if syncing[sid] then
    table.insert(syncing[sid], after or function() end)
    return
  end
  if not c or state.running[sid] then
    if after then
      after(c)
    end
    return
  end
  syncing[sid] = { after or function() end }
  local function finish()
    local waiting = syncing[sid] or {}
    syncing[sid] = nil
    c.replaying = nil
    c.synced = vim.uv.now()
    for _, fn in ipairs(waiting) do
      fn(c)
    end
  end
  sidecar.request('session/history', { sessionId = sid }, function(err, result)
    if err or not vim.api.nvim_buf_is_valid(c.buf) then
      finish()
      return
    end
    c:catch_up(result.messages or {})
    if not watch then
      finish()
      return
    end
    local params = { sessionId = sid, cwd = config.options.cwd or vim.fn.getcwd(), mcpServers = {} }
    -- Its replay (the updates before its answer) repeats what the buffer shows.
    c.replaying = true
    sidecar.request('session/load', params, finish)
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
  local tools = sidecar.tools()
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
  sidecar.request('session/new', params, answered('new session', function(result)
    state.model = result.models and result.models.currentModelId or meta.model
    require('threadline.work').take_modes(result.sessionId, result.modes)
    switch_to(result.sessionId)
    if callback then
      callback(result.sessionId)
    end
  end))
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

local BUSY = -32010
local refused
local asking = {} ---@type table<string, boolean> prompts waiting for their buffer to catch up

--- A prompt the sidecar refused because the session was busy in another editor (it
--- started there between this Neovim's last news of it and the prompt): it was not
--- stored, so its block leaves the buffer, and it is sent again to wait in the
--- session's queue; the running turn streams into the buffer meanwhile.
---@param sid string
---@param c threadline.Chat
---@param entry threadline.ChatMessage
---@param text string
---@param prompt table[] the prompt's blocks
---@param err table
refused = function(sid, c, entry, text, prompt, err)
  state.running[sid] = nil
  updates.set_phase(state, sid, nil)
  c:unsay(entry)
  local why = describe_error(err)
  c:note('[the session was busy: your prompt waits in the queue]')
  local outcome = { sessionId = sid, error = why, sent = false, queued = true }
  state.last[sid] = outcome
  fire('ThreadlineTurnDone', outcome)
  require('threadline.live').send(sid, prompt, 'queue', text)
  M.sync(sid, true)
end

--- Send a prompt (a new session is started if there is none). `#buffer` and
--- `@path` in the text attach that buffer or file. While the session works (here or
--- in another editor) the prompt waits in its queue and runs as the next turn, or
--- with `mode` 'steer' joins the running turn at its next model call.
---@param text string
---@param session_id? string default: the current buffer's session, else the last used
---@param mode? 'queue'|'steer'
function M.ask(text, session_id, mode)
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
  local context = require('threadline.context')
  local live = require('threadline.live')
  if state.running[sid] or asking[sid] or live.busy(sid) then
    local prompt = { { type = 'text', text = text } }
    vim.list_extend(prompt, vim.list_extend(state.pending[sid] or {}, context.references(text)))
    state.pending[sid], state.unsent[sid] = nil, nil
    live.send(sid, prompt, mode or 'queue', text)
    return
  end
  local blocks = vim.list_extend(vim.list_extend({}, state.pending[sid] or {}), context.references(text))
  state.pending[sid], state.unsent[sid] = nil, nil
  local c = switch_to(sid)
  asking[sid] = true
  updates.set_phase(state, sid, 'thinking')
  c:set_status('thinking…')
  -- Turns made in another editor first, so the prompt follows what the model saw.
  M.sync(sid, false, function()
    asking[sid] = nil
    if state.dead then
      return
    end
    state.running[sid] = true
    local entry = c:user(text, vim.tbl_map(context.label, blocks))
    c:set_status('thinking…')
    local prompt = { { type = 'text', text = text } }
    vim.list_extend(prompt, blocks)
    sidecar.request('session/prompt', { sessionId = sid, prompt = prompt }, function(err, result)
      if err and err.code == BUSY and state.running[sid] then
        refused(sid, c, entry, text, prompt, err)
        return
      end
      local meta = type(result) == 'table' and type(result._meta) == 'table' and result._meta.threadline
      if type(meta) == 'table' and type(meta.userMessageId) == 'string' then
        c:set_message_id(entry, meta.userMessageId)
      end
      updates.turn_done(state, sid, c, err, result)
    end)
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

--- Stop a session's running turn; its prompt answers `cancelled`. What waits in the
--- queue is held (`:Threadline queue resume` runs it), or with `clear` removed.
---@param session_id? string
---@param clear? boolean
function M.interrupt(session_id, clear)
  local sid = session_or_say(session_id, 'no session')
  if not sid then
    return
  end
  if state.dead then
    notify('the sidecar is not running (it died): nothing to interrupt; :Threadline restart', vim.log.levels.WARN)
    return
  end
  local params = { sessionId = sid }
  if clear then
    params._meta = { threadline = { clearQueue = true } }
  end
  -- This Neovim's own turn, or a queued prompt's turn its sidecar runs? (Asked now:
  -- the interrupt's answer may come after the turn's own end.)
  local a = state.activity[sid]
  local mine = state.running[sid] or (a ~= nil and a.state ~= 'idle' and a.owner ~= nil and a.owner.here)
  sidecar.request('session/interrupt', params, answered('interrupt', function(result)
    if not result.interrupted then
      notify('nothing was running')
    elseif not mine then
      -- The turn ran in another editor: its prompt there ends `cancelled`.
      notify('interrupted the turn running in another editor')
      local c = chat.all()[sid]
      if c then
        c:note('[interrupted the turn running in another editor]')
      end
    end
  end))
end

--- The message under the cursor of the current window, when it shows `sid`'s chat
--- and the cursor is above its last message (on the last, a fork takes all of it).
---@param sid string
---@return string?
local function message_under_cursor(sid)
  local c = chat.of_buffer(vim.api.nvim_get_current_buf())
  if not c or c.session_id ~= sid then
    return nil
  end
  local entry, last = c:message_at(vim.api.nvim_win_get_cursor(0)[1] - 1)
  return entry and not last and entry.id or nil
end

--- Branch a session at `message_id` (default: the message under the cursor in its
--- chat buffer, else all of it) and switch to the branch.
---@param message_id? string
---@param session_id? string
function M.fork(message_id, session_id)
  local sid = session_or_say(session_id, 'no session to fork')
  if not sid then
    return
  end
  local params = { sessionId = sid, cwd = config.options.cwd or vim.fn.getcwd() }
  if not message_id or message_id == '' then
    message_id = message_under_cursor(sid)
  end
  if message_id and message_id ~= '' then
    params.messageId = message_id
  end
  sidecar.request('session/fork', params, answered('fork', function(result)
    replay_history(result.sessionId, function(c)
      M.info(sid, function(parent)
        local at = ''
        local quote, role = nil, nil
        if params.messageId and result.forkedAtMessageId then
          quote, role = c:quote(result.forkedAtMessageId)
        end
        if quote then
          at = (role == 'user' and ' at your message “%s”' or ' at the answer “%s”'):format(quote)
        end
        c:note(('[forked from %s%s]'):format(titled(parent, sid), at))
        fire('ThreadlineForked', result)
      end)
    end)
  end))
end

--- Summarise a session's older history.
---@param instructions? string
---@param session_id? string
function M.compact(instructions, session_id)
  local sid = session_or_say(session_id, 'no session to compact')
  if not sid then
    return
  end
  local params = { sessionId = sid }
  if instructions and instructions ~= '' then
    params.instructions = instructions
  end
  state.compacting[sid] = true
  sidecar.request('session/compact', params, function(err, r)
    state.compacting[sid] = nil
    local c = chat.get(sid)
    c:set_status(state.running[sid] and 'thinking…' or nil)
    if err then
      notify('compact: ' .. describe_error(err), vim.log.levels.ERROR)
      return
    end
    local meta = type(r._meta) == 'table' and type(r._meta.threadline) == 'table' and r._meta.threadline or {}
    if meta.compacted == false then
      -- Nothing was committed: no numbers that look like a change.
      c:note('[nothing to compact yet' .. (meta.reason and (': ' .. meta.reason) or '') .. ']')
    else
      -- The summary itself came as the compaction's `completed` update.
      c:note(
        ('[compacted: %s → %s messages, %s → %s tokens]'):format(
          r.messagesBefore,
          r.messagesAfter,
          r.tokensBefore,
          r.tokensAfter
        )
      )
    end
    fire('ThreadlineCompacted', r)
  end)
end

--- Reattach to a stored session and show its history.
---@param session_id string
---@param after? fun(c: threadline.Chat?) called once the history is shown
function M.resume(session_id, after)
  if not session_id or session_id == '' then
    notify('resume needs a session id (see :Threadline sessions)', vim.log.levels.WARN)
    return
  end
  -- The history fills the buffer; then `session/load` (which also sets the session
  -- up, as `session/resume` does) streams a turn running in another editor.
  replay_history(session_id, function()
    M.sync(session_id, true, function(c)
      if after then
        after(c)
      end
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

--- Pick a stored session with `vim.ui.select` and resume it (`archived`: among the
--- archived sessions, which the list otherwise leaves out).
---@param archived? boolean
function M.sessions(archived)
  local params = archived and { _meta = { threadline = { archived = true } } } or vim.empty_dict()
  sidecar.request('session/list', params, answered('sessions', function(result)
    local items = result.sessions or {}
    if #items == 0 then
      notify(archived and 'no archived sessions' or 'no stored sessions')
      return
    end
    vim.ui.select(items, {
      prompt = archived and 'Threadline archived sessions' or 'Threadline sessions',
      kind = 'threadline.sessions',
      format_item = session_label,
    }, function(choice)
      if choice then
        M.resume(choice.sessionId)
      end
    end)
  end))
end

--- Stored session ids (for completion), waiting at most a second.
---@return string[]
function M.session_ids()
  if not sidecar.server_info() then
    return {}
  end
  local result = sidecar.call('session/list', vim.empty_dict(), 1000)
  return vim.tbl_map(function(s)
    return s.sessionId
  end, result and result.sessions or {})
end

--- Delete a session (after a confirmation) and wipe its buffer.
---@param session_id? string
function M.delete(session_id)
  local sid = session_or_say(session_id, 'no session to delete')
  if not sid then
    return
  end
  M.info(sid, function(entry)
    local count = entry and entry._meta and entry._meta.messageCount
    vim.ui.select({ 'Delete', 'Keep' }, {
      prompt = ('Threadline: delete %s%s and its history?'):format(
        titled(entry, sid),
        count and (' (%d message%s)'):format(count, count == 1 and '' or 's') or ''
      ),
      kind = 'threadline.delete',
    }, function(choice)
      if choice ~= 'Delete' then
        return
      end
      sidecar.request('session/delete', { sessionId = sid }, answered('delete', function()
        if state.session_id == sid then
          state.session_id = nil
        end
        state.pending[sid] = nil
        chat.drop(sid)
        notify('deleted ' .. titled(entry, sid))
        fire('ThreadlineDeleted', { sessionId = sid })
      end))
    end)
  end)
end

--- Change the model of a session (a picker without `model`).
---@param model? string
---@param session_id? string
function M.set_model(model, session_id)
  local sid = session_or_say(session_id, 'no session')
  if not sid then
    return
  end
  local function apply(choice)
    M.info(sid, function(entry)
      local previous = entry and entry._meta and entry._meta.model or '?'
      sidecar.request('session/set_config_option', { sessionId = sid, configId = 'model', value = choice }, function(err)
        if err then
          -- A model that cannot answer (no API key) is refused when chosen, not found
          -- out at the next prompt: the session keeps the model it had.
          local why = describe_error(err)
          notify('model not changed: ' .. why, vim.log.levels.WARN)
          chat.get(sid):note(('[model not changed (still %s): %s]'):format(previous, why), 'ThreadlineError')
          fire('ThreadlineModel', { sessionId = sid, model = previous, refused = choice, error = why })
          return
        end
        chat.get(sid):note('[model: ' .. choice .. ']')
        fire('ThreadlineModel', { sessionId = sid, model = choice })
      end)
    end)
  end
  if model and model ~= '' then
    apply(model)
    return
  end
  vim.ui.select(sidecar.models(), { prompt = 'Threadline model', kind = 'threadline.model' }, function(choice)
    if choice then
      apply(choice)
    end
  end)
end

--- Start the sidecar again (after it died) and reattach every open chat buffer.
function M.restart()
  sidecar.shutdown(1000)
  state.running, state.phase, state.activity = {}, {}, {}
  local open = chat.all()
  for sid, c in pairs(open) do
    sidecar.request('session/resume', { sessionId = sid, cwd = config.options.cwd or vim.fn.getcwd() }, function(err)
      if err then
        c:note('[could not reattach: ' .. describe_error(err) .. ']', 'ThreadlineError')
      else
        c:note('[the sidecar was restarted]')
      end
    end)
  end
  if next(open) == nil then
    sidecar.request('session/list', vim.empty_dict())
  end
  notify('sidecar restarted')
end

--- A floating window with a tool call's whole arguments and result or, on any other
--- line, the id of the message under the cursor (what `:Threadline fork` takes).
---@param buf integer
function M.details(buf)
  local c = chat.of_buffer(buf)
  if not c then
    return false
  end
  local row = vim.api.nvim_win_get_cursor(0)[1] - 1
  local entry = c:tool_at(row)
  if not entry then
    local m, last = c:message_at(row)
    if not m then
      notify('K shows the tool call or the message under the cursor: there is none here')
      return true
    end
    local quote = c:quote(m.id)
    local lines = {
      (m.role == 'user' and 'Your message ' or 'Answer ') .. m.id,
      '',
      '“' .. (quote or '') .. '”',
      '',
      last and ':Threadline fork here branches the whole session'
        or ':Threadline fork here branches the session at this message',
    }
    vim.lsp.util.open_floating_preview(lines, 'markdown', { border = 'rounded', focus_id = 'threadline.message' })
    return true
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
function M.keys(buf)
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
  --- A key that asks for a prompt with vim.ui.input and sends it (`mode`: see M.ask).
  local function prompt_key(key, mode, desc, input_opts)
    if key then
      vim.keymap.set('n', key, function()
        vim.ui.input(input_opts(), function(text)
          if text then
            M.ask(text, sid, mode)
          end
        end)
      end, { buffer = buf, desc = desc })
    end
  end
  prompt_key(keys.ask, nil, 'Threadline: ask (queued while a turn runs)', function()
    local busy = state.running[sid] or require('threadline.live').busy(sid)
    return { prompt = busy and 'Queue (runs next): ' or 'Ask: ', default = state.unsent[sid] }
  end)
  prompt_key(keys.steer, 'steer', 'Threadline: steer the running turn', function()
    return { prompt = 'Steer the running turn: ' }
  end)
  if keys.queue then
    vim.keymap.set('n', keys.queue, function()
      require('threadline.live').queue_menu(sid)
    end, { buffer = buf, desc = 'Threadline: edit or remove the queued prompts' })
  end
  --- The tool call on the cursor's line, if any.
  local function tool_here()
    local c = chat.of_buffer(buf)
    return c, c and c:tool_at(vim.api.nvim_win_get_cursor(0)[1] - 1)
  end
  if keys.open_child then
    vim.keymap.set('n', keys.open_child, function()
      local _, entry = tool_here()
      if entry and entry.child then
        M.resume(entry.child)
      else
        notify('no child session on this line (a delegate call names one)')
      end
    end, { buffer = buf, desc = "Threadline: open a delegate call's child session" })
  end
  if keys.expand then
    vim.keymap.set('n', keys.expand, function()
      local c, entry = tool_here()
      if c and entry then
        c:toggle_detail(entry)
      end
    end, { buffer = buf, desc = "Threadline: show or hide a tool call's result under it" })
  end
  if keys.compose then
    vim.keymap.set('n', keys.compose, function()
      M.compose(sid)
      vim.cmd('startinsert')
    end, { buffer = buf, desc = 'Threadline: write a multi-line prompt' })
  end
  if keys.details then
    vim.keymap.set('n', keys.details, function()
      M.details(buf)
    end, { buffer = buf, desc = "Threadline: the tool call's arguments and result" })
  end
end

-- -- `:Threadline {sub} [args]` ------------------------------------------------------

---@param range? {first: integer, last: integer}
---@param question string
local function send(question, range)
  local context = require('threadline.context')
  local buf = vim.api.nvim_get_current_buf()
  if vim.b[buf].threadline_session ~= nil then
    buf = editor_tools.editor_buffer() or buf
  end
  if vim.b[buf].threadline_session ~= nil then
    util.notify('send: no file buffer to send', vim.log.levels.WARN)
    return
  end
  local block = range and context.from_buffer(buf, range.first, range.last) or context.from_buffer(buf)
  M.attach({ block }, nil, question)
end

---@type table<string, fun(arg: string, range?: {first: integer, last: integer}, bang?: boolean)>
M.subcommands = {
  new = function(arg)
    M.new(arg ~= '' and arg or nil)
  end,
  ask = function(arg)
    M.ask(arg)
  end,
  interrupt = function(arg, _, bang)
    M.interrupt(nil, bang or arg == 'clear')
  end,
  fork = function(arg)
    M.fork(arg)
  end,
  compact = function(arg)
    M.compact(arg)
  end,
  sessions = function(arg)
    M.sessions(arg == 'archived')
  end,
  resume = function(arg)
    M.resume(arg)
  end,
  delete = function(arg)
    M.delete(arg ~= '' and arg or nil)
  end,
  model = function(arg)
    M.set_model(arg)
  end,
  restart = function()
    M.restart()
  end,
  send = send,
  attach = function(arg)
    if arg == '' then
      notify('attach needs a file: :Threadline attach {image}', vim.log.levels.WARN)
      return
    end
    local block, problem = require('threadline.context').image(arg)
    if not block then
      notify('attach: ' .. problem, vim.log.levels.WARN)
      return
    end
    M.attach({ block })
  end,
  prompt = function()
    M.compose()
    vim.cmd('startinsert')
  end,
  health = function()
    vim.cmd('checkhealth threadline')
  end,
}

local USAGE = 'usage: :Threadline new [model] | ask {text} | steer {text} | queue [clear|resume] | '
  .. '[!]interrupt [clear] | attach {image} | fork [messageId] | compact [text] | '
  .. 'sessions [archived] | resume {id} | delete [id] | model [id] | [range]send [question] | prompt | restart | '
  .. 'search {words} | rename {title} | archive [id] | unarchive [id] | mode [name] | diff | rewind[!] | '
  .. 'unrewind | health'

---@param line string
---@param range? {first: integer, last: integer}
---@param bang? boolean `:Threadline! …`
function M.run(line, range, bang)
  local sub, arg = line:match('^%s*(%S+)%s*(.-)%s*$')
  local fn = M.subcommands[sub or '']
  if not fn then
    util.notify(USAGE, vim.log.levels.ERROR)
    return
  end
  fn(arg, range, bang)
end

---@param lead string
---@param line string
---@return string[]
function M.complete(lead, line)
  local function starting(list)
    local out = vim.tbl_filter(function(s)
      return vim.startswith(s, lead)
    end, list)
    table.sort(out)
    return out
  end
  -- What comes before the word being completed: `Threadline` (maybe with a range)
  -- and the subcommand, if there is one yet.
  local before = vim.split(vim.trim(line:sub(1, #line - #lead)), '%s+')
  if #before == 1 then
    return starting(vim.tbl_keys(M.subcommands))
  end
  if #before > 2 then
    return {}
  end
  local sub = before[2]
  if sub == 'fork' then
    -- The ids of the messages the chat buffer shows, in its order.
    local c = chat.all()[M.target() or '']
    return vim.tbl_filter(function(id)
      return vim.startswith(id, lead)
    end, c and c:message_ids() or {})
  elseif sub == 'sessions' then
    return starting({ 'archived' })
  elseif sub == 'queue' then
    return starting({ 'clear', 'resume' })
  elseif sub == 'interrupt' then
    return starting({ 'clear' })
  elseif sub == 'resume' or sub == 'delete' or sub == 'archive' or sub == 'unarchive' then
    return starting(M.session_ids())
  elseif sub == 'mode' then
    local known = require('threadline.work').modes[M.target() or ''] or { available = {} }
    return starting(vim.tbl_map(function(m)
      return m.id
    end, known.available))
  elseif sub == 'attach' then
    return vim.fn.getcompletion(lead, 'file')
  elseif sub == 'new' or sub == 'model' then
    return starting(sidecar.models())
  end
  return {}
end

return M
