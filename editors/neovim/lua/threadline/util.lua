--- Small helpers shared by the plugin's modules.
local M = {}

---@param msg string
---@param level? integer
function M.notify(msg, level)
  vim.notify('threadline: ' .. msg, level or vim.log.levels.INFO)
end

---@param pattern string
---@param data any
function M.fire(pattern, data)
  vim.api.nvim_exec_autocmds('User', { pattern = pattern, modeline = false, data = data })
end

--- An RPC error in words. The numeric code goes to the log, not to the user.
---@param err any
---@return string
function M.describe_error(err)
  if type(err) ~= 'table' then
    return tostring(err)
  end
  local reason = type(err.data) == 'table' and err.data.reason or nil
  if err.code then
    vim.lsp.log.debug('threadline error', err.code, err.message, err.data)
  end
  local text = err.message or 'unknown error'
  if err.code == -32002 then
    -- The sidecar says `unknown session: sess_…`; the usual cause is a delete elsewhere.
    local sid = type(err.data) == 'table' and err.data.sessionId or text:match('(sess_%S+)') or ''
    return ('session %s no longer exists: it was deleted (perhaps in another editor) or never existed'):format(sid)
  end
  local words = type(reason) == 'string' and reason:gsub('_', ' ') or nil
  if words and not text:lower():find(words:lower(), 1, true) then
    text = text .. ' (' .. words .. ')'
  end
  return text
end

--- The text of ACP content: a block, a list of blocks, or tool call content.
---@param content any
---@return string
function M.block_text(content)
  if type(content) ~= 'table' then
    return ''
  end
  if content.type then
    content = { content }
  end
  local out = {}
  for _, c in ipairs(content) do
    local inner = c.type == 'content' and c.content or c
    if type(inner) == 'table' and type(inner.text) == 'string' then
      table.insert(out, inner.text)
    end
  end
  return table.concat(out)
end

--- Arguments as one readable line: `path=a.txt, content=3 lines`.
---@param args any
---@param limit? integer
---@return string
function M.args_line(args, limit)
  limit = limit or 120
  if type(args) ~= 'table' or vim.tbl_isempty(args) then
    return ''
  end
  local keys = vim.tbl_keys(args)
  table.sort(keys)
  local parts = {}
  for _, k in ipairs(keys) do
    local v = args[k]
    local shown
    if type(v) == 'string' then
      local _, nl = v:gsub('\n', '')
      shown = nl > 0 and ('%d lines'):format(nl + 1) or v
    else
      shown = vim.json.encode(v)
    end
    table.insert(parts, ('%s=%s'):format(k, shown))
  end
  local line = table.concat(parts, ', ')
  if #line > limit then
    line = line:sub(1, limit - 3) .. '...'
  end
  return line
end

return M
