--- Context that goes with a prompt, as ACP `resource` blocks: a selection or a buffer
--- (`:Threadline send`), `#buffer` (the buffer being edited) and `@path` (a file) in
--- the prompt's text; and images (`:Threadline attach`) as ACP `image` blocks.
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

--- The image formats the sidecar takes, by their first bytes.
local IMAGE_MAGIC = {
  { '^\137PNG\r\n\26\n', 'image/png' },
  { '^\255\216\255', 'image/jpeg' },
  { '^GIF8[79]a', 'image/gif' },
  { '^RIFF....WEBP', 'image/webp' },
}

--- An image file as an ACP `image` block (its bytes inline, base64), or nil and why.
---@param path string
---@return table? block, string? problem
function M.image(path)
  local full = vim.fn.fnamemodify(vim.fn.expand(path), ':p')
  local f = io.open(full, 'rb')
  if not f then
    return nil, 'cannot read ' .. path
  end
  local bytes = f:read('*a')
  f:close()
  for _, m in ipairs(IMAGE_MAGIC) do
    if bytes:find(m[1]) then
      return {
        type = 'image',
        mimeType = m[2],
        data = vim.base64.encode(bytes),
        -- Where it came from, for the label (the sidecar keeps what its bytes say).
        _meta = { threadline = { image = { source = full } } },
      }
    end
  end
  return nil, path .. ' is not a PNG, JPEG, GIF or WebP image (:Threadline send attaches text)'
end

---@param path string
---@return string
local function shown_path(path)
  local cwd = require('threadline.config').options.cwd or vim.fn.getcwd()
  return vim.startswith(path, cwd .. '/') and path:sub(#cwd + 2) or vim.fn.fnamemodify(path, ':~:.')
end

--- A short label: `a.lua:3-9` or `a.lua`; an image: `🖼 a.png` (or its size and
--- format when it came from the sidecar).
---@param block table
---@return string
function M.label(block)
  if block.type == 'image' then
    local info = type(block._meta) == 'table' and type(block._meta.threadline) == 'table' and block._meta.threadline.image
      or {}
    if type(info.source) == 'string' then
      return '🖼 ' .. shown_path(info.source)
    end
    local format = tostring(block.mimeType or 'image'):gsub('^image/', ''):upper()
    return info.width and ('🖼 %d×%d %s'):format(info.width, info.height or 0, format) or ('🖼 ' .. format)
  end
  local uri = block.resource and block.resource.uri or ''
  local file, range = uri:match('^(.-)#L(%d+%-%d+)$')
  local shown = shown_path(vim.uri_to_fname(file or uri))
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
