-- Every chat buffer is bound to its session: its keys and the commands given in it act
-- on that session, whatever session was used last. Windows are reused; sessions can be
-- deleted and get another model.
local H = require('helpers')

local HANG = H.scripted({ { text = 'partial ' }, { text = 'answer' }, { hang = true } })

describe('threadline buffer-bound sessions', function()
  local tl
  before_each(function()
    tl = H.start({ open = 'vsplit' })
    H.keep(vim.ui, 'input')
    H.keep(vim.ui, 'select')
    vim.cmd('silent! only')
  end)
  after_each(function()
    H.stop()
    vim.cmd('silent! only')
  end)

  --- Press a buffer-local normal-mode key of `buf` (its callback, as Neovim would).
  local function press(buf, lhs)
    local map
    for _, m in ipairs(vim.api.nvim_buf_get_keymap(buf, 'n')) do
      if m.lhs == lhs or vim.api.nvim_replace_termcodes(m.lhs, true, false, true) == vim.api.nvim_replace_termcodes(lhs, true, false, true) then
        map = m
      end
    end
    assert(map, 'no mapping ' .. lhs .. ' in buffer ' .. buf)
    map.callback()
  end

  it('<CR> in a chat buffer asks that buffer\'s session, not the one used last', function()
    local done = H.record('ThreadlineTurnDone')
    local first = H.new_session(tl, 'scripted:echo')
    tl.ask('first words')
    H.wait(function()
      return #done == 1
    end, 'turn 1')
    local forked = H.record('ThreadlineForked')
    vim.cmd('Threadline fork')
    H.wait(function()
      return #forked == 1
    end, 'fork')
    local fork = forked[1].sessionId
    local fork_buf = tl.buffer(fork)
    assert.equals(fork_buf, vim.api.nvim_get_current_buf())
    -- The original becomes "the session used last" (as picking it in a list did)...
    tl.state.session_id = first
    -- ...but <CR> in the fork's buffer asks the fork.
    vim.ui.input = function(_, on_confirm)
      on_confirm('to the fork')
    end
    press(fork_buf, '<CR>')
    H.wait(function()
      return #done == 2
    end, 'turn 2')
    assert.equals(fork, done[2].sessionId)
    assert.matches('to the fork', H.text(fork_buf), 1, true)
    assert.is_nil(H.text(tl.buffer(first)):find('to the fork', 1, true))
    assert.equals(2, #H.history(tl, first))
    assert.equals(4, #H.history(tl, fork))
    -- :Threadline ask typed in the first session's buffer goes to the first session.
    vim.api.nvim_set_current_buf(tl.buffer(first))
    vim.cmd('Threadline ask to the first')
    H.wait(function()
      return #done == 3
    end, 'turn 3')
    assert.equals(first, done[3].sessionId)
    assert.is_nil(H.text(fork_buf):find('to the first', 1, true))
  end)

  it('<C-c> in a chat buffer interrupts that buffer\'s session', function()
    local done = H.record('ThreadlineTurnDone')
    local hanging = H.new_session(tl, HANG)
    local hanging_buf = tl.buffer(hanging)
    tl.ask('hang')
    H.wait(function()
      return H.text(hanging_buf):find('partial answer', 1, true) ~= nil
    end, 'the partial answer')
    local other = H.new_session(tl, 'scripted:echo')
    assert.are_not.equal(hanging, other)
    assert.equals(other, tl.state.session_id)
    press(hanging_buf, '<C-c>')
    H.wait(function()
      return #done == 1
    end, 'the interrupt')
    assert.equals(hanging, done[1].sessionId)
    assert.equals('cancelled', done[1].stopReason)
  end)

  it('new, fork and resume reuse the chat window; reuse_window = false splits', function()
    H.new_session(tl, 'scripted:echo')
    local wins = #vim.api.nvim_tabpage_list_wins(0)
    H.new_session(tl, 'scripted:echo')
    local forked = H.record('ThreadlineForked')
    tl.fork()
    H.wait(function()
      return #forked == 1
    end, 'fork')
    assert.equals(wins, #vim.api.nvim_tabpage_list_wins(0))
    tl = H.start({ open = 'vsplit', reuse_window = false })
    vim.cmd('silent! only')
    H.new_session(tl, 'scripted:echo')
    H.new_session(tl, 'scripted:echo')
    assert.equals(3, #vim.api.nvim_tabpage_list_wins(0))
  end)

  it(':Threadline delete asks, deletes the session and wipes its buffer', function()
    local sid = H.new_session(tl, 'scripted:echo')
    local buf = tl.buffer(sid)
    local asked
    vim.ui.select = function(items, opts, on_choice)
      asked = opts.prompt
      on_choice(items[1])
    end
    local deleted = H.record('ThreadlineDeleted')
    local notified = {}
    local original_notify = vim.notify
    vim.notify = function(msg)
      table.insert(notified, msg)
    end
    vim.cmd('Threadline delete')
    H.wait(function()
      return #deleted == 1
    end, 'delete')
    vim.notify = original_notify
    assert.same({ 'threadline: deleted session ' .. sid }, notified)
    assert.matches('delete session ' .. sid, asked, 1, true)
    assert.is_false(vim.api.nvim_buf_is_valid(buf))
    local list = tl.call('session/list', vim.empty_dict())
    for _, s in ipairs(list.sessions) do
      assert.are_not.equal(sid, s.sessionId)
    end
  end)

  it(':Threadline model changes the model of the open session; test models are not offered', function()
    local sid = H.new_session(tl, 'scripted:echo')
    local changed = H.record('ThreadlineModel')
    vim.cmd('Threadline model ' .. H.scripted({ { text = 'from the new model' } }))
    H.wait(function()
      return #changed == 1
    end, 'model change')
    local done = H.turn(function()
      tl.ask('hi')
    end, 'turn')
    assert.matches('from the new model', H.text(tl.buffer(sid)), 1, true)
    for _, m in ipairs(tl.models()) do
      assert.is_false(vim.startswith(m, 'scripted:'), m)
    end
    assert.is_true(vim.tbl_contains(tl.complete('', 'Threadline model '), 'local:smollm2-135m'))
  end)

  it('completes subcommands and session ids', function()
    local sid = H.new_session(tl, 'scripted:echo')
    local subs = tl.complete('de', 'Threadline de')
    assert.same({ 'delete' }, subs)
    assert.same({ sid }, tl.complete('sess_', 'Threadline resume sess_'))
    assert.same({ 'steer' }, tl.complete('ste', 'Threadline ste'))
    assert.same({ 'clear', 'resume' }, tl.complete('', 'Threadline queue '))
    assert.same({ 'clear' }, tl.complete('', 'Threadline interrupt '))
  end)
end)

describe('threadline multi-line prompts', function()
  local tl
  before_each(function()
    tl = H.start()
  end)
  after_each(H.stop)

  it('`i` in a chat buffer opens a prompt buffer; :w sends its lines to that session', function()
    local sid = H.new_session(tl, 'scripted:echo')
    local chat_buf = tl.buffer(sid)
    local map = vim.fn.maparg('i', 'n', false, true)
    assert.equals(1, map.buffer)
    map.callback()
    vim.cmd('stopinsert')
    local prompt_buf = vim.api.nvim_get_current_buf()
    assert.are_not.equal(chat_buf, prompt_buf)
    vim.api.nvim_buf_set_lines(prompt_buf, 0, -1, true, { 'line one', '', 'line three' })
    local done = H.turn('write', 'the turn')
    assert.is_false(vim.api.nvim_buf_is_valid(prompt_buf))
    assert.equals(sid, done[1].sessionId)
    assert.equals('line one\n\nline three', H.text_of(H.history(tl, sid)[1]))
    assert.matches('## You\n\nline one\n\nline three', H.text(chat_buf), 1, true)
  end)
end)
