--- Context that goes with a prompt, as ACP `resource` blocks: a selection or a buffer
--- (`:Threadline send`), `#buffer` (the buffer being edited) and `@path` (a file) in
--- the prompt's text.
local editor_tools = require('threadline.editor_tools')

local M = {}

---@param path string
---@param text string
---@param first? integer
---@param last? integer
---@return table
local function resource(path, text, first, last)
  local uri = vim.uri_from_fname(path)
  if first then
    uri = ('%s#L%d-%d'):format(uri, first, last)
  end
  return {
    type = 'resource',
    resource = { uri = uri, text = text, mimeType = 'text/plain' },
  }
end

--- Lines `first`..`last` (1-based; the whole buffer without them) of `buf`.
---@param buf integer
---@param first? integer
---@param last? integer
---@return table
function M.from_buffer(buf, first, last)
  local lines = vim.api.nvim_buf_get_lines(buf, first and first - 1 or 0, last or -1, false)
  local name = vim.api.nvim_buf_get_name(buf)
  if name == '' then
    name = vim.fn.getcwd() .. '/[buffer ' .. buf .. ']'
  end
  return resource(name, table.concat(lines, '\n'), first, last)
end

--- A short label: `a.lua:3-9` or `a.lua`.
---@param block table
---@return string
function M.label(block)
  local uri = block.resource and block.resource.uri or ''
  local file, range = uri:match('^(.-)#L(%d+%-%d+)$')
  local path = vim.uri_to_fname(file or uri)
  local cwd = require('threadline.config').options.cwd or vim.fn.getcwd()
  local shown = vim.startswith(path, cwd .. '/') and path:sub(#cwd + 2) or vim.fn.fnamemodify(path, ':~:.')
  return range and (shown .. ':' .. range) or shown
end

--- `#buffer` and `@path` references in a prompt, as blocks.
---@param text string
---@return table[]
function M.references(text)
  local out = {}
  if text:find('#buffer', 1, true) then
    local buf = editor_tools.editor_buffer()
    if buf then
      table.insert(out, M.from_buffer(buf))
    end
  end
  for path in text:gmatch('@([%w%._/%-~]+)') do
    local full = vim.fn.fnamemodify(vim.fn.expand(path), ':p')
    if vim.fn.filereadable(full) == 1 then
      local buf = require('threadline.requests').loaded_buffer(full)
      if buf then
        table.insert(out, M.from_buffer(buf))
      else
        table.insert(out, resource(full, table.concat(vim.fn.readfile(full), '\n')))
      end
    end
  end
  return out
end

return M
