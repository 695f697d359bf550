--- threadline.nvim: chat with a Threadline sidecar from Neovim.
---
--- One sidecar per Neovim (started on first use) and one chat buffer per session.
--- Every chat buffer is bound to its session: a command given in a chat buffer acts on
--- that buffer's session; given elsewhere, on the session of the chat buffer used last.
--- Everything is asynchronous; the `User` autocommands `ThreadlineUpdate` (every
--- `session/update`, data = {sessionId, update}) and `ThreadlineTurnDone` (data =
--- {sessionId, stopReason, usage, error}) let other code (and the tests) follow along.
---
--- Layout: this module is `setup()` and the API in one place; `commands` what a person
--- can do (and the `:Threadline` command), `sidecar` the process and requests to it,
--- `state` what is known of it, `updates` the streaming into buffers and a turn's end,
--- `chat` the buffers, `live` what every window sees (state, queue, steer, changes
--- made elsewhere), `rpc` the connection, `requests` the sidecar's requests
--- (permission, questions, tools, files), `editor_tools` the built-in tools, `review` the diff of
--- a proposed edit, `find` search, rename and archive, `health` `:checkhealth threadline`.
local commands = require('threadline.commands')
local find = require('threadline.find')
local config = require('threadline.config')
local chat = require('threadline.chat')
local editor_tools = require('threadline.editor_tools')
local sidecar = require('threadline.sidecar')
local state = require('threadline.state')

local M = {}

M.state = state

-- The sidecar (see `threadline.sidecar`).
M.request = sidecar.request
M.call = sidecar.call
M.server_info = sidecar.server_info
M.models = sidecar.models
M.tools = sidecar.tools
M.cmd_problem = sidecar.cmd_problem

-- What a person can do (see `threadline.commands`).
M.target = commands.target
M.new = commands.new
M.attach = commands.attach
M.ask = commands.ask
M.compose = commands.compose
M.interrupt = commands.interrupt
M.fork = commands.fork
M.sync = commands.sync
M.info = commands.info
M.compact = commands.compact
M.resume = commands.resume
M.sessions = commands.sessions
M.session_ids = commands.session_ids
M.delete = commands.delete
M.set_model = commands.set_model
M.restart = commands.restart
M.details = commands.details
M.command = commands.run
M.complete = commands.complete

-- Finding a session (see `threadline.find`): `:Threadline search|rename|archive|unarchive`.
find.register(commands.subcommands)
-- The agent's work (see `threadline.work`): `:Threadline mode|diff|rewind|unrewind`.
local work = require('threadline.work')
work.register(commands.subcommands)
M.set_mode = work.set_mode
-- Running work (see `threadline.live`): `:Threadline steer|queue`.
local live = require('threadline.live')
live.register(commands.subcommands)
M.queue = live.queue_menu
M.remove_queued = live.remove
M.update_queued = live.update
M.resume_queue = live.resume_queue

--- Steer the session's running turn (an ordinary prompt when nothing runs).
---@param text string
---@param session_id? string
function M.steer(text, session_id)
  commands.ask(text, session_id, 'steer')
end
M.diff = work.diff
M.rewind = work.rewind
M.unrewind = work.unrewind
M.search = find.search
M.open_hit = find.open
M.rename = find.rename
M.archive = find.archive

--- Show in a chat buffer what another editor did to its session since (see
--- `commands.sync`); only while a sidecar runs, at most once a second.
---@param sid string
function M.catch_up(sid)
  local c = chat.all()[sid]
  if not c or not sidecar.server_info() then
    return
  end
  if c.synced and vim.uv.now() - c.synced < 1000 then
    return
  end
  commands.sync(sid, true)
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
  local label = {
    thinking = '⋯ thinking',
    answering = '✎ answering',
    tool = '⚙ running a tool',
    compacting = '⋯ compacting',
    elsewhere = '⋯ busy in another editor',
  }
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

--- Stop the sidecar (it is started again on the next command) and forget the sessions.
function M.stop()
  sidecar.shutdown()
  state.session_id = nil
  state.running, state.last, state.phase, state.pending, state.activity = {}, {}, {}, {}, {}
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
      sidecar.shutdown(1000)
    end,
  })
  vim.api.nvim_create_autocmd({ 'BufEnter', 'WinEnter' }, {
    group = group,
    callback = function(ev)
      local sid = vim.b[ev.buf].threadline_session
      if sid then
        state.session_id = sid
        if ev.event == 'BufEnter' then
          M.catch_up(sid)
        end
      else
        editor_tools.track(ev.buf, vim.api.nvim_get_current_win())
      end
    end,
  })
  vim.api.nvim_create_autocmd('FocusGained', {
    group = group,
    callback = function()
      local sid = vim.b[vim.api.nvim_get_current_buf()].threadline_session
      if sid then
        M.catch_up(sid)
      end
    end,
  })
end

return M
