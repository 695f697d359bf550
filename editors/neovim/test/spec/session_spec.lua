-- A session against the real sidecar (scripted model): new, ask streams into the
-- chat buffer, sessions list and resume.
local H = require('helpers')

local PAUSE = { sleep = 0.3 }

describe('threadline sessions', function()
  local tl
  before_each(function()
    tl = H.start()
  end)
  after_each(H.stop)

  it(':Threadline new opens a chat buffer for a new session', function()
    vim.cmd('Threadline new ' .. H.scripted({ { text = 'hi' } }))
    H.wait(function()
      return tl.state.session_id ~= nil
    end, 'session/new')
    local sid = tl.state.session_id
    assert.matches('^sess_', sid)
    local buf = tl.buffer()
    assert.equals('threadline://' .. sid, vim.api.nvim_buf_get_name(buf))
    assert.equals(buf, vim.api.nvim_get_current_buf())
    assert.equals('markdown', vim.bo[buf].filetype)
    assert.is_false(vim.bo[buf].modifiable)
  end)

  it('streams the answer into the buffer; the buffer text is the streamed text', function()
    local model = H.scripted({ { text = 'Hello ' }, PAUSE, { text = 'from **Neovim**' }, PAUSE, { text = '.\n\n- one\n- two' } })
    local sid = H.new_session(tl, model)
    local updates = H.record('ThreadlineUpdate')
    local done = H.record('ThreadlineTurnDone')
    vim.cmd('Threadline ask say hello')
    -- Mid-turn: the first piece is on screen before the turn has ended.
    H.wait(function()
      return H.text(tl.buffer()):find('Hello ', 1, true) ~= nil
    end, 'the first chunk')
    assert.equals(0, #done)
    assert.is_nil(H.text(tl.buffer()):find('Neovim', 1, true))
    H.wait(function()
      return #done == 1
    end, 'the end of the turn')
    assert.equals('end_turn', done[1].stopReason)

    local streamed, message_id, chunks = {}, nil, 0
    for _, d in ipairs(updates) do
      if d.sessionId == sid and d.update.sessionUpdate == 'agent_message_chunk' then
        table.insert(streamed, d.update.content.text)
        message_id = d.update.messageId
        chunks = chunks + 1
      end
    end
    assert.is_true(chunks >= 3)
    local text = table.concat(streamed)
    assert.equals('Hello from **Neovim**.\n\n- one\n- two', text)
    assert.equals(text, tl.message_text(message_id))
    local history = H.history(tl, sid)
    assert.equals(message_id, history[2].messageId)
    assert.equals(text, H.text_of(history[2]))
    local buffer = H.text(tl.buffer())
    assert.matches('## You\n\nsay hello\n\n## Threadline\n\nHello from', buffer, 1, true)
    assert.matches('tokens in %d+ · out 3', buffer)
  end)

  it('every update of a turn is in the buffer when the turn ends', function()
    -- The answer and the last chunks arrive together: they must be handled in order.
    local sid = H.new_session(tl, H.scripted({ { ['repeat'] = { text = 'tok ', count = 400 } } }))
    local at_done
    H.autocmds = H.autocmds or {}
    table.insert(
      H.autocmds,
      vim.api.nvim_create_autocmd('User', {
        pattern = 'ThreadlineTurnDone',
        callback = function()
          local _, n = H.text(tl.buffer()):gsub('tok ', '')
          at_done = n
        end,
      })
    )
    tl.ask('count')
    H.wait(function()
      return at_done ~= nil
    end, 'the turn')
    assert.equals(400, at_done)
    assert.equals(string.rep('tok ', 400), H.text_of(H.history(tl, sid)[2]))
  end)

  it('ask without a session starts one', function()
    tl = H.start({ model = 'scripted:echo' })
    local done = H.turn(function()
      tl.ask('echo these words')
    end, 'the turn')
    assert.equals('end_turn', done[1].stopReason)
    assert.matches('echo these words', H.text(tl.buffer()), 1, true)
  end)

  it(':Threadline sessions lists stored sessions with vim.ui.select and resumes one', function()
    local done = H.record('ThreadlineTurnDone')
    local first = H.new_session(tl, 'scripted:echo')
    tl.ask('first session words')
    H.wait(function()
      return #done == 1
    end, 'turn 1')
    local second = H.new_session(tl, 'scripted:echo')
    assert.are_not.equal(first, second)

    local original = vim.ui.select
    local shown
    vim.ui.select = function(items, opts, on_choice)
      shown = { items = items, opts = opts }
      for _, item in ipairs(items) do
        if item.sessionId == first then
          on_choice(item)
          return
        end
      end
      on_choice(nil)
    end
    local resumed = H.record('ThreadlineResumed')
    vim.cmd('Threadline sessions')
    H.wait(function()
      return #resumed == 1
    end, 'resume')
    vim.ui.select = original

    local ids = vim.tbl_map(function(s)
      return s.sessionId
    end, shown.items)
    table.sort(ids)
    local want = { first, second }
    table.sort(want)
    assert.same(want, ids)
    local labels = vim.tbl_map(shown.opts.format_item, shown.items)
    assert.matches(second, table.concat(labels, '\n'), 1, true)
    assert.equals(first, tl.state.session_id)
    local buffer = H.text(tl.buffer())
    assert.matches('## You\n\nfirst session words', buffer, 1, true)
    assert.equals('threadline://' .. first, vim.api.nvim_buf_get_name(vim.api.nvim_get_current_buf()))
  end)

  it(':Threadline resume with an unknown id reports the error', function()
    local messages = {}
    local original = vim.notify
    vim.notify = function(msg)
      table.insert(messages, msg)
    end
    vim.cmd('Threadline resume sess_does_not_exist')
    H.wait(function()
      return #messages > 0
    end, 'the error')
    vim.notify = original
    assert.matches(
      'history: session sess_does_not_exist no longer exists: it was deleted (perhaps in another editor) or never existed',
      messages[1],
      1,
      true
    )
    assert.is_nil(messages[1]:find('32002'), 'codes stay in the log')
  end)
end)
