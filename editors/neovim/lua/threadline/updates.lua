--- `session/update` notifications into chat buffers.
---
--- Updates of a turn this Neovim is running go into that session's buffer as they
--- arrive. The sidecar also streams every change another window makes to a session
--- this Neovim has open (its standing subscription): turns started there (or a
--- prompt of this Neovim's that waited in the queue) are shown as they come, what
--- the buffer shows already (a replay of the history) is skipped, and
--- `session_info_update` (state, owner, queue, title, model, rewinds, deletion) goes
--- to `threadline.live`. Every update is also fired as the `User` autocommand
--- `ThreadlineUpdate` (data = {sessionId, update}).
local chat = require('threadline.chat')
local util = require('threadline.util')

local M = {}

--- The child session a `delegate` call runs (`_meta.threadline.childSessionId`).
---@param u table
---@return string?
local function child_of(u)
  local meta = type(u._meta) == 'table' and type(u._meta.threadline) == 'table' and u._meta.threadline or {}
  return type(meta.childSessionId) == 'string' and meta.childSessionId or nil
end

---@param u table
---@return boolean
local function cancelled(u)
  return type(u._meta) == 'table' and type(u._meta.threadline) == 'table' and u._meta.threadline.cancelled == true
end

--- Record what a session is doing; statuslines show it (`require('threadline').status()`).
---@param state threadline.State
---@param sid string
---@param phase string?
function M.set_phase(state, sid, phase)
  if state.phase[sid] ~= phase then
    state.phase[sid] = phase
    vim.cmd('redrawstatus!')
  end
end

---@param state threadline.State
---@param params {sessionId: string, update: table}
function M.handle(state, params)
  local sid, u = params.sessionId, params.update or {}
  util.fire('ThreadlineUpdate', { sessionId = sid, update = u })
  if not sid then
    return
  end
  local kind = u.sessionUpdate
  if kind == 'tool_call_update' and (u.status == 'completed' or u.status == 'failed') then
    -- A question or permission request of this call that still waits was withdrawn.
    require('threadline.requests').withdraw(sid, u.toolCallId)
  end
  if require('threadline.work').update(sid, u, state.running[sid] == true) then
    return
  end
  if kind == 'compaction_update' then
    local c = chat.all()[sid]
    if not c then
      return
    end
    if u.status == 'in_progress' then
      c:set_status('compacting…')
      M.set_phase(state, sid, 'compacting')
      return
    end
    if state.phase[sid] == 'compacting' then
      c:set_status(state.running[sid] and 'thinking…' or nil)
      M.set_phase(state, sid, state.running[sid] and 'thinking' or nil)
    end
    if u.status == 'completed' then
      c:summary(util.block_text(u.summary), u.compactionId)
    elseif not state.compacting[sid] then -- a compaction asked for says how it ended itself
      c:note(('[compaction %s%s]'):format(u.status, u.error and (': ' .. u.error) or ''))
    end
    return
  end
  if kind == 'session_info_update' then
    require('threadline.live').info(state, sid, u)
    return
  end
  if not state.running[sid] then
    local c = chat.all()[sid]
    if c then
      M.watched(c, u)
    end
    return -- no buffer: it is filled from history when it opens
  end
  local c = chat.get(sid)
  if kind == 'user_message_chunk' then
    M.watched(c, u) -- steering that joined this turn (from here or another window)
  elseif kind == 'agent_message_chunk' then
    M.set_phase(state, sid, 'answering')
    if c.current ~= u.messageId then
      c:answering()
    end
    c:chunk(u.messageId or 'answer', util.block_text(u.content))
  elseif kind == 'agent_thought_chunk' then
    M.set_phase(state, sid, 'thinking')
    if not c.status then
      c:set_status('thinking…')
    end
  elseif kind == 'tool_call' then
    M.set_phase(state, sid, 'tool')
    c:answering()
    c:tool(u.toolCallId, u.title or 'tool', u.status or 'pending', util.block_text(u.content), u.rawInput)
  elseif kind == 'tool_call_update' then
    local status = cancelled(u) and 'failed' or u.status or 'in_progress'
    c:set_child(u.toolCallId, child_of(u))
    c:tool(u.toolCallId, c:tool_title(u.toolCallId) or u.toolCallId, status, util.block_text(u.content))
    if status == 'completed' or status == 'failed' then
      M.set_phase(state, sid, 'thinking')
    end
  end
end

--- An update of a turn this Neovim does not run (a turn of another window, a queued
--- prompt's turn, a replay of `session/load`): what the buffer shows already is
--- skipped, the rest is shown as it comes.
---@param c threadline.Chat
---@param u table
function M.watched(c, u)
  local kind, id = u.sessionUpdate, u.messageId
  if kind == 'user_message_chunk' or kind == 'agent_message_chunk' then
    if not id or (c.known[id] and (c.replaying or not c.live[id])) then
      return -- shown already (a message that streamed here, replayed by a sync)
    end
    local label = require('threadline.context').label
    if kind == 'user_message_chunk' then
      local b = u.content or {}
      if not c.live[id] then
        c.live[id] = true
        local attached = (b.type == 'resource' or b.type == 'image') and { label(b) } or {}
        c:user(b.type == 'text' and b.text or '', attached, id, false)
      elseif b.type == 'resource' or b.type == 'image' then
        c:append('> 📎 ' .. label(b) .. '\n')
      elseif b.type == 'text' then
        c:append(b.text)
      end
      return
    end
    if not c.live[id] then
      c.live[id] = true
      c:answering()
    end
    c:chunk(id, util.block_text(u.content))
  elseif kind == 'tool_call' then
    if not c.tools[u.toolCallId] then
      c:answering()
      c:tool(u.toolCallId, u.title or 'tool', u.status or 'pending', util.block_text(u.content), u.rawInput)
    end
  elseif kind == 'tool_call_update' then
    local entry = c.tools[u.toolCallId]
    local status = cancelled(u) and 'failed' or u.status or 'in_progress'
    c:set_child(u.toolCallId, child_of(u))
    if entry and (entry.status ~= status or entry.child) then
      c:tool(u.toolCallId, entry.title, status, util.block_text(u.content))
    end
  end
end

--- A turn's prompt answered (or failed): the buffer says how it ended, and
--- `ThreadlineTurnDone` tells whoever listens.
---@param state threadline.State
---@param sid string
---@param c threadline.Chat
---@param err table?
---@param result table?
function M.turn_done(state, sid, c, err, result)
  if not state.running[sid] then
    return -- the sidecar died meanwhile: already reported
  end
  state.running[sid] = nil
  local a = state.activity[sid]
  if a and a.owner and a.owner.here then
    -- This sidecar's work ended with the turn (the `idle` news normally comes first;
    -- if a queued turn starts next, its own news says so).
    state.activity[sid] = { state = 'idle' }
  end
  M.set_phase(state, sid, nil)
  c:set_status(nil)
  c:close_segment()
  local outcome = { sessionId = sid }
  if err then
    c:note('[error: ' .. util.describe_error(err) .. ']', 'ThreadlineError')
    outcome.error = util.describe_error(err)
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
  util.fire('ThreadlineTurnDone', outcome)
end

--- The sidecar died while this Neovim used it: say so in every buffer with a running
--- turn (what streamed stays), and once in the messages.
---@param state threadline.State
---@param code integer
---@param signal integer
function M.sidecar_died(state, code, signal)
  state.dead = { code = code, signal = signal }
  state.activity = {} -- nothing is known of the sessions until it is restarted
  local how = signal ~= 0 and ('was killed by signal %d'):format(signal) or ('exited with code %d'):format(code)
  for sid in pairs(state.running) do
    state.running[sid] = nil
    M.set_phase(state, sid, nil)
    local c = chat.all()[sid]
    if c then
      c:set_status(nil)
      c:close_segment()
      c:note(('[the sidecar %s; :Threadline restart starts it again]'):format(how), 'ThreadlineError')
    end
    util.fire('ThreadlineTurnDone', { sessionId = sid, error = 'the sidecar ' .. how })
  end
  util.notify(('the sidecar %s; run :Threadline restart'):format(how), vim.log.levels.ERROR)
end

return M
