--- Finding a session among many: `:Threadline search {words}` is a picker over
--- `session/search`'s hits (Telescope or fzf-lua when installed, `vim.ui.select`
--- otherwise) that opens the session with the cursor on the hit's message;
--- `:Threadline rename {title}` and `:Threadline archive` / `unarchive` act on a session
--- (the current chat buffer's, else the one used last).
local commands = require('threadline.commands')
local chat = require('threadline.chat')
local sidecar = require('threadline.sidecar')
local util = require('threadline.util')

local M = {}

local notify, fire, describe_error = util.notify, util.fire, util.describe_error

local WHERE = { user = 'your message', assistant = 'an answer', tool = 'a tool result', title = 'the title' }

--- A snippet's text on one line, the matched words between `open` and `close`.
---@param spans {text: string, match: boolean}[]
---@param open? string default '['
---@param close? string default ']'
---@return string
function M.snippet(spans, open, close)
  open, close = open or '[', close or ']'
  local out = {}
  for _, s in ipairs(spans or {}) do
    table.insert(out, s.match and (open .. s.text .. close) or s.text)
  end
  return vim.trim((table.concat(out):gsub('%s+', ' ')))
end

--- One line for a hit: the session's title, where and when, and the snippet.
---@param hit table a `session/search` hit
---@return string
function M.label(hit)
  local title = (hit.title and hit.title ~= '') and hit.title or 'Untitled session'
  local when = (hit.updatedAt or ''):sub(1, 16):gsub('T', ' ')
  return ('%s — in %s · %s%s: %s'):format(
    title,
    WHERE[hit.role] or hit.role,
    when,
    hit.archived and ' · archived' or '',
    M.snippet(hit.snippet)
  )
end

--- Which picker shows the hits: the configured one, else Telescope, fzf-lua or
--- `vim.ui.select`, the first installed.
---@return 'telescope'|'fzf-lua'|'select'
function M.picker()
  local chosen = require('threadline.config').options.picker
  if chosen and chosen ~= 'auto' then
    return chosen
  end
  if pcall(require, 'telescope.pickers') then
    return 'telescope'
  end
  if pcall(require, 'fzf-lua') then
    return 'fzf-lua'
  end
  return 'select'
end

---@param hits table[]
---@param title string
---@param on_choice fun(hit: table)
local function telescope(hits, title, on_choice)
  local pickers, finders = require('telescope.pickers'), require('telescope.finders')
  local conf = require('telescope.config').values
  local actions, action_state = require('telescope.actions'), require('telescope.actions.state')
  pickers
    .new({}, {
      prompt_title = title,
      finder = finders.new_table({
        results = hits,
        entry_maker = function(hit)
          local line = M.label(hit)
          return { value = hit, display = line, ordinal = line }
        end,
      }),
      sorter = conf.generic_sorter({}),
      attach_mappings = function(bufnr)
        actions.select_default:replace(function()
          actions.close(bufnr)
          local entry = action_state.get_selected_entry()
          if entry then
            on_choice(entry.value)
          end
        end)
        return true
      end,
    })
    :find()
end

---@param hits table[]
---@param title string
---@param on_choice fun(hit: table)
local function fzf(hits, title, on_choice)
  local lines = {}
  for i, hit in ipairs(hits) do
    lines[i] = ('%d. %s'):format(i, M.label(hit))
  end
  require('fzf-lua').fzf_exec(lines, {
    prompt = title .. '> ',
    actions = {
      default = function(selected)
        local i = selected and selected[1] and tonumber(selected[1]:match('^(%d+)%.'))
        if i and hits[i] then
          on_choice(hits[i])
        end
      end,
    },
  })
end

--- Show `hits` in the picker; `on_choice` gets the hit chosen.
---@param hits table[]
---@param query string
---@param on_choice fun(hit: table)
function M.pick(hits, query, on_choice)
  local title = ('Threadline: %d hit%s for “%s”'):format(#hits, #hits == 1 and '' or 's', query)
  local which = M.picker()
  if which == 'telescope' then
    return telescope(hits, title, on_choice)
  elseif which == 'fzf-lua' then
    return fzf(hits, title, on_choice)
  end
  vim.ui.select(hits, { prompt = title, kind = 'threadline.search', format_item = M.label }, function(hit)
    if hit then
      on_choice(hit)
    end
  end)
end

--- Put the cursor on a row of a chat buffer, in the window showing it.
---@param c threadline.Chat
---@param row integer 0-based
local function put_cursor(c, row)
  local win = vim.fn.bufwinid(c.buf)
  if win ~= -1 then
    vim.api.nvim_win_set_cursor(win, { row + 1, 0 })
    vim.api.nvim_win_call(win, function()
      vim.cmd('normal! zz')
    end)
  end
end

--- Open a hit's session and put the cursor on its message (a tool result: on its tool
--- call's line; a title hit: at the top). Fires `User ThreadlineOpened` with
--- {sessionId, messageId, row} (row 1-based, nil when the buffer does not show it).
---@param hit table a `session/search` hit
function M.open(hit)
  commands.resume(hit.sessionId, function(c)
    c = c or chat.all()[hit.sessionId]
    local function place(tool_call_id)
      local row = c and (hit.messageId and c:row_of(hit.messageId, tool_call_id) or 0)
      if row then
        put_cursor(c, row)
      end
      fire('ThreadlineOpened', { sessionId = hit.sessionId, messageId = hit.messageId, row = row and row + 1 })
    end
    if hit.role ~= 'tool' or not hit.messageId then
      return place(nil)
    end
    -- The buffer shows a tool result on its call's line: find the call.
    sidecar.request('session/history', { sessionId = hit.sessionId }, function(err, result)
      local call
      for _, m in ipairs(not err and result.messages or {}) do
        if m.messageId == hit.messageId then
          for _, b in ipairs(m.content or {}) do
            if b.type == 'tool_result' then
              call = call or b.toolUseId
            end
          end
        end
      end
      place(call)
    end)
  end)
end

--- `:Threadline search {words}`: search every session's title and messages.
---@param query string
function M.search(query)
  if not query or vim.trim(query) == '' then
    notify('search needs words: :Threadline search {words}', vim.log.levels.WARN)
    return
  end
  sidecar.request('session/search', { query = query, limit = 50 }, function(err, result)
    if err then
      notify('search: ' .. describe_error(err), vim.log.levels.WARN)
      return
    end
    local hits = result.hits or {}
    fire('ThreadlineSearched', { query = query, hits = hits })
    if #hits == 0 then
      notify(('nothing found for “%s”'):format(query))
      return
    end
    M.pick(hits, query, M.open)
  end)
end

--- `:Threadline rename {title}`: give a session another title.
---@param title string
---@param session_id? string
function M.rename(title, session_id)
  local sid = commands.target(session_id)
  if not sid then
    notify('no session to rename', vim.log.levels.WARN)
    return
  end
  if not title or vim.trim(title) == '' then
    notify('rename needs a title: :Threadline rename {title}', vim.log.levels.WARN)
    return
  end
  sidecar.request('session/set_title', { sessionId = sid, title = title }, function(err)
    if err then
      notify('rename: ' .. describe_error(err), vim.log.levels.ERROR)
      return
    end
    local shown = vim.trim((title:gsub('%s+', ' ')))
    notify(('renamed to “%s”'):format(shown))
    fire('ThreadlineRenamed', { sessionId = sid, title = shown })
  end)
end

--- `:Threadline archive` / `unarchive`: take a session out of `:Threadline sessions`
--- (it stays searchable and can be resumed), or put it back.
---@param archived boolean
---@param session_id? string
function M.archive(archived, session_id)
  local sid = commands.target(session_id)
  if not sid then
    notify('no session to ' .. (archived and 'archive' or 'unarchive'), vim.log.levels.WARN)
    return
  end
  sidecar.request('session/archive', { sessionId = sid, archived = archived }, function(err)
    if err then
      notify((archived and 'archive: ' or 'unarchive: ') .. describe_error(err), vim.log.levels.ERROR)
      return
    end
    notify(archived and 'archived (:Threadline search still finds it; :Threadline unarchive puts it back)' or 'unarchived')
    fire('ThreadlineArchived', { sessionId = sid, archived = archived })
  end)
end

--- Register the subcommands with `:Threadline`.
---@param subcommands table<string, fun(arg: string)>
function M.register(subcommands)
  subcommands.search = M.search
  subcommands.rename = function(arg)
    M.rename(arg)
  end
  subcommands.archive = function(arg)
    M.archive(true, arg ~= '' and arg or nil)
  end
  subcommands.unarchive = function(arg)
    M.archive(false, arg ~= '' and arg or nil)
  end
end

return M
