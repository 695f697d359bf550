--- Built-in editor tools the model may call (`tool/call`), as the VS Code extension
--- offers them: the selection, the open files, a file as the editor sees it (unsaved
--- text included), and the diagnostics. "The editor" is the last window that showed a
--- file (not a chat buffer), followed with `WinEnter`/`BufEnter`.
local M = {}

---@type {win: integer, buf: integer}?
M.last = nil

--- Remember `buf` (shown in `win`) as the user's editor, if it is a file buffer.
---@param buf integer
---@param win integer
function M.track(buf, win)
  if vim.bo[buf].buftype == '' and vim.b[buf].threadline_session == nil and vim.api.nvim_buf_get_name(buf) ~= '' then
    M.last = { win = win, buf = buf }
  end
end

---@return integer? buf
function M.editor_buffer()
  if M.last and vim.api.nvim_buf_is_valid(M.last.buf) then
    return M.last.buf
  end
end

local NO_ARGS = { type = 'object', properties = vim.empty_dict(), additionalProperties = false }

local function text(value, is_error)
  return { content = { { type = 'text', text = value } }, isError = is_error or false }
end

---@param buf integer
---@param extra? string more to say in the parentheses
local function describe(buf, extra)
  local name = vim.api.nvim_buf_get_name(buf)
  local ft = vim.bo[buf].filetype ~= '' and vim.bo[buf].filetype or vim.filetype.match({ buf = buf }) or 'text'
  return ('%s (%s%s%s)'):format(name, ft, extra or '', vim.bo[buf].modified and ', unsaved changes' or '')
end

--- The last visual selection of `buf` ('< and '>), or nil if it has none.
---@param buf integer
---@return integer? first, integer? last 1-based lines
function M.selection_lines(buf)
  local a = vim.api.nvim_buf_get_mark(buf, '<')
  local b = vim.api.nvim_buf_get_mark(buf, '>')
  if a[1] == 0 or b[1] == 0 then
    return nil
  end
  local n = vim.api.nvim_buf_line_count(buf)
  return math.min(a[1], n), math.min(b[1], n)
end

local function selection()
  local buf = M.editor_buffer()
  if not buf then
    return text('No file is open in an editor window.')
  end
  local head = describe(buf)
  local first, last = M.selection_lines(buf)
  local cursor = (M.last and vim.api.nvim_win_is_valid(M.last.win) and vim.api.nvim_win_get_buf(M.last.win) == buf)
      and vim.api.nvim_win_get_cursor(M.last.win)
    or { 1, 0 }
  if not first then
    return text(('%s\ncursor at line %d, column %d; nothing selected'):format(head, cursor[1], cursor[2] + 1))
  end
  local lines = vim.api.nvim_buf_get_lines(buf, first - 1, last, false)
  local range = first == last and ('line %d'):format(first) or ('lines %d-%d'):format(first, last)
  return text(('%s\nselection: %s\n\n%s'):format(head, range, table.concat(lines, '\n')))
end

local function open_files()
  local out = {}
  for _, buf in ipairs(vim.api.nvim_list_bufs()) do
    if vim.api.nvim_buf_is_loaded(buf) and vim.bo[buf].buftype == '' and vim.api.nvim_buf_get_name(buf) ~= '' then
      local extra = (', %d lines%s'):format(vim.api.nvim_buf_line_count(buf), buf == M.editor_buffer() and ', active' or '')
      local line = describe(buf, extra)
      table.insert(out, line)
    end
  end
  if #out == 0 then
    return text('No files are open.')
  end
  return text(table.concat(out, '\n'))
end

---@param path string
---@param cwd string
local function absolute(path, cwd)
  if path:sub(1, 1) == '/' then
    return path
  end
  return vim.fs.joinpath(cwd, path)
end

local function read_file(args, cwd)
  if type(args.path) ~= 'string' or args.path == '' then
    return text('editor_read_file needs a `path`', true)
  end
  local result, err = require('threadline.requests').read_text_file({
    path = absolute(args.path, cwd),
    line = args.line,
    limit = args.limit,
  })
  if not result then
    return text(('cannot read %s: %s'):format(args.path, err and err.message or '?'), true)
  end
  return text(result.content)
end

local SEVERITY = { 'error', 'warning', 'information', 'hint' }

local function diagnostics(args, cwd)
  local bufnr = nil
  if type(args.path) == 'string' and args.path ~= '' then
    bufnr = require('threadline.requests').loaded_buffer(absolute(args.path, cwd))
    if not bufnr then
      return text(('No diagnostics for %s (it is not open).'):format(args.path))
    end
  end
  local worst = 4
  for i, name in ipairs(SEVERITY) do
    if args.severity == name then
      worst = i
    end
  end
  local out = {}
  for _, d in ipairs(vim.diagnostic.get(bufnr)) do
    if d.severity <= worst then
      table.insert(
        out,
        ('%s:%d:%d: %s: %s%s'):format(
          vim.api.nvim_buf_get_name(d.bufnr),
          d.lnum + 1,
          d.col + 1,
          SEVERITY[d.severity] or '?',
          d.message,
          d.source and (' [' .. d.source .. ']') or ''
        )
      )
    end
  end
  if #out == 0 then
    return text(args.path and ('No diagnostics for %s.'):format(args.path) or 'No diagnostics.')
  end
  return text(table.concat(out, '\n'))
end

--- The tools, in the shape of `threadline.Tool` (config.tools).
---@param cwd fun(): string the folder relative paths resolve against
---@return threadline.Tool[]
function M.tools(cwd)
  return {
    {
      name = 'editor_get_selection',
      description = "The file in the user's editor, the selected lines and the selected text (unsaved edits "
        .. "included). Use it when the user refers to 'this', 'here' or 'the selection'.",
      input_schema = NO_ARGS,
      handler = selection,
    },
    {
      name = 'editor_list_open_files',
      description = "Files open in the user's editor, with their language, line count and whether they have "
        .. 'unsaved changes.',
      input_schema = NO_ARGS,
      handler = open_files,
    },
    {
      name = 'editor_read_file',
      description = 'Read a file as the editor sees it: an open buffer with its unsaved text, otherwise the file '
        .. 'on disk. `line` is the 1-based first line, `limit` the number of lines.',
      input_schema = {
        type = 'object',
        properties = {
          path = { type = 'string', description = 'Absolute, or relative to the workspace folder' },
          line = { type = 'integer', minimum = 1 },
          limit = { type = 'integer', minimum = 1 },
        },
        required = { 'path' },
        additionalProperties = false,
      },
      handler = function(args)
        return read_file(args, cwd())
      end,
    },
    {
      name = 'editor_get_diagnostics',
      description = "Errors and warnings the editor's language services report, for one file or for all files.",
      input_schema = {
        type = 'object',
        properties = {
          path = { type = 'string', description = 'Only this file (absolute or workspace-relative)' },
          severity = {
            type = 'string',
            enum = SEVERITY,
            description = 'Only this severity and worse',
          },
        },
        additionalProperties = false,
      },
      handler = function(args)
        return diagnostics(args, cwd())
      end,
    },
  }
end

return M
