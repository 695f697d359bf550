-- The chat buffer as a user meets it: attachments survive resume and fork, `K` on any
-- line, message ids to fork at (shown, completed, under the cursor), key hints on an
-- empty buffer, the title in the delete confirmation, and a wait that says why.
local H = require('helpers')

local ids_ns = vim.api.nvim_create_namespace('threadline.chat.ids')
local hint_ns = vim.api.nvim_create_namespace('threadline.chat.hint')

describe('threadline chat buffer', function()
  local tl
  before_each(function()
    tl = H.start()
    H.keep(vim.ui, 'select')
  end)
  after_each(H.stop_and_wipe)

  local function turn(text, done, n)
    tl.ask(text)
    H.wait(function()
      return #done == n
    end, 'turn ' .. n)
  end

  --- The virtual text of the extmarks of `ns` in `buf`, one string per mark.
  local function virtual(buf, ns)
    local out = {}
    for _, m in ipairs(vim.api.nvim_buf_get_extmarks(buf, ns, 0, -1, { details = true })) do
      local parts = {}
      for _, chunk in ipairs(m[4].virt_text or {}) do
        table.insert(parts, chunk[1])
      end
      for _, line in ipairs(m[4].virt_lines or {}) do
        for _, chunk in ipairs(line) do
          table.insert(parts, chunk[1])
        end
      end
      table.insert(out, table.concat(parts))
    end
    return out
  end

  it('resume and fork of a session with an attachment show every turn and the attachment', function()
    local file = H.home .. '/notes.txt'
    vim.fn.writefile({ 'line one', 'line two' }, file)
    local sid = H.new_session(tl, 'scripted:echo')
    local done = H.record('ThreadlineTurnDone')
    vim.cmd('edit ' .. file)
    vim.cmd('Threadline send what is in it')
    H.wait(function()
      return #done == 1
    end, 'the turn with the attachment')
    turn('a later question', done, 2)
    local resumed = H.record('ThreadlineResumed')
    tl.resume(sid)
    H.wait(function()
      return #resumed == 1
    end, 'resume')
    local text = H.text(tl.buffer(sid))
    assert.matches('## You\n\nwhat is in it\n> 📎 notes.txt\n', text, 1, true)
    assert.matches('## You\n\na later question', text, 1, true)
    local forked = H.record('ThreadlineForked')
    tl.fork()
    H.wait(function()
      return #forked == 1
    end, 'fork')
    local child = H.text(tl.buffer(forked[1].sessionId))
    assert.matches('> 📎 notes.txt', child, 1, true)
    assert.matches('## You\n\na later question\n\n## Threadline\n\na later question', child, 1, true)
  end)

  it('K on a line that is not a tool call shows the message there, without an error', function()
    local sid = H.new_session(tl, 'scripted:echo')
    local done = H.record('ThreadlineTurnDone')
    turn('alpha words', done, 1)
    local buf = tl.buffer(sid)
    local lines = vim.api.nvim_buf_get_lines(buf, 0, -1, false)
    local row
    for i, line in ipairs(lines) do
      if line:find('^alpha words') and lines[i - 2] == '## Threadline' then
        row = i
      end
    end
    assert.is_not_nil(row, H.text(buf))
    vim.api.nvim_win_set_cursor(0, { row, 0 })
    local map = vim.fn.maparg('K', 'n', false, true)
    local ok, err = pcall(map.callback)
    assert.is_true(ok, tostring(err))
    local answer = H.history(tl, sid)[2].messageId
    local floats = {}
    for _, win in ipairs(vim.api.nvim_list_wins()) do
      if vim.api.nvim_win_get_config(win).relative ~= '' then
        table.insert(floats, H.text(vim.api.nvim_win_get_buf(win)))
      end
    end
    assert.equals(1, #floats)
    assert.matches('Answer ' .. answer, floats[1], 1, true)
    -- On the blank first line of an empty buffer: a hint, no error either.
    local messages = H.record_notify()
    H.new_session(tl, 'scripted:echo')
    ok, err = pcall(vim.fn.maparg('K', 'n', false, true).callback)
    assert.is_true(ok, tostring(err))
    assert.matches('K shows the tool call or the message under the cursor', messages[#messages].msg, 1, true)
  end)

  it('message ids are shown, complete after fork, and the cursor picks the fork point', function()
    local parent = H.new_session(tl, 'scripted:echo')
    local done = H.record('ThreadlineTurnDone')
    turn('alpha words', done, 1)
    turn('beta words', done, 2)
    local history = H.history(tl, parent)
    local ids = vim.tbl_map(function(m)
      return m.messageId
    end, history)
    local buf = tl.buffer(parent)
    local shown = table.concat(virtual(buf, ids_ns), ' ')
    for _, id in ipairs(ids) do
      assert.matches(id, shown, 1, true)
    end
    assert.same(ids, tl.complete('', 'Threadline fork '))
    assert.same({ ids[1] }, tl.complete(ids[1]:sub(1, -2), 'Threadline fork ' .. ids[1]:sub(1, -2)))
    -- The cursor on the first answer: `:Threadline fork` branches there.
    local lines = vim.api.nvim_buf_get_lines(buf, 0, -1, false)
    local row
    for i, line in ipairs(lines) do
      if line == 'alpha words ' or line == 'alpha words' then
        if lines[i - 2] == '## Threadline' then
          row = i
        end
      end
    end
    assert.is_not_nil(row, H.text(buf))
    -- Each id sits on its message's first line (a prompt's on its heading).
    for _, m in ipairs(vim.api.nvim_buf_get_extmarks(buf, ids_ns, 0, -1, { details = true })) do
      if m[4].virt_text[1][1]:find(ids[2], 1, true) then
        assert.equals(row - 1, m[2])
      elseif m[4].virt_text[1][1]:find(ids[1], 1, true) then
        assert.equals('## You', lines[m[2] + 1])
      end
    end
    vim.api.nvim_win_set_cursor(0, { row, 0 })
    local forked = H.record('ThreadlineForked')
    vim.cmd('Threadline fork')
    H.wait(function()
      return #forked == 1
    end, 'fork')
    assert.equals(ids[2], forked[1].forkedAtMessageId)
    local child = forked[1].sessionId
    assert.equals(2, #H.history(tl, child))
    local text = H.text(tl.buffer(child))
    assert.is_nil(text:find('beta words', 1, true))
    assert.matches('_%[forked from “.+” at the answer “alpha words”%]_', text)
    assert.is_nil(text:find(parent, 1, true), 'no raw ids in the note')
  end)

  it('an empty chat buffer shows the keys; they go with the first text', function()
    local sid = H.new_session(tl, 'scripted:echo')
    local buf = tl.buffer(sid)
    H.wait(function()
      return buf == vim.api.nvim_get_current_buf() and not require('threadline.commands').syncing(sid)
    end, 'the buffer to settle')
    assert.equals(1, #virtual(buf, hint_ns), 'the hints once')
    local hints = table.concat(virtual(buf, hint_ns), '\n')
    assert.matches('<CR> ask', hints, 1, true)
    assert.matches('<C-c> interrupt', hints, 1, true)
    assert.matches('S steer · Q queue', hints, 1, true)
    assert.matches(':Threadline fork', hints, 1, true)
    local done = H.record('ThreadlineTurnDone')
    turn('hello', done, 1)
    assert.same({}, virtual(buf, hint_ns))
  end)

  it('the delete confirmation names the session by its title', function()
    local sid = H.new_session(tl, 'scripted:echo')
    local done = H.record('ThreadlineTurnDone')
    turn('plan the garden', done, 1)
    local title, asked
    vim.ui.select = function(_, opts, on_choice)
      asked = opts.prompt
      on_choice('Keep')
    end
    vim.cmd('Threadline delete')
    H.wait(function()
      return asked ~= nil
    end, 'the confirmation')
    local list = tl.call('session/list', vim.empty_dict())
    for _, s in ipairs(list.sessions) do
      if s.sessionId == sid then
        title = s.title
      end
    end
    assert.is_not_nil(title)
    assert.matches('delete “' .. title .. '” (2 messages)', asked, 1, true)
    assert.is_nil(asked:find(sid, 1, true))
  end)

  it('a wait the sidecar announces (a model loading, after a restart) is shown instead of thinking', function()
    local model = H.scripted({ { status = 'loading the local model test…' }, { sleep = 1 }, { text = 'ready' } })
    local sid = H.new_session(tl, model)
    vim.cmd('Threadline restart')
    local c = require('threadline.chat').all()[sid]
    H.wait(function()
      return H.text(c.buf):find('[the sidecar was restarted]', 1, true) ~= nil
    end, 'the restart')
    local done = H.record('ThreadlineTurnDone')
    tl.ask('go', sid)
    H.wait(function()
      return c.status == 'loading the local model test…'
    end, 'the wait said')
    local shown = table.concat(virtual(c.buf, vim.api.nvim_create_namespace('threadline.chat.status')))
    assert.matches('loading the local model test…', shown, 1, true)
    H.wait(function()
      return #done == 1
    end, 'the answer')
    assert.matches('ready', H.text(c.buf), 1, true)
  end)
end)
