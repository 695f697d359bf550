--- The chat buffer of one session: a markdown scratch buffer that text is appended to
--- as it streams.
---
--- Each assistant message's text lives between two extmarks, so what the buffer shows
--- for a message can be read back (`message_text`) and compared with what streamed.
--- Tool calls are one line each, rewritten in place as their status changes.
local M = {}

local ns = vim.api.nvim_create_namespace('threadline.chat')
local hl_ns = vim.api.nvim_create_namespace('threadline.chat.highlight')
local status_ns = vim.api.nvim_create_namespace('threadline.chat.status')
local id_ns = vim.api.nvim_create_namespace('threadline.chat.ids')
local hint_ns = vim.api.nvim_create_namespace('threadline.chat.hint')
local queue_ns = vim.api.nvim_create_namespace('threadline.chat.queue')
local detail_ns = vim.api.nvim_create_namespace('threadline.chat.detail')

--- Highlight groups of the chat buffer; each links to a standard group unless the user
--- (or a colorscheme) defines it.
M.highlights = {
  ThreadlineUser = 'Title',
  ThreadlineAssistant = 'Special',
  ThreadlineTool = 'Comment',
  ThreadlineToolFailed = 'DiagnosticError',
  ThreadlineNote = 'Comment',
  ThreadlineError = 'ErrorMsg',
  ThreadlineStatus = 'DiagnosticHint',
  ThreadlineContext = 'Directory',
  ThreadlineMessageId = 'NonText',
  ThreadlineHint = 'Comment',
  ThreadlineQueued = 'DiagnosticInfo',
}
for group, link in pairs(M.highlights) do
  vim.api.nvim_set_hl(0, group, { link = link, default = true })
end

---@class threadline.Chat
---@field buf integer
---@field session_id string
---@field messages table<string, {start: integer, stop: integer}> extmark ids per messageId
---@field current string? messageId of the text segment being streamed
---@field tools table<string, {mark: integer, title: string, input: any, output: string, status: string}>
---@field status string? what the status line of the buffer shows ('thinking…')
---@field sticky boolean? the status stays while text streams
---@field order threadline.ChatMessage[] the messages shown, in buffer order
---@field known table<string, boolean> message ids shown (from history or as they streamed)
---@field compactions table<string, boolean> compaction ids whose summary is shown
---@field last_role string? 'user' or 'assistant': the heading the buffer ends under
---@field live table<string, boolean> message ids shown as they streamed from another editor
---@field queue table[] prompts waiting for the session (`session_info_update` `queue`)
---@field title string? the session's title, as last announced
local Chat = {}
Chat.__index = Chat

---@class threadline.ChatMessage
---@field id string? the stored message id (a prompt's is known once the sidecar answers)
---@field role string 'user' | 'assistant'
---@field mark integer extmark at the start of the message (its heading for a prompt)
---@field text string? a prompt's text
---@field from integer? extmark where a prompt's block begins (to take it back)
---@field label integer? extmark showing the id

---@type table<string, threadline.Chat>
local by_session = {}

---@param session_id string
---@return threadline.Chat
function M.get(session_id)
  local chat = by_session[session_id]
  if chat and vim.api.nvim_buf_is_valid(chat.buf) then
    return chat
  end
  local buf = vim.api.nvim_create_buf(true, true)
  vim.api.nvim_buf_set_name(buf, 'threadline://' .. session_id)
  vim.bo[buf].buftype = 'nofile'
  vim.bo[buf].bufhidden = 'hide'
  vim.bo[buf].swapfile = false
  vim.bo[buf].filetype = 'markdown'
  vim.bo[buf].modifiable = false
  vim.b[buf].threadline_session = session_id
  chat = setmetatable({ buf = buf, session_id = session_id }, Chat)
  chat:_reset()
  by_session[session_id] = chat
  chat:_hint()
  return chat
end

---@param buf integer
---@return threadline.Chat?
function M.of_buffer(buf)
  local sid = vim.b[buf].threadline_session
  return sid and by_session[sid] or nil
end

--- All chat buffers that are still valid, by session id.
---@return table<string, threadline.Chat>
function M.all()
  local out = {}
  for sid, chat in pairs(by_session) do
    if vim.api.nvim_buf_is_valid(chat.buf) then
      out[sid] = chat
    end
  end
  return out
end

--- Forget a session's buffer (the session was deleted).
---@param session_id string
function M.drop(session_id)
  local chat = by_session[session_id]
  by_session[session_id] = nil
  if chat and vim.api.nvim_buf_is_valid(chat.buf) then
    vim.api.nvim_buf_delete(chat.buf, { force = true })
  end
end

---@param win integer
---@return boolean
local function shows_chat(win)
  local buf = vim.api.nvim_win_get_buf(win)
  return vim.b[buf].threadline_session ~= nil
end

--- Show the buffer and focus its window: a window already showing it, else (with
--- `reuse`) a window of this tab showing another chat, else a new one as `how` says.
---@param how string 'vsplit' | 'split' | 'tab' | 'current'
---@param reuse? boolean
function Chat:show(how, reuse)
  local wins = vim.api.nvim_tabpage_list_wins(0)
  for _, win in ipairs(wins) do
    if vim.api.nvim_win_get_buf(win) == self.buf then
      vim.api.nvim_set_current_win(win)
      return win
    end
  end
  local target
  if reuse then
    if shows_chat(vim.api.nvim_get_current_win()) then
      target = vim.api.nvim_get_current_win()
    else
      for _, win in ipairs(wins) do
        if shows_chat(win) then
          target = win
          break
        end
      end
    end
  end
  if target then
    vim.api.nvim_set_current_win(target)
  else
    local cmd = ({ vsplit = 'botright vsplit', split = 'botright split', tab = 'tabnew' })[how]
    if cmd then
      vim.cmd(cmd)
    end
  end
  local win = vim.api.nvim_get_current_win()
  vim.api.nvim_win_set_buf(win, self.buf)
  vim.wo[win].wrap = true
  vim.wo[win].linebreak = true
  return win
end

function Chat:_reset()
  self.messages, self.tools, self.current, self.queue = {}, {}, nil, self.queue or {}
  self.order, self.known, self.live, self.compactions, self.last_role = {}, {}, {}, {}, nil
end

--- Key hints on an empty buffer (gone with its first text).
function Chat:_hint()
  local keys = require('threadline.config').options.keys
  local parts = {}
  for _, k in ipairs({
    { 'ask', 'ask (queues while a turn runs)' },
    { 'steer', 'steer' },
    { 'queue', 'queue' },
    { 'compose', 'long prompt' },
    { 'interrupt', 'interrupt' },
    { 'details', 'details' },
  }) do
    if keys[k[1]] then
      table.insert(parts, keys[k[1]] .. ' ' .. k[2])
    end
  end
  vim.api.nvim_buf_clear_namespace(self.buf, hint_ns, 0, -1)
  vim.api.nvim_buf_set_extmark(self.buf, hint_ns, 0, 0, {
    virt_lines = {
      { { table.concat(parts, ' · '), 'ThreadlineHint' } },
      { { ':Threadline fork · compact · sessions · model · send', 'ThreadlineHint' } },
    },
  })
end

---@return integer row, integer col  the end of the buffer (0-based, col in bytes)
function Chat:_end()
  local last = vim.api.nvim_buf_line_count(self.buf) - 1
  local line = vim.api.nvim_buf_get_lines(self.buf, last, last + 1, true)[1]
  return last, #line
end

--- Windows showing the buffer whose cursor sits on the last line follow new text.
---@return integer[]
function Chat:_followers()
  local out = {}
  local last = vim.api.nvim_buf_line_count(self.buf)
  for _, win in ipairs(vim.api.nvim_list_wins()) do
    if vim.api.nvim_win_get_buf(win) == self.buf and vim.api.nvim_win_get_cursor(win)[1] >= last then
      table.insert(out, win)
    end
  end
  return out
end

--- Append text at the very end of the buffer (it may hold newlines).
---@param text string
function Chat:append(text)
  if text == '' then
    return
  end
  local follow = self:_followers()
  vim.api.nvim_buf_clear_namespace(self.buf, hint_ns, 0, -1)
  local row, col = self:_end()
  vim.bo[self.buf].modifiable = true
  vim.api.nvim_buf_set_text(self.buf, row, col, row, col, vim.split(text, '\n', { plain = true }))
  vim.bo[self.buf].modifiable = false
  local last = vim.api.nvim_buf_line_count(self.buf)
  for _, win in ipairs(follow) do
    vim.api.nvim_win_set_cursor(win, { last, 0 })
  end
  if self.sticky then
    self:set_status(self.status, true) -- stays under the last line
  end
  if self.queue and #self.queue > 0 then
    self:_show_queue() -- stays under the last line
  end
end

--- The heading an answer streams under, unless the buffer already ends under one.
function Chat:answering()
  if self.last_role ~= 'assistant' then
    local row = self:_end()
    self:block('## Threadline\n\n')
    self:_highlight_from(row)
    self.last_role = 'assistant'
  end
end

--- The text of a waiting prompt (`{id, mode, state, prompt}`), its paragraphs joined
--- by `sep`.
---@param item table
---@param sep string
---@return string
function M.prompt_text(item, sep)
  local texts = {}
  for _, b in ipairs(item.prompt or {}) do
    if b.type == 'text' then
      table.insert(texts, b.text)
    end
  end
  return table.concat(texts, sep)
end

---@param item table a waiting prompt
---@return string
local function queued_line(item)
  local text = vim.trim((M.prompt_text(item, ' '):gsub('%s+', ' ')))
  if vim.fn.strchars(text) > 70 then
    text = vim.fn.strcharpart(text, 0, 69) .. '…'
  end
  local what = item.state == 'held' and 'held' or (item.mode == 'steer' and 'steering' or 'queued')
  return ('⏳ %s: %s'):format(what, text)
end
M.queued_line = queued_line

--- The prompts waiting for the session, shown under the last line (they are not
--- part of the conversation yet); `:Threadline queue` edits them.
---@param items table[]
function Chat:set_queue(items)
  self.queue = items or {}
  self:_show_queue()
end

function Chat:_show_queue()
  vim.api.nvim_buf_clear_namespace(self.buf, queue_ns, 0, -1)
  if #self.queue == 0 then
    return
  end
  local lines = {}
  for _, item in ipairs(self.queue) do
    table.insert(lines, { { queued_line(item), 'ThreadlineQueued' } })
  end
  local key = require('threadline.config').options.keys.queue
  if key then
    table.insert(lines, { { key .. ' edits or removes what waits', 'ThreadlineHint' } })
  end
  local row = self:_end()
  vim.api.nvim_buf_set_extmark(self.buf, queue_ns, row, 0, { virt_lines = lines })
end

--- The lines the buffer shows for the waiting prompts (read back from the buffer).
---@return string[]
function Chat:shown_queue()
  local out = {}
  for _, mark in ipairs(vim.api.nvim_buf_get_extmarks(self.buf, queue_ns, 0, -1, { details = true })) do
    for _, line in ipairs(mark[4].virt_lines or {}) do
      table.insert(out, table.concat(vim.tbl_map(function(chunk)
        return chunk[1]
      end, line)))
    end
  end
  return out
end

--- Start a block on a fresh paragraph: a blank line after whatever is there.
---@param text string
function Chat:block(text)
  self:close_segment()
  local row, col = self:_end()
  local empty = row == 0 and col == 0
  if empty then
    self:append(text)
  elseif col == 0 then
    local prev = row > 0 and vim.api.nvim_buf_get_lines(self.buf, row - 1, row, true)[1] or ''
    self:append((prev == '' and '' or '\n') .. text)
  else
    self:append('\n\n' .. text)
  end
end

--- Highlight the heading lines that `text`, just appended at `first_row`, holds.
---@param first_row integer
function Chat:_highlight_from(first_row)
  local lines = vim.api.nvim_buf_get_lines(self.buf, first_row, -1, false)
  for i, line in ipairs(lines) do
    local group = (line == '## You' and 'ThreadlineUser')
      or (line == '## Threadline' and 'ThreadlineAssistant')
      or (line:match('^> 📎 ') and 'ThreadlineContext')
      or nil
    if group then
      local row = first_row + i - 1
      vim.api.nvim_buf_set_extmark(self.buf, hl_ns, row, 0, { end_col = #line, hl_group = group })
    end
  end
end

--- The user's prompt (and what was attached to it), then the heading the answer
--- streams under.
---@param text string
---@param attached? string[] labels of attached context (file names, ranges)
---@param id? string the stored message id, when known
---@param answer? boolean false: no `## Threadline` heading after it (a prompt from history)
---@return threadline.ChatMessage
function Chat:user(text, attached, id, answer)
  self:close_segment()
  local row, col = self:_end()
  local from = vim.api.nvim_buf_set_extmark(self.buf, ns, row, col, { right_gravity = false })
  local lines = { '## You', '', text }
  for _, label in ipairs(attached or {}) do
    table.insert(lines, '> 📎 ' .. label)
  end
  self:block(table.concat(lines, '\n') .. (answer == false and '\n' or '\n\n## Threadline\n\n'))
  self:_highlight_from(row)
  local heading = row
  for i, line in ipairs(vim.api.nvim_buf_get_lines(self.buf, row, -1, false)) do
    if line == '## You' then
      heading = row + i - 1
      break
    end
  end
  local entry = self:_add_message(id, 'user', heading, 0)
  entry.text, entry.from = text, from
  self.last_role = answer == false and 'user' or 'assistant'
  return entry
end

--- Take back a prompt block that was never sent (the sidecar refused it): the buffer
--- ends as it did before it.
---@param entry threadline.ChatMessage
function Chat:unsay(entry)
  self:set_status(nil)
  self:close_segment()
  local pos = vim.api.nvim_buf_get_extmark_by_id(self.buf, ns, entry.from, {})
  local row, col = self:_end()
  vim.bo[self.buf].modifiable = true
  vim.api.nvim_buf_set_text(self.buf, pos[1], pos[2], row, col, { '' })
  vim.bo[self.buf].modifiable = false
  for i, e in ipairs(self.order) do
    if e == entry then
      table.remove(self.order, i)
      break
    end
  end
  local prev = self.order[#self.order]
  self.last_role = prev and prev.role or nil
end

--- Remember a message shown at (row, col), and show its id at the end of that line.
---@param id string?
---@param role string
---@param row integer
---@param col integer
---@return threadline.ChatMessage
function Chat:_add_message(id, role, row, col)
  local mark = vim.api.nvim_buf_set_extmark(self.buf, ns, row, col, { right_gravity = false })
  local entry = { role = role, mark = mark }
  table.insert(self.order, entry)
  if id then
    self:set_message_id(entry, id)
  end
  return entry
end

--- The stored id of a message shown (a prompt's comes with the sidecar's answer).
---@param entry threadline.ChatMessage
---@param id string
function Chat:set_message_id(entry, id)
  entry.id = id
  self.known[id] = true
  local row = vim.api.nvim_buf_get_extmark_by_id(self.buf, ns, entry.mark, {})[1]
  entry.label = vim.api.nvim_buf_set_extmark(self.buf, id_ns, row, 0, {
    id = entry.label,
    virt_text = { { '  ' .. id, 'ThreadlineMessageId' } },
    virt_text_pos = 'eol',
    right_gravity = false, -- stays on its line while the message streams in after it
  })
end

--- The message a buffer line belongs to (the last one starting at or above it), and
--- whether it is the last message shown.
---@param row integer 0-based
---@return threadline.ChatMessage?, boolean
function Chat:message_at(row)
  local found, last
  for _, e in ipairs(self.order) do
    if e.id then
      last = e
      if vim.api.nvim_buf_get_extmark_by_id(self.buf, ns, e.mark, {})[1] <= row then
        found = e
      end
    end
  end
  return found, found ~= nil and found == last
end

--- The buffer row (0-based) where a message starts, or a tool call's line; nil when
--- the buffer does not show it.
---@param message_id? string
---@param tool_call_id? string
---@return integer?
function Chat:row_of(message_id, tool_call_id)
  local mark
  if tool_call_id and self.tools[tool_call_id] then
    mark = self.tools[tool_call_id].mark
  else
    for _, e in ipairs(self.order) do
      if message_id and e.id == message_id then
        mark = e.mark
        break
      end
    end
  end
  return mark and vim.api.nvim_buf_get_extmark_by_id(self.buf, ns, mark, {})[1] or nil
end

--- Ids of the messages shown, in buffer order.
---@return string[]
function Chat:message_ids()
  local out = {}
  for _, e in ipairs(self.order) do
    if e.id then
      table.insert(out, e.id)
    end
  end
  return out
end

--- A short quote of a message (the first words of its text) and its role.
---@param id string
---@return string? quote, string? role
function Chat:quote(id)
  for _, e in ipairs(self.order) do
    if e.id == id then
      local text = e.text or self:message_text(id) or ''
      text = vim.trim((text:gsub('%s+', ' ')))
      if vim.fn.strchars(text) > 40 then
        text = vim.fn.strcharpart(text, 0, 39) .. '…'
      end
      return text, e.role
    end
  end
end

--- A line under the text that says what is happening (`thinking…`), or nothing.
--- `sticky`: it stays (under the last line) while text streams, until it is replaced
--- (who runs a turn in another editor); else the first words take it away.
---@param text string?
---@param sticky? boolean
function Chat:set_status(text, sticky)
  self.status, self.sticky = text, text ~= nil and sticky == true
  vim.api.nvim_buf_clear_namespace(self.buf, status_ns, 0, -1)
  if text then
    local row = self:_end()
    vim.api.nvim_buf_set_extmark(self.buf, status_ns, row, 0, {
      virt_lines = { { { '⋯ ' .. text, 'ThreadlineStatus' } } },
    })
  end
end

--- One streamed piece of an assistant message.
---@param message_id string
---@param text string
function Chat:chunk(message_id, text)
  if self.status and not self.sticky then
    self:set_status(nil)
  end
  if self.current ~= message_id then
    self:close_segment()
    local row, col = self:_end()
    local prev = row > 0 and vim.api.nvim_buf_get_lines(self.buf, row - 1, row, true)[1] or ''
    if col ~= 0 or prev ~= '' then -- a new paragraph
      self:append(col ~= 0 and '\n\n' or '\n')
      row, col = self:_end()
    end
    local seen = self.messages[message_id] ~= nil
    local start = vim.api.nvim_buf_set_extmark(self.buf, ns, row, col, { right_gravity = false })
    self.messages[message_id] = { start = start }
    self.current = message_id
    if not seen then
      self:set_message_id(self:_add_message(nil, 'assistant', row, col), message_id)
    end
    self.last_role = 'assistant'
  end
  self:append(text)
end

--- Mark where the message being streamed ends (before anything else is appended).
function Chat:close_segment()
  local id = self.current
  if not id then
    return
  end
  local row, col = self:_end()
  self.messages[id].stop = vim.api.nvim_buf_set_extmark(self.buf, ns, row, col, { right_gravity = false })
  self.current = nil
end

--- What the buffer shows for an assistant message.
---@param message_id string
---@return string?
function Chat:message_text(message_id)
  local m = self.messages[message_id]
  if not m then
    return nil
  end
  local s = vim.api.nvim_buf_get_extmark_by_id(self.buf, ns, m.start, {})
  local e
  if m.stop then
    e = vim.api.nvim_buf_get_extmark_by_id(self.buf, ns, m.stop, {})
  else
    e = { self:_end() }
  end
  return table.concat(vim.api.nvim_buf_get_text(self.buf, s[1], s[2], e[1], e[2], {}), '\n')
end

local ICON = { pending = '⚙', in_progress = '⚙', completed = '✓', failed = '✗' }

--- One line per tool call, rewritten in place as its status changes; the whole
--- arguments and result are kept for `details` (the `K` key).
---@param id string
---@param title string
---@param status string
---@param detail? string the result (or why the call was refused)
---@param input? any the arguments
function Chat:tool(id, title, status, detail, input)
  local entry = self.tools[id]
  if entry then
    entry.status = status
    if detail and detail ~= '' then
      entry.output = detail
    end
    if input ~= nil then
      entry.input = input
    end
  end
  -- A bare tool name gets its arguments; a title like `Read a.txt` already says them.
  local args = title:find(' ') and '' or require('threadline.util').args_line(input or (entry and entry.input), 60)
  local line = ('%s %s%s (%s)'):format(ICON[status] or '•', title, args ~= '' and (' ' .. args) or '', status)
  if entry and entry.child then
    line = line .. ' ↳ ' .. entry.child
  end
  if detail and detail ~= '' then
    line = line .. ' — ' .. detail:gsub('%s+', ' '):sub(1, 120)
  end
  local group = status == 'failed' and 'ThreadlineToolFailed' or 'ThreadlineTool'
  if entry then
    -- Replace the text of the line, not the line: the mark at its start stays put.
    local row = vim.api.nvim_buf_get_extmark_by_id(self.buf, ns, entry.mark, {})[1]
    local old = vim.api.nvim_buf_get_lines(self.buf, row, row + 1, true)[1]
    vim.bo[self.buf].modifiable = true
    vim.api.nvim_buf_set_text(self.buf, row, 0, row, #old, { line })
    vim.bo[self.buf].modifiable = false
    vim.api.nvim_buf_clear_namespace(self.buf, hl_ns, row, row + 1)
    vim.api.nvim_buf_set_extmark(self.buf, hl_ns, row, 0, { end_col = #line, hl_group = group })
    if entry.open then
      self:_show_detail(entry)
    end
    return
  end
  if self.status and not self.sticky then
    self:set_status(nil)
  end
  self:block(line)
  local row = self:_end()
  local mark = vim.api.nvim_buf_set_extmark(self.buf, ns, row, 0, { right_gravity = false })
  vim.api.nvim_buf_set_extmark(self.buf, hl_ns, row, 0, { end_col = #line, hl_group = group })
  self.tools[id] = { mark = mark, title = title, input = input, output = detail or '', status = status }
  self:append('\n')
end

--- The child session a `delegate` call runs: named on its line; `gO` on the line
--- opens it, `<Tab>` shows or hides the child's progress under it.
---@param id string
---@param child? string
function Chat:set_child(id, child)
  local entry = self.tools[id]
  if entry and child then
    entry.child = child
  end
end

--- Show or hide a tool call's whole result under its line (a `delegate` call's child
--- progress: its calls and latest text).
---@param entry table
function Chat:toggle_detail(entry)
  entry.open = not entry.open
  self:_show_detail(entry)
end

function Chat:_show_detail(entry)
  if entry.detail_mark then
    vim.api.nvim_buf_del_extmark(self.buf, detail_ns, entry.detail_mark)
    entry.detail_mark = nil
  end
  if not entry.open or entry.output == '' then
    return
  end
  local row = vim.api.nvim_buf_get_extmark_by_id(self.buf, ns, entry.mark, {})[1]
  local lines = {}
  for _, line in ipairs(vim.split(entry.output, '\n', { plain = true })) do
    table.insert(lines, { { '    ' .. line, 'ThreadlineTool' } })
  end
  entry.detail_mark = vim.api.nvim_buf_set_extmark(self.buf, detail_ns, row, 0, { virt_lines = lines })
end

--- The lines shown under a tool call's line (its result, when expanded).
---@param id string
---@return string[]
function Chat:shown_detail(id)
  local entry = self.tools[id]
  if not entry or not entry.detail_mark then
    return {}
  end
  local mark = vim.api.nvim_buf_get_extmark_by_id(self.buf, detail_ns, entry.detail_mark, { details = true })
  return vim.tbl_map(function(line)
    return line[1][1]
  end, mark[3] and mark[3].virt_lines or {})
end

--- The tool call on a buffer line, if any.
---@param row integer 0-based
---@return {title: string, input: any, output: string, status: string}?
function Chat:tool_at(row)
  for _, entry in pairs(self.tools) do
    local pos = vim.api.nvim_buf_get_extmark_by_id(self.buf, ns, entry.mark, {})
    if pos[1] == row then
      return entry
    end
  end
end

---@param id string
---@return string?
function Chat:tool_title(id)
  return self.tools[id] and self.tools[id].title or nil
end

--- A short italic note on its own paragraph: `_[interrupted]_`, usage, errors.
---@param text string
---@param group? string highlight group (default ThreadlineNote)
function Chat:note(text, group)
  self:block('_' .. text .. '_\n')
  local row = self:_end() - 1
  local line = vim.api.nvim_buf_get_lines(self.buf, row, row + 1, false)[1] or ''
  vim.api.nvim_buf_set_extmark(self.buf, hl_ns, row, 0, { end_col = #line, hl_group = group or 'ThreadlineNote' })
end

--- A compaction's summary, shown as one (once per compaction).
---@param text string
---@param compaction_id? string
function Chat:summary(text, compaction_id)
  if compaction_id then
    if self.compactions[compaction_id] then
      return
    end
    self.compactions[compaction_id] = true
  end
  if text == '' then
    return
  end
  self:note('[summary of the earlier conversation]')
  local row = self:_end()
  self:block('> ' .. text:gsub('\n', '\n> ') .. '\n')
  local lines = vim.api.nvim_buf_get_lines(self.buf, row, -1, false)
  for i, line in ipairs(lines) do
    if line:match('^>') then
      vim.api.nvim_buf_set_extmark(self.buf, hl_ns, row + i - 1, 0, { end_col = #line, hl_group = 'ThreadlineNote' })
    end
  end
  self.last_role = nil
end

--- Show one stored message (from `session/history`) at the end of the buffer; what is
--- already shown (the message, its tool calls, its summary) is not shown twice.
---@param m table
function Chat:render_message(m)
  local util = require('threadline.util')
  local label = require('threadline.context').label
  if m.role == 'tool' then
    for _, b in ipairs(m.content or {}) do
      if b.type == 'tool_result' then
        local status = b.status == 'completed' and 'completed' or 'failed'
        local entry = self.tools[b.toolUseId]
        self:set_child(b.toolUseId, type(b.childSessionId) == 'string' and b.childSessionId or nil)
        if not entry or entry.status ~= status or b.childSessionId then
          self:tool(b.toolUseId, (entry and entry.title) or b.toolName or 'tool', status, util.block_text(b.content))
        end
      end
    end
    return
  end
  local fresh = not (m.messageId and self.known[m.messageId])
  local texts, attached, summary = {}, {}, {}
  for _, b in ipairs(m.content or {}) do
    if b.type == 'text' then
      table.insert(texts, b.text)
    elseif (b.type == 'resource' and type(b.resource) == 'table') or b.type == 'image' then
      table.insert(attached, label(b))
    elseif b.type == 'summary' then
      self:summary(b.text or '', b.compactionId or m.messageId)
    end
  end
  local text = table.concat(texts)
  if m.role == 'user' then
    if fresh and (text ~= '' or #attached > 0) then
      self:user(text, attached, m.messageId, false)
    end
    return
  end
  if fresh and text ~= '' then
    self:answering()
    self:chunk(m.messageId, text)
    self:close_segment()
  end
  for _, b in ipairs(m.content or {}) do
    if b.type == 'tool_use' and not self.tools[b.id] then
      self:tool(b.id, b.name, 'pending', nil, b.input)
    end
  end
  if fresh and m.truncated then
    self:note('[interrupted]')
  end
  if m.messageId then
    self.known[m.messageId] = true
  end
end

--- Fill the buffer from `session/history` (a resumed or forked session).
---@param messages table[]
function Chat:replay(messages)
  vim.bo[self.buf].modifiable = true
  vim.api.nvim_buf_set_lines(self.buf, 0, -1, true, {})
  vim.bo[self.buf].modifiable = false
  for _, space in ipairs({ hl_ns, id_ns, ns, detail_ns }) do
    vim.api.nvim_buf_clear_namespace(self.buf, space, 0, -1)
  end
  self:_reset()
  self:catch_up(messages)
  -- What was shown under the last line goes under the new last line.
  self:set_status(self.status, self.sticky)
  self:_show_queue()
end

--- Show what `session/history` holds that the buffer does not (turns made in another
--- editor, a turn that ended elsewhere).
---@param messages table[]
function Chat:catch_up(messages)
  for _, m in ipairs(messages) do
    self:render_message(m)
  end
  if #self.order == 0 and vim.api.nvim_buf_line_count(self.buf) == 1 then
    self:_hint()
  end
end

return M
