-- fs/read_text_file and fs/write_text_file as the sidecar would call them: loaded
-- buffers answer with their (unsaved) text; other files come from disk.
local requests = require('threadline.requests')

describe('threadline fs requests', function()
  local dir
  before_each(function()
    require('threadline.config').set({ diff = false })
    dir = vim.fn.tempname()
    vim.fn.mkdir(dir, 'p')
  end)
  after_each(function()
    require('threadline.config').set({})
    vim.cmd('silent! %bwipeout!')
    vim.fn.delete(dir, 'rf')
  end)

  it('reads a loaded buffer, unsaved changes included', function()
    local path = dir .. '/a.txt'
    vim.fn.writefile({ 'on disk' }, path)
    vim.cmd('edit ' .. vim.fn.fnameescape(path))
    vim.api.nvim_buf_set_lines(0, 0, -1, true, { 'unsaved one', 'unsaved two', 'three' })
    assert.same({ content = 'unsaved one\nunsaved two\nthree\n' }, requests.handle('fs/read_text_file', { path = path }))
    assert.same({ content = 'unsaved two' }, requests.handle('fs/read_text_file', { path = path, line = 2, limit = 1 }))
  end)

  it('reads a file that no buffer shows from disk', function()
    local path = dir .. '/b.txt'
    vim.fn.writefile({ 'x', 'y' }, path)
    assert.same({ content = 'x\ny\n' }, requests.handle('fs/read_text_file', { path = path }))
    local result, err = requests.handle('fs/read_text_file', { path = dir .. '/missing' })
    assert.is_nil(result)
    assert.equals(vim.lsp.protocol.ErrorCodes.RequestFailed, err.code)
  end)

  it('writes into a loaded buffer and saves it, or creates the file', function()
    local path = dir .. '/c.txt'
    vim.fn.writefile({ 'old' }, path)
    vim.cmd('edit ' .. vim.fn.fnameescape(path))
    local buf = vim.api.nvim_get_current_buf()
    requests.handle('fs/write_text_file', { path = path, content = 'new 1\nnew 2\n' })
    assert.same({ 'new 1', 'new 2' }, vim.api.nvim_buf_get_lines(buf, 0, -1, true))
    assert.is_false(vim.bo[buf].modified)
    assert.same({ 'new 1', 'new 2' }, vim.fn.readfile(path))
    local fresh = dir .. '/sub/d.txt'
    requests.handle('fs/write_text_file', { path = fresh, content = 'made' })
    assert.same({ 'made' }, vim.fn.readfile(fresh))
  end)

  it('answers unknown methods with MethodNotFound', function()
    local result, err = requests.handle('terminal/create', {})
    assert.is_nil(result)
    assert.equals(vim.lsp.protocol.ErrorCodes.MethodNotFound, err.code)
  end)
end)
