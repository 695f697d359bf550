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
local Chat = {}
Chat.__index = Chat

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
  chat = setmetatable({ buf = buf, session_id = session_id, messages = {}, tools = {} }, Chat)
  by_session[session_id] = chat
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
  local row, col = self:_end()
  vim.bo[self.buf].modifiable = true
  vim.api.nvim_buf_set_text(self.buf, row, col, row, col, vim.split(text, '\n', { plain = true }))
  vim.bo[self.buf].modifiable = false
  local last = vim.api.nvim_buf_line_count(self.buf)
  for _, win in ipairs(follow) do
    vim.api.nvim_win_set_cursor(win, { last, 0 })
  end
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
function Chat:user(text, attached)
  local row = self:_end()
  local lines = { '## You', '', text }
  for _, label in ipairs(attached or {}) do
    table.insert(lines, '> 📎 ' .. label)
  end
  self:block(table.concat(lines, '\n') .. '\n\n## Threadline\n\n')
  self:_highlight_from(row)
end

--- A line under the text that says what is happening (`thinking…`), or nothing.
---@param text string?
function Chat:set_status(text)
  self.status = text
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
  if self.status then
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
    local start = vim.api.nvim_buf_set_extmark(self.buf, ns, row, col, { right_gravity = false })
    self.messages[message_id] = { start = start }
    self.current = message_id
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
    return
  end
  if self.status then
    self:set_status(nil)
  end
  self:block(line)
  local row = self:_end()
  local mark = vim.api.nvim_buf_set_extmark(self.buf, ns, row, 0, { right_gravity = false })
  vim.api.nvim_buf_set_extmark(self.buf, hl_ns, row, 0, { end_col = #line, hl_group = group })
  self.tools[id] = { mark = mark, title = title, input = input, output = detail or '', status = status }
  self:append('\n')
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

--- Fill the buffer from `session/history` (a resumed or forked session).
---@param messages table[]
function Chat:replay(messages)
  vim.bo[self.buf].modifiable = true
  vim.api.nvim_buf_set_lines(self.buf, 0, -1, true, {})
  vim.bo[self.buf].modifiable = false
  vim.api.nvim_buf_clear_namespace(self.buf, hl_ns, 0, -1)
  self.messages, self.tools, self.current = {}, {}, nil
  local util = require('threadline.util')
  for _, m in ipairs(messages) do
    local texts, attached = {}, {}
    for _, b in ipairs(m.content or {}) do
      if b.type == 'text' then
        table.insert(texts, b.text)
      elseif b.type == 'resource' and type(b.resource) == 'table' then
        table.insert(attached, (b.resource.uri or ''):gsub('^file://', ''))
      end
    end
    local text = table.concat(texts)
    if m.role == 'user' and (text ~= '' or #attached > 0) then
      local row = self:_end()
      local lines = { '## You', '', text }
      for _, label in ipairs(attached) do
        table.insert(lines, '> 📎 ' .. label)
      end
      self:block(table.concat(lines, '\n') .. '\n')
      self:_highlight_from(row)
    elseif m.role == 'assistant' then
      local summary = {}
      for _, b in ipairs(m.content or {}) do
        if b.type == 'summary' then
          table.insert(summary, b.text)
        end
      end
      if #summary > 0 then
        self:note('[summary of the earlier conversation]')
        self:block(table.concat(summary) .. '\n')
      end
      if text ~= '' then
        local row = self:_end()
        self:block('## Threadline\n\n')
        self:_highlight_from(row)
        self:chunk(m.messageId, text)
        self:close_segment()
      end
      for _, b in ipairs(m.content or {}) do
        if b.type == 'tool_use' then
          self:tool(b.id, b.name, 'pending', nil, b.input)
        end
      end
      if m.truncated then
        self:note('[interrupted]')
      end
    elseif m.role == 'tool' then
      for _, b in ipairs(m.content or {}) do
        if b.type == 'tool_result' then
          local status = b.status == 'completed' and 'completed' or 'failed'
          self:tool(b.toolUseId, b.toolName or 'tool', status, util.block_text(b.content))
        end
      end
    end
  end
end

return M
