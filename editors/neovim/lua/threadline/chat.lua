--- The chat buffer of one session: a markdown scratch buffer that text is appended to
--- as it streams.
---
--- Each assistant message's text lives between two extmarks, so what the buffer shows
--- for a message can be read back (`message_text`) and compared with what streamed.
--- Tool calls are one line each, rewritten in place as their status changes.
local M = {}

local ns = vim.api.nvim_create_namespace('threadline.chat')

---@class threadline.Chat
---@field buf integer
---@field session_id string
---@field messages table<string, {start: integer, stop: integer}> extmark ids per messageId
---@field current string? messageId of the text segment being streamed
---@field tools table<string, {mark: integer, title: string}>
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

--- Show the buffer (unless a window already does) as `how` says.
---@param how string 'vsplit' | 'split' | 'tab' | 'current'
function Chat:show(how)
  for _, win in ipairs(vim.api.nvim_list_wins()) do
    if vim.api.nvim_win_get_buf(win) == self.buf then
      return win
    end
  end
  local cmd = ({ vsplit = 'botright vsplit', split = 'botright split', tab = 'tabnew' })[how]
  if cmd then
    vim.cmd(cmd)
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

--- The user's prompt, then the heading the answer streams under.
---@param text string
function Chat:user(text)
  self:block('## You\n\n' .. text .. '\n\n## Threadline\n\n')
end

--- One streamed piece of an assistant message.
---@param message_id string
---@param text string
function Chat:chunk(message_id, text)
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

---@param id string
---@param title string
---@param status string
---@param detail? string
function Chat:tool(id, title, status, detail)
  local line = ('%s %s (%s)'):format(ICON[status] or '•', title, status)
  if detail and detail ~= '' then
    line = line .. ' — ' .. detail:gsub('%s+', ' '):sub(1, 120)
  end
  local entry = self.tools[id]
  if entry then
    -- Replace the text of the line, not the line: the mark at its start stays put.
    local row = vim.api.nvim_buf_get_extmark_by_id(self.buf, ns, entry.mark, {})[1]
    local old = vim.api.nvim_buf_get_lines(self.buf, row, row + 1, true)[1]
    vim.bo[self.buf].modifiable = true
    vim.api.nvim_buf_set_text(self.buf, row, 0, row, #old, { line })
    vim.bo[self.buf].modifiable = false
    return
  end
  self:block(line)
  local row = self:_end()
  local mark = vim.api.nvim_buf_set_extmark(self.buf, ns, row, 0, { right_gravity = false })
  self.tools[id] = { mark = mark, title = title }
  self:append('\n')
end

---@param id string
---@return string?
function Chat:tool_title(id)
  return self.tools[id] and self.tools[id].title or nil
end

--- A short italic note on its own paragraph: `_[interrupted]_`, usage, errors.
---@param text string
function Chat:note(text)
  self:block('_' .. text .. '_\n')
end

--- Fill the buffer from `session/history` (a resumed or forked session).
---@param messages table[]
function Chat:replay(messages)
  vim.bo[self.buf].modifiable = true
  vim.api.nvim_buf_set_lines(self.buf, 0, -1, true, {})
  vim.bo[self.buf].modifiable = false
  self.messages, self.tools, self.current = {}, {}, nil
  for _, m in ipairs(messages) do
    local texts = {}
    for _, b in ipairs(m.content or {}) do
      if b.type == 'text' or b.type == 'summary' then
        table.insert(texts, b.text)
      end
    end
    local text = table.concat(texts)
    if m.role == 'user' and text ~= '' then
      self:block('## You\n\n' .. text .. '\n')
    elseif m.role == 'assistant' then
      if text ~= '' then
        self:block('## Threadline\n\n')
        self:chunk(m.messageId, text)
        self:close_segment()
      end
      if m.truncated then
        self:note('[interrupted]')
      end
    end
  end
end

return M
