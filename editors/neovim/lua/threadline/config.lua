--- Options for threadline.nvim: the defaults, and `setup()`'s merge of the user's.
local M = {}

---@class threadline.Tool
---@field name string
---@field description? string
---@field input_schema? table JSON Schema of the arguments
---@field needs_approval? boolean ask the user (vim.ui.select) before each call
---@field handler fun(arguments: table, ctx: {session_id: string, tool_call_id: string}): table
---  returns `{ content = { {type='text', text=...} }, isError = false }`; may yield
---  (it runs in a coroutine) to wait for something asynchronous.

---@class threadline.Config
---@field cmd string[] the sidecar command (Content-Length framing on stdio)
---@field env? table<string,string> extra environment for the sidecar
---@field cwd? string working folder of new sessions (default: the current one)
---@field model? string model of new sessions (default: the sidecar's)
---@field session? table more `_meta.threadline` options for `session/new`
---@field tools threadline.Tool[] editor-side tools the model may call (`tool/call`)
---@field fs boolean answer `fs/read_text_file` / `fs/write_text_file` with buffers
---@field editor_tools boolean offer the built-in editor tools (selection, open files, buffers, diagnostics)
---@field diff boolean show an edit the model proposes (`fs/write_text_file`) as a diff to accept or reject
---@field open string how the chat buffer is shown: 'vsplit', 'split', 'tab', 'current'
---@field reuse_window boolean new, fork and resume show their buffer in the chat window already open
---@field keys {interrupt: string|false, ask: string|false, steer: string|false, queue: string|false, compose: string|false, details: string|false, open_child: string|false, expand: string|false}
---@field timeout integer ms a synchronous helper (`require('threadline').call`) waits
---@field picker string `:Threadline search`'s picker: 'auto' (Telescope, fzf-lua or vim.ui.select, the first installed), 'telescope', 'fzf-lua', 'select'
M.defaults = {
  cmd = { 'threadline', 'serve' },
  env = nil,
  cwd = nil,
  model = nil,
  session = {},
  tools = {},
  editor_tools = true,
  fs = true,
  diff = true,
  open = 'vsplit',
  reuse_window = true,
  keys = {
    interrupt = '<C-c>',
    ask = '<CR>',
    steer = 'S',
    queue = 'Q',
    compose = 'i',
    details = 'K',
    open_child = 'gO',
    expand = '<Tab>',
  },
  timeout = 30000,
  picker = 'auto',
}

---@type threadline.Config
M.options = vim.deepcopy(M.defaults)

---@param opts? table
---@return threadline.Config
function M.set(opts)
  M.options = vim.tbl_deep_extend('force', vim.deepcopy(M.defaults), opts or {})
  -- Lists are replaced, not merged index by index.
  if opts and opts.cmd then
    M.options.cmd = opts.cmd
  end
  if opts and opts.tools then
    M.options.tools = opts.tools
  end
  return M.options
end

return M
