-- Context in, edits out: a selection sent to the chat, #buffer in a prompt, the
-- built-in editor tools, a proposed edit reviewed as a diff, tool calls refused for
-- bad arguments, and the thinking indicator.
local H = require('helpers')

describe('threadline context and edits', function()
  local tl, home
  before_each(function()
    tl, home = H.start()
    H.keep(vim.ui, 'select')
  end)
  after_each(H.stop_and_wipe)

  local function user_prompt(sid)
    local history = H.history(tl, sid)
    for i = #history, 1, -1 do
      if history[i].role == 'user' then
        return history[i].content
      end
    end
  end

  local function edit(name, lines)
    local path = home .. '/' .. name
    vim.fn.writefile(lines, path)
    vim.cmd('edit ' .. vim.fn.fnameescape(path))
    return path, vim.api.nvim_get_current_buf()
  end

  it(':Threadline send attaches the selected lines to the next prompt', function()
    local path, file_buf = edit('code.lua', { 'local a = 1', 'local b = 2', 'local c = 3', 'return a' })
    local sid = H.new_session(tl, 'scripted:echo')
    vim.api.nvim_set_current_buf(file_buf) -- back to the file
    vim.cmd('2,3Threadline send')
    local chat_buf = tl.buffer(sid)
    assert.matches('[attached code.lua:2-3: it goes with your next prompt]', H.text(chat_buf), 1, true)
    local done = H.turn(function()
      tl.ask('what do these lines do?')
    end, 'the turn')
    local content = user_prompt(sid)
    assert.equals('what do these lines do?', content[1].text)
    assert.equals('resource', content[2].type)
    assert.equals('local b = 2\nlocal c = 3', content[2].resource.text)
    assert.equals(vim.uri_from_fname(path) .. '#L2-3', content[2].resource.uri)
    assert.matches('> 📎 code.lua:2-3', H.text(chat_buf), 1, true)
    -- Only the next prompt: the one after has no attachment.
    tl.ask('and now?')
    H.wait(function()
      return #done == 2
    end, 'the second turn')
    assert.equals(1, #user_prompt(sid))
  end)

  it(':Threadline send with a question asks it at once, with the lines', function()
    local _, file_buf = edit('x.lua', { 'one', 'two', 'three' })
    local sid = H.new_session(tl, 'scripted:echo')
    vim.api.nvim_set_current_buf(file_buf)
    local done = H.turn('3Threadline send why three?', 'the turn')
    assert.equals(sid, done[1].sessionId)
    local content = user_prompt(sid)
    assert.equals('why three?', content[1].text)
    assert.equals('three', content[2].resource.text)
  end)

  it('#buffer in a prompt attaches the buffer being edited', function()
    edit('notes.md', { '# Notes', 'remember the milk' })
    local sid = H.new_session(tl, 'scripted:echo')
    local done = H.turn(function()
      tl.ask('summarise #buffer')
    end, 'the turn')
    local content = user_prompt(sid)
    assert.equals('# Notes\nremember the milk', content[2].resource.text)
  end)

  it('the built-in editor tools answer the model: selection, open files, diagnostics', function()
    local path, buf = edit('main.py', { 'x = 1', 'print(y)' })
    vim.diagnostic.set(vim.api.nvim_create_namespace('test.lint'), buf, {
      { lnum = 1, col = 6, message = "undefined name 'y'", severity = vim.diagnostic.severity.ERROR, source = 'pyflakes' },
    })
    vim.api.nvim_buf_set_mark(buf, '<', 2, 0, {})
    vim.api.nvim_buf_set_mark(buf, '>', 2, 7, {})
    local model = H.scripted(
      { { tool_call = { name = 'editor_get_selection', arguments = vim.empty_dict(), id = 'c1' } } },
      { { tool_call = { name = 'editor_get_diagnostics', arguments = { severity = 'error' }, id = 'c2' } } },
      { { tool_call = { name = 'editor_list_open_files', arguments = vim.empty_dict(), id = 'c3' } } },
      { { text = 'done' } }
    )
    local sid = H.new_session(tl, model)
    local done = H.turn(function()
      tl.ask('look')
    end, 'the turn')
    assert.equals('end_turn', done[1].stopReason)
    local results = {}
    for _, m in ipairs(H.history(tl, sid)) do
      for _, b in ipairs(m.content) do
        if b.type == 'tool_result' then
          results[b.toolName] = b.content[1].text
        end
      end
    end
    assert.matches(path .. ' (python)\nselection: line 2\n\nprint(y)', results.editor_get_selection, 1, true)
    assert.matches(path .. ":2:7: error: undefined name 'y' [pyflakes]", results.editor_get_diagnostics, 1, true)
    assert.matches(path .. ' (python, 2 lines, active)', results.editor_list_open_files, 1, true)
  end)

  it('a proposed edit is shown as a diff; rejecting it writes nothing', function()
    local path, buf = edit('out.txt', { 'old text' })
    local asked = H.answer_select(function(items, opts)
      return opts.kind == 'threadline.diff' and 'Reject' or items[1] -- allow once
    end, function()
      return { tabs = #vim.api.nvim_list_tabpages(), diff = vim.wo.diff }
    end)
    local model = H.scripted(
      { { tool_call = { name = 'write_file', arguments = { path = 'out.txt', content = 'new text\n' }, id = 'w1' } } },
      { { text = 'ok' } }
    )
    local sid = H.new_session(tl, model)
    -- In mode `auto` the sidecar writes without a permission question (which would
    -- show the diff itself): the write is the moment the diff is reviewed.
    local modes = H.record('ThreadlineMode')
    vim.cmd('Threadline mode auto')
    H.wait(function()
      return #modes == 1
    end, 'mode auto')
    local tabs = #vim.api.nvim_list_tabpages()
    local done = H.turn(function()
      tl.ask('rewrite it')
    end, 'the turn')
    assert.equals(1, #asked)
    assert.equals('threadline.diff', asked[1].opts.kind)
    assert.equals(tabs + 1, asked[1].tabs, 'the diff has its own tab')
    assert.is_true(asked[1].diff, 'in diff mode')
    assert.equals(tabs, #vim.api.nvim_list_tabpages(), 'the tab is closed after')
    assert.same({ 'old text' }, vim.api.nvim_buf_get_lines(buf, 0, -1, true))
    assert.same({ 'old text' }, vim.fn.readfile(path))
    assert.matches('rejected the edit', H.text(tl.buffer(sid)), 1, true)
  end)

  it('a tool call refused for bad arguments is shown in the buffer', function()
    local model = H.scripted(
      { { tool_call = { name = 'read_file', arguments = vim.empty_dict(), id = 'bad' } } },
      { { text = 'sorry' } }
    )
    local sid = H.new_session(tl, model)
    local done = H.turn(function()
      tl.ask('read')
    end, 'the turn')
    assert.matches("✗ Read file (failed) — invalid arguments: 'path' is a required property", H.text(tl.buffer(sid)), 1, true)
  end)

  it('says thinking… before the first token; the statusline follows the turn', function()
    local sid = H.new_session(tl, H.scripted({ { sleep = 0.6 }, { text = 'here' }, { sleep = 0.6 }, { text = ' now' } }))
    local buf = tl.buffer(sid)
    local done = H.record('ThreadlineTurnDone')
    tl.ask('wait for it')
    local ns = vim.api.nvim_get_namespaces()['threadline.chat.status']
    local marks = vim.api.nvim_buf_get_extmarks(buf, ns, 0, -1, { details = true })
    assert.equals(1, #marks)
    assert.equals('⋯ thinking…', marks[1][4].virt_lines[1][1][1])
    assert.equals('⋯ thinking', tl.status(sid))
    H.wait(function()
      return H.text(buf):find('here', 1, true) ~= nil
    end, 'the first token')
    assert.equals(0, #vim.api.nvim_buf_get_extmarks(buf, ns, 0, -1, {}))
    assert.equals('✎ answering', tl.status(sid))
    H.wait(function()
      return #done == 1
    end, 'the turn')
    assert.equals('', tl.status(sid))
  end)
end)
