--- An edit the model proposes (`fs/write_text_file`), shown as a diff in a new tab and
--- applied only if the user accepts it.
local M = {}

local count = 0

---@param name string
---@param lines string[]
---@param filetype string
---@return integer buf
local function scratch(name, lines, filetype)
  local buf = vim.api.nvim_create_buf(false, true)
  count = count + 1
  vim.api.nvim_buf_set_name(buf, ('%s#%d'):format(name, count))
  vim.api.nvim_buf_set_lines(buf, 0, -1, false, lines)
  vim.bo[buf].buftype = 'nofile'
  vim.bo[buf].bufhidden = 'wipe'
  vim.bo[buf].modifiable = false
  vim.bo[buf].filetype = filetype
  return buf
end

--- Show `old` against `new` and ask; `done(true)` when the user accepts.
---@param path string
---@param old string[] the current lines
---@param new string[] the proposed lines
---@param done fun(accepted: boolean)
function M.ask(path, old, new, done)
  local filetype = vim.filetype.match({ filename = path }) or ''
  local previous = vim.api.nvim_get_current_tabpage()
  vim.cmd('tabnew')
  local tab = vim.api.nvim_get_current_tabpage()
  local placeholder = vim.api.nvim_get_current_buf()
  local left = scratch('threadline://current' .. path, old, filetype)
  local right = scratch('threadline://proposed' .. path, new, filetype)
  vim.api.nvim_win_set_buf(0, left)
  vim.cmd('diffthis')
  vim.cmd('rightbelow vsplit')
  vim.api.nvim_win_set_buf(0, right)
  vim.cmd('diffthis')
  if vim.api.nvim_buf_is_valid(placeholder) and placeholder ~= left and placeholder ~= right then
    pcall(vim.api.nvim_buf_delete, placeholder, { force = true })
  end
  vim.cmd('redraw')
  local rel = vim.fn.fnamemodify(path, ':~:.')
  local function finish(accepted)
    if vim.api.nvim_tabpage_is_valid(tab) and #vim.api.nvim_list_tabpages() > 1 then
      vim.api.nvim_set_current_tabpage(tab)
      vim.cmd('tabclose')
    end
    if vim.api.nvim_tabpage_is_valid(previous) then
      vim.api.nvim_set_current_tabpage(previous)
    end
    done(accepted)
  end
  vim.ui.select({ 'Accept', 'Reject' }, {
    prompt = ('Threadline: apply this edit to %s?'):format(rel),
    kind = 'threadline.diff',
  }, function(choice)
    finish(choice == 'Accept')
  end)
end

return M
