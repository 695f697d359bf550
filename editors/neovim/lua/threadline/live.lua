--- A session as every window sees it: what it is doing and who runs it, the prompts
--- waiting for it (queue and steer), and what another window changed (title, model,
--- a rewind, a deletion), from `session_info_update` `_meta.threadline`
--- (docs/protocol.md, "Every window sees every change"). Also the commands that act
--- on running work: `:Threadline steer`, `:Threadline queue`.
local chat = require('threadline.chat')
local sidecar = require('threadline.sidecar')
local util = require('threadline.util')

local M = {}

local notify, fire, describe_error = util.notify, util.fire, util.describe_error

---@class threadline.Activity
---@field state string idle | running | requires_action | compacting | repairing | rewinding
---@field owner {pid: integer, host: string, since: string, here: boolean}?

--- Whether a session is working (here or in another window), as last announced.
---@param sid string
---@return boolean
function M.busy(sid)
  local a = require('threadline.state').activity[sid]
  return a ~= nil and a.state ~= 'idle'
end

--- What the chat buffer's status line says while the session works elsewhere.
---@param a threadline.Activity
---@return string?
local function elsewhere(a)
  if a.state == 'idle' then
    return nil
  end
  local who = a.owner and ('another editor (Threadline pid %s on %s)'):format(a.owner.pid, a.owner.host)
    or 'another editor'
  local doing = ({
    running = 'running in ',
    requires_action = 'waiting for an answer in ',
    compacting = 'compacting in ',
    repairing = 'being repaired by ',
    rewinding = 'being rewound in ',
  })[a.state] or (a.state .. ' in ')
  return doing .. who
end

---@param state threadline.State
---@param sid string
---@param c threadline.Chat?
---@param meta table
local function took_state(state, sid, c, meta)
  local a = { state = meta.state, owner = type(meta.owner) == 'table' and meta.owner or nil }
  state.activity[sid] = a
  fire('ThreadlineState', { sessionId = sid, state = a.state, owner = a.owner })
  local updates = require('threadline.updates')
  if state.running[sid] then
    return -- this Neovim's own turn says its phase itself
  end
  if a.state == 'idle' then
    updates.set_phase(state, sid, nil)
    if c and c.status then
      c:set_status(nil)
    end
  elseif a.owner and a.owner.here then
    -- A queued prompt's turn, run by this Neovim's sidecar.
    updates.set_phase(state, sid, a.state == 'compacting' and 'compacting' or 'thinking')
    if c then
      c:set_status(a.state == 'compacting' and 'compacting…' or 'thinking…')
    end
  else
    updates.set_phase(state, sid, 'elsewhere')
    if c then
      c:set_status(elsewhere(a), true)
    end
  end
end

--- A `session_info_update` of an open session.
---@param state threadline.State
---@param sid string
---@param u table
function M.info(state, sid, u)
  local meta = type(u._meta) == 'table' and type(u._meta.threadline) == 'table' and u._meta.threadline or {}
  local c = chat.all()[sid]
  if type(meta.state) == 'string' then
    took_state(state, sid, c, meta)
  end
  -- A wait the sidecar knows about (a model loading, a retry) says why the turn is slow.
  if c and state.running[sid] and type(meta.status) == 'string' then
    c:set_status(meta.status)
  end
  if type(meta.queue) == 'table' then
    if c then
      c:set_queue(meta.queue)
    end
    fire('ThreadlineQueue', { sessionId = sid, queue = meta.queue })
  end
  if not c then
    return
  end
  if type(u.title) == 'string' then
    if c.title and c.title ~= u.title then
      c:note('[renamed “' .. u.title .. '”]')
    end
    c.title = u.title
    vim.b[c.buf].threadline_title = u.title
  end
  if type(meta.model) == 'string' then
    c:note('[model: ' .. meta.model .. ' (changed in another editor)]')
    fire('ThreadlineModel', { sessionId = sid, model = meta.model, elsewhere = true })
  end
  if type(meta.forked) == 'table' and meta.forked.sessionId then
    -- (Made here or in another editor: the sidecar announces every fork.)
    c:note('[forked into ' .. meta.forked.sessionId .. ']')
  end
  if meta.rewound ~= nil then
    -- The history was cut back elsewhere: show it as it is now.
    sidecar.request('session/history', { sessionId = sid }, function(err, result)
      if err or not vim.api.nvim_buf_is_valid(c.buf) then
        return
      end
      c:replay(result.messages or {})
      c:note('[rewound in another editor]')
      fire('ThreadlineRewound', { sessionId = sid, elsewhere = true })
    end)
  end
  if meta.deleted == true then
    state.running[sid] = nil
    state.activity[sid] = nil
    c:set_status(nil)
    c:set_queue({})
    c:note('[this session was deleted in another editor: what is shown here is all that is left]', 'ThreadlineError')
    fire('ThreadlineDeleted', { sessionId = sid, elsewhere = true })
  end
end

--- Send a prompt to a session that is working: `queue` runs it as the next turn,
--- `steer` gives it to the running turn at its next model call. It is shown when it
--- joins the conversation (a `user_message_chunk`); meanwhile a queued one is shown
--- under the last line. `ThreadlinePromptDone` fires when its request answers.
---@param sid string
---@param prompt table[] ACP content blocks
---@param mode 'queue'|'steer'
---@param text string what the user wrote (offered again if it is not sent)
function M.send(sid, prompt, mode, text)
  local state = require('threadline.state')
  local params = { sessionId = sid, prompt = prompt, _meta = { threadline = { whileRunning = mode } } }
  sidecar.request('session/prompt', params, function(err, result)
    local c = chat.all()[sid]
    local outcome = { sessionId = sid, mode = mode }
    if err then
      outcome.error = describe_error(err)
      state.unsent[sid] = text
      notify('your prompt was not sent: ' .. outcome.error, vim.log.levels.WARN)
      if c then
        c:note('[not sent: ' .. outcome.error .. ']', 'ThreadlineError')
      end
    else
      local meta = type(result._meta) == 'table' and type(result._meta.threadline) == 'table' and result._meta.threadline
        or {}
      outcome.stopReason, outcome.queue = result.stopReason, meta.queue
      -- (If the work had just ended when it came, it ran at once as a turn of its
      -- own; the sidecar showed it here all the same, as a user message.)
      outcome.userMessageId = meta.userMessageId
      -- A queued prompt's own turn ran (a steer's turn says how it ended itself).
      if c and mode == 'queue' and not meta.queue and result.stopReason ~= 'end_turn' then
        c:close_segment()
        c:note(result.stopReason == 'cancelled' and '[interrupted]' or ('[stopped: ' .. tostring(result.stopReason):gsub('_', ' ') .. ']'))
      end
    end
    fire('ThreadlinePromptDone', outcome)
  end)
end

--- The waiting prompts of a session, to edit or remove (`vim.ui.select`, then
--- `vim.ui.input` for the new text).
---@param sid string
function M.queue_menu(sid)
  sidecar.request('session/queue/list', { sessionId = sid }, function(err, result)
    if err then
      notify('queue: ' .. describe_error(err), vim.log.levels.ERROR)
      return
    end
    local items = result.prompts or {}
    if #items == 0 then
      notify('nothing waits for this session')
      return
    end
    local held = vim.tbl_filter(function(p)
      return p.state == 'held'
    end, items)
    local choices = vim.list_extend({}, items)
    if #held > 0 then
      table.insert(choices, { action = 'resume', label = 'Run what is held (' .. #held .. ')' })
    end
    table.insert(choices, { action = 'clear', label = 'Remove all that waits (' .. #items .. ')' })
    vim.ui.select(choices, {
      prompt = 'Threadline queue',
      kind = 'threadline.queue',
      format_item = function(item)
        return item.label or chat.queued_line(item)
      end,
    }, function(item)
      if not item then
        return
      elseif item.action == 'resume' then
        M.resume_queue(sid)
      elseif item.action == 'clear' then
        M.remove(sid)
      else
        M.edit_or_remove(sid, item)
      end
    end)
  end)
end

--- Edit one waiting prompt (its text; what was attached stays) or remove it.
---@param sid string
---@param item table
function M.edit_or_remove(sid, item)
  vim.ui.select({ 'Edit', 'Remove' }, { prompt = chat.queued_line(item), kind = 'threadline.queue.item' }, function(what)
    if what == 'Remove' then
      M.remove(sid, item.id)
    elseif what == 'Edit' then
      vim.ui.input({ prompt = 'Queued prompt: ', default = chat.prompt_text(item, '\n') }, function(text)
        if not text or vim.trim(text) == '' then
          return
        end
        local prompt = { { type = 'text', text = text } }
        for _, b in ipairs(item.prompt or {}) do
          if b.type ~= 'text' then
            table.insert(prompt, b)
          end
        end
        M.update(sid, item.id, prompt)
      end)
    end
  end)
end

--- A `session/queue/*` request; `ThreadlineQueueEdited` fires with `{sessionId,
--- error?}` and what `extra(result)` adds when it answers.
---@param method string
---@param params table
---@param extra? fun(result: table): table
local function edit_queue(method, params, extra)
  sidecar.request(method, params, function(err, result)
    if err then
      notify('queue: ' .. describe_error(err), vim.log.levels.WARN)
    end
    local data = { sessionId = params.sessionId, error = err and describe_error(err) or nil }
    fire('ThreadlineQueueEdited', vim.tbl_extend('force', data, (not err and extra) and extra(result) or {}))
  end)
end

--- Replace a waiting prompt's content.
---@param sid string
---@param id string
---@param prompt table[]
function M.update(sid, id, prompt)
  edit_queue('session/queue/update', { sessionId = sid, id = id, prompt = prompt }, function()
    return { id = id }
  end)
end

--- Remove one waiting prompt, or (no id) all of them.
---@param sid string
---@param id? string
function M.remove(sid, id)
  edit_queue('session/queue/remove', { sessionId = sid, id = id }, function(result)
    return { removed = result.ids }
  end)
end

--- Let held prompts (after an interrupt, a failure or a crash) run.
---@param sid string
function M.resume_queue(sid)
  edit_queue('session/queue/resume', { sessionId = sid }, function(result)
    return { resumed = result.ids }
  end)
end

--- `:Threadline steer {text}` and `:Threadline queue [clear|resume]`.
---@param subcommands table
function M.register(subcommands)
  subcommands.steer = function(arg)
    require('threadline.commands').ask(arg, nil, 'steer')
  end
  subcommands.queue = function(arg)
    local sid = require('threadline.commands').target()
    if not sid then
      notify('no session', vim.log.levels.WARN)
    elseif arg == 'clear' then
      M.remove(sid)
    elseif arg == 'resume' then
      M.resume_queue(sid)
    else
      M.queue_menu(sid)
    end
  end
end

return M
