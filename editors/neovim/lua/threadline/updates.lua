--- `session/update` notifications into chat buffers.
---
--- Updates of a turn this Neovim is running go into that session's buffer as they
--- arrive; replays and announcements are skipped (a resumed or forked buffer is filled
--- from `session/history` instead). Every update is also fired as the `User`
--- autocommand `ThreadlineUpdate` (data = {sessionId, update}).
local chat = require('threadline.chat')
local util = require('threadline.util')

local M = {}

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
  if kind == 'compaction_update' then
    local c = chat.all()[sid]
    if not c then
      return
    end
    if u.status == 'in_progress' then
      c:set_status('compacting…')
      M.set_phase(state, sid, 'compacting')
    else
      c:set_status(state.running[sid] and 'thinking…' or nil)
      M.set_phase(state, sid, state.running[sid] and 'thinking' or nil)
      c:note(('[compaction %s]'):format(u.status))
    end
    return
  end
  if not state.running[sid] then
    return -- replays and announcements: the buffer is filled from history instead
  end
  local c = chat.get(sid)
  if kind == 'agent_message_chunk' then
    M.set_phase(state, sid, 'answering')
    c:chunk(u.messageId or 'answer', util.block_text(u.content))
  elseif kind == 'agent_thought_chunk' then
    M.set_phase(state, sid, 'thinking')
    if not c.status then
      c:set_status('thinking…')
    end
  elseif kind == 'tool_call' then
    M.set_phase(state, sid, 'tool')
    c:tool(u.toolCallId, u.title or 'tool', u.status or 'pending', util.block_text(u.content), u.rawInput)
  elseif kind == 'tool_call_update' then
    local status = cancelled(u) and 'failed' or u.status or 'in_progress'
    c:tool(u.toolCallId, c:tool_title(u.toolCallId) or u.toolCallId, status, util.block_text(u.content))
    if status == 'completed' or status == 'failed' then
      M.set_phase(state, sid, 'thinking')
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
