--- The agent's work in Neovim: the plan in the chat buffer, an edit's diff beside the
--- permission question, the session's mode (`:Threadline mode [name]`), the files a turn
--- changed (`:Threadline diff`) and going back before a prompt (`:Threadline rewind[!]`,
--- `:Threadline unrewind`).
local chat = require('threadline.chat')
local sidecar = require('threadline.sidecar')
local state = require('threadline.state')
local util = require('threadline.util')

local M = {}

local notify, fire, describe_error = util.notify, util.fire, util.describe_error

local MARK = { completed = '[x]', in_progress = '[~]', pending = '[ ]' }

--- The modes each session offers (`session/new`'s `modes`), and its current one.
---@type table<string, {current: string?, available: table[]}>
M.modes = {}

--- The `rewindId` of each session's last rewind, which `:Threadline unrewind` undoes.
---@type table<string, string>
M.rewinds = {}

---@param sid string
---@param modes table? ACP `SessionModeState`
function M.take_modes(sid, modes)
  if type(modes) == 'table' then
    M.modes[sid] = { current = modes.currentModeId, available = modes.availableModes or {} }
  end
end

--- ACP's `plan` entries as a markdown checklist.
---@param entries table[]
---@return string
function M.plan_text(entries)
  local lines = { '**Plan**', '' }
  for _, e in ipairs(entries or {}) do
    local high = e.priority == 'high' and e.status ~= 'completed' and ' (high)' or ''
    table.insert(lines, ('- %s %s%s'):format(MARK[e.status] or '[ ]', e.content or '', high))
  end
  return table.concat(lines, '\n') .. '\n'
end

--- The ACP `diff` items of a tool call's content, as one unified diff ('' for none).
---@param content table[]?
---@return string
function M.unified(content)
  local out = {}
  for _, item in ipairs(content or {}) do
    if type(item) == 'table' and item.type == 'diff' then
      local path = vim.fn.fnamemodify(item.path or '', ':~:.')
      local old = item.oldText ~= vim.NIL and item.oldText or nil
      local body = vim.diff(old or '', item.newText or '', { result_type = 'unified', ctxlen = 2 })
      table.insert(out, ('--- %s\n+++ b/%s\n%s'):format(old and ('a/' .. path) or '/dev/null', path, body))
    end
  end
  return table.concat(out)
end

local count = 0

--- Show `text` in a read-only `diff` buffer in a split below (the focus stays where
--- it was); returns the window.
---@param name string
---@param text string
---@return integer win
function M.show(name, text)
  local buf = vim.api.nvim_create_buf(false, true)
  count = count + 1
  pcall(vim.api.nvim_buf_set_name, buf, ('threadline://%s#%d'):format(name, count))
  vim.api.nvim_buf_set_lines(buf, 0, -1, false, vim.split(text:gsub('\n$', ''), '\n', { plain = true }))
  vim.bo[buf].buftype = 'nofile'
  vim.bo[buf].bufhidden = 'wipe'
  vim.bo[buf].modifiable = false
  vim.bo[buf].filetype = 'diff' -- coloured by the diff syntax
  local previous = vim.api.nvim_get_current_win()
  vim.cmd('botright split')
  local win = vim.api.nvim_get_current_win()
  vim.api.nvim_win_set_buf(win, buf)
  if vim.api.nvim_win_is_valid(previous) then
    vim.api.nvim_set_current_win(previous)
  end
  vim.cmd('redraw')
  return win
end

--- Commands (`run_command`, kind `execute`) of the turns this Neovim runs: call id →
--- the buffer showing its output.
---@type table<string, integer|false>
M.outputs = {}

--- The window showing command output, reused by every command.
---@type integer?
local output_win

--- Show a running command's output as it streams, in a split below (reused).
---@param id string
---@param text string
local function show_output(id, text)
  local buf = M.outputs[id]
  if not buf or not vim.api.nvim_buf_is_valid(buf) then
    buf = vim.api.nvim_create_buf(false, true)
    pcall(vim.api.nvim_buf_set_name, buf, 'threadline://output/' .. id)
    vim.bo[buf].buftype = 'nofile'
    vim.bo[buf].bufhidden = 'hide'
    M.outputs[id] = buf
  end
  vim.bo[buf].modifiable = true
  vim.api.nvim_buf_set_lines(buf, 0, -1, false, vim.split(text:gsub('\n$', ''), '\n', { plain = true }))
  vim.bo[buf].modifiable = false
  if not (output_win and vim.api.nvim_win_is_valid(output_win)) then
    local previous = vim.api.nvim_get_current_win()
    vim.cmd('botright 10split')
    output_win = vim.api.nvim_get_current_win()
    vim.api.nvim_set_current_win(previous)
  end
  if vim.api.nvim_win_get_buf(output_win) ~= buf then
    vim.api.nvim_win_set_buf(output_win, buf)
  end
  vim.api.nvim_win_set_cursor(output_win, { vim.api.nvim_buf_line_count(buf), 0 })
end

--- A `session/update` about the agent's work; true when it was one (a command's
--- output is shown and the update goes on to the chat buffer too).
---@param sid string
---@param u table
---@param running boolean the turn runs in this Neovim
---@return boolean
function M.update(sid, u, running)
  if u.sessionUpdate == 'current_mode_update' then
    local known = M.modes[sid] or { available = {} }
    local changed = known.current ~= u.currentModeId
    known.current = u.currentModeId
    M.modes[sid] = known
    local c = chat.all()[sid]
    if c and changed then
      c:note('[mode: ' .. tostring(u.currentModeId) .. ']')
    end
    fire('ThreadlineMode', { sessionId = sid, mode = u.currentModeId })
    return true
  end
  if running and u.sessionUpdate == 'tool_call' and u.kind == 'execute' then
    M.outputs[u.toolCallId] = false
  elseif running and u.sessionUpdate == 'tool_call_update' and M.outputs[u.toolCallId] ~= nil then
    local text = util.block_text(u.content)
    if text ~= '' then
      show_output(u.toolCallId, text)
    end
  end
  if u.sessionUpdate == 'plan' then
    local c = chat.all()[sid]
    if c and running then
      c:block(M.plan_text(u.entries))
    end
    return true
  end
  return false
end

--- The session a command acts on (see `commands.target`), or nil after saying so.
---@param sid? string
---@return string?
local function session(sid)
  sid = require('threadline.commands').target(sid)
  if not sid then
    notify('no session', vim.log.levels.WARN)
  end
  return sid
end

--- Switch a session's mode, or pick one.
---@param mode? string
---@param sid? string
function M.set_mode(mode, sid)
  sid = session(sid)
  if not sid then
    return
  end
  local function apply(choice)
    sidecar.request('session/set_mode', { sessionId = sid, modeId = choice }, function(err)
      if err then
        notify('mode not changed: ' .. describe_error(err), vim.log.levels.ERROR)
      end
    end)
  end
  if mode and mode ~= '' then
    return apply(mode)
  end
  local known = M.modes[sid] or { available = {} }
  vim.ui.select(known.available, {
    prompt = 'Threadline mode (now ' .. tostring(known.current) .. ')',
    kind = 'threadline.mode',
    format_item = function(m)
      return m.id .. (m.description and (' — ' .. m.description) or '')
    end,
  }, function(choice)
    if choice then
      apply(choice.id)
    end
  end)
end

--- `session/diff`: what the last turn changed (since `from` when given), in a split.
---@param from? string a message id
---@param sid? string
function M.diff(from, sid)
  sid = session(sid)
  if not sid then
    return
  end
  local params = { sessionId = sid }
  if from and from ~= '' then
    params.fromMessageId = from
  end
  sidecar.request('session/diff', params, function(err, result)
    if err then
      notify('diff: ' .. describe_error(err), vim.log.levels.ERROR)
      return
    end
    local out = {}
    if result.notice then
      table.insert(out, '# ' .. result.notice)
    end
    for _, f in ipairs(result.files or {}) do
      table.insert(out, ('# %s %s +%d -%d'):format(f.status, f.path, f.additions or 0, f.deletions or 0))
      if f.diff and f.diff ~= vim.NIL then
        table.insert(out, (f.diff:gsub('\n$', '')))
      end
    end
    if #(result.files or {}) == 0 then
      table.insert(out, '# no files changed')
    end
    M.show('diff/' .. sid, table.concat(out, '\n'))
    fire('ThreadlineDiff', result)
  end)
end

--- The prompt (user message) at the cursor in the session's chat buffer, else its last.
---@param sid string
---@return string?
local function prompt_at_cursor(sid)
  local c = chat.all()[sid]
  if not c then
    return nil
  end
  local here = c.buf == vim.api.nvim_get_current_buf() and vim.api.nvim_win_get_cursor(0)[1] - 1 or math.huge
  local found, last
  for _, e in ipairs(c.order) do
    if e.id and e.role == 'user' then
      last = e.id
      if vim.api.nvim_buf_get_extmark_by_id(c.buf, vim.api.nvim_create_namespace('threadline.chat'), e.mark, {})[1] <= here then
        found = e.id
      end
    end
  end
  return found or last
end

--- End the session just before the prompt at the cursor (its last prompt elsewhere);
--- with `files`, the files it changed since go back too.
---@param files boolean
---@param sid? string
function M.rewind(files, sid)
  sid = require('threadline.commands').target(sid)
  local before = sid and prompt_at_cursor(sid)
  if not sid or not before then
    notify('rewind: no prompt to go back before', vim.log.levels.WARN)
    return
  end
  local params = { sessionId = sid, beforeMessageId = before, restoreFiles = files }
  sidecar.request('session/rewind', params, function(err, result)
    if err then
      local paths = type(err.data) == 'table' and err.data.files or nil
      local extra = type(paths) == 'table' and (' (' .. table.concat(paths, ', ') .. ')') or ''
      notify('rewind: ' .. describe_error(err) .. extra, vim.log.levels.ERROR)
      return
    end
    M.rewinds[sid] = result.rewindId
    require('threadline.commands').resume(sid, function(c)
      if c then
        local restored = #(result.files.written or {}) + #(result.files.deleted or {})
        c:note(
          ('[rewound: the cut turns are session %s%s; :Threadline unrewind undoes it]'):format(
            result.rewindId,
            files and (', ' .. restored .. ' files restored') or ''
          )
        )
      end
      fire('ThreadlineRewound', { sessionId = sid, result = result })
    end)
  end)
end

--- Undo the session's last rewind (files too).
---@param sid? string
function M.unrewind(sid)
  sid = require('threadline.commands').target(sid)
  local rewind = sid and M.rewinds[sid]
  if not rewind then
    notify('nothing to unrewind', vim.log.levels.WARN)
    return
  end
  sidecar.request('session/unrewind', { sessionId = sid, rewindId = rewind }, function(err, result)
    if err then
      notify('unrewind: ' .. describe_error(err), vim.log.levels.ERROR)
      return
    end
    M.rewinds[sid] = nil
    require('threadline.commands').resume(sid, function()
      fire('ThreadlineUnrewound', { sessionId = sid, result = result })
    end)
  end)
end

---@param subcommands table<string, function>
function M.register(subcommands)
  subcommands.mode = function(arg)
    M.set_mode(arg)
  end
  subcommands.diff = function(arg)
    M.diff(arg)
  end
  subcommands.rewind = function(arg, _, bang)
    M.rewind(bang == true or arg == '--files')
  end
  subcommands.unrewind = function()
    M.unrewind()
  end
end

return M
