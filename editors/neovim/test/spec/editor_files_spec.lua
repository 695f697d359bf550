-- The sidecar's workspace tools reading and writing through the editor: a read sees a
-- buffer's unsaved text (fs/read_text_file), a write asks permission and lands in the
-- loaded buffer and on disk (fs/write_text_file).
local H = require('helpers')

describe('threadline workspace tools through Neovim buffers', function()
  local tl, home
  before_each(function()
    tl, home = H.start()
    H.keep(vim.ui, 'select')
  end)
  after_each(H.stop_and_wipe)

  local function run(model)
    local sid = H.new_session(tl, model)
    local done = H.turn(function()
      tl.ask('go')
    end, 'the turn')
    assert.equals('end_turn', done[1].stopReason)
    return sid
  end

  local function tool_result(sid)
    for _, m in ipairs(H.history(tl, sid)) do
      for _, b in ipairs(m.content) do
        if b.type == 'tool_result' then
          return b
        end
      end
    end
  end

  it('read_file sees the unsaved text of a loaded buffer', function()
    local path = home .. '/notes.txt'
    vim.fn.writefile({ 'saved line' }, path)
    vim.cmd('edit ' .. vim.fn.fnameescape(path))
    vim.api.nvim_buf_set_lines(0, 0, -1, true, { 'draft line', 'second draft' })
    local sid = run(H.scripted(
      { { tool_call = { name = 'read_file', arguments = { path = 'notes.txt' }, id = 'call_read' } } },
      { { text = 'read it' } }
    ))
    local result = tool_result(sid)
    assert.equals('completed', result.status)
    local text = result.content[1].text
    assert.matches('draft line', text, 1, true)
    assert.matches('second draft', text, 1, true)
    assert.is_nil(text:find('saved line', 1, true))
    assert.matches('✓ Read notes.txt (completed)', H.text(tl.buffer()), 1, true)
  end)

  it('write_file asks with vim.ui.select, then writes the loaded buffer and the file', function()
    local path = home .. '/out.txt'
    vim.fn.writefile({ 'old' }, path)
    vim.cmd('edit ' .. vim.fn.fnameescape(path))
    local target = vim.api.nvim_get_current_buf()
    local asked = H.answer_select(H.option('allow_once'))
    run(H.scripted(
      { { tool_call = { name = 'write_file', arguments = { path = 'out.txt', content = 'new text\n' }, id = 'call_write' } } },
      { { text = 'written' } }
    ))
    -- The permission question shows the diff beside it, so the write is not asked again.
    assert.equals(1, #asked, 'the permission, with the diff of the edit')
    assert.matches('Write out.txt', asked[1].opts.prompt, 1, true)
    assert.same({ 'new text' }, vim.api.nvim_buf_get_lines(target, 0, -1, true))
    assert.is_false(vim.bo[target].modified)
    assert.same({ 'new text' }, vim.fn.readfile(path))
  end)
end)
