-- Typing while a turn runs, and following what another window does: prompts sent
-- while this Neovim's turn runs wait in the queue (shown under the last line, edited
-- and removed with Q), a steer joins the running turn, a steer from another window
-- shows here, and a turn, a rename, a model change, a rewind and a deletion made in
-- another window show here as they happen (the sidecar's standing subscription).
local H = require('helpers')

describe('threadline while a turn runs and across windows', function()
  local tl, other, gate
  before_each(function()
    gate = { open = false }
    -- An editor tool that holds the turn until the test opens the gate (then it
    -- answers at once): the turn is running for as long as the test needs.
    tl = H.start({
      tools = {
        {
          name = 'gate',
          description = 'Wait for the gate',
          handler = function()
            gate.calls = (gate.calls or 0) + 1
            if not gate.open then
              require('threadline.requests').await(function(done)
                gate.release = done
              end)
            end
            return { content = { { type = 'text', text = 'through' } } }
          end,
        },
      },
    })
    other = H.other_editor()
  end)
  after_each(H.stop)

  -- Each turn: the gate, then an answer. `steered`: a steer after the tool result
  -- does not start the rounds again.
  local GATED = 'scripted:'
    .. vim.json.encode({
      steered = true,
      rounds = { { { tool_call = { name = 'gate', arguments = vim.empty_dict() } } }, { { text = 'past the gate' } } },
    })

  --- The texts of a session's stored user messages, in order.
  local function user_texts(sid)
    local out = {}
    for _, m in ipairs(H.history(tl, sid)) do
      if m.role == 'user' then
        table.insert(out, H.text_of(m))
      end
    end
    return out
  end

  it('queues while the turn runs, edits and removes what waits, steers, and runs the queue in order', function()
    local sid = H.new_session(tl, GATED)
    local c = require('threadline.chat').all()[sid]
    local turns = H.record('ThreadlineTurnDone')
    local prompts = H.record('ThreadlinePromptDone')
    tl.ask('start', sid)
    H.wait(function()
      return gate.release ~= nil
    end, 'the turn at the gate')

    -- Enter while it runs queues: nothing is added to the conversation yet.
    local keys = {}
    for _, m in ipairs(vim.api.nvim_buf_get_keymap(c.buf, 'n')) do
      keys[m.lhs] = m.desc
    end
    assert.matches('queued while a turn runs', keys['<CR>'], 1, true)
    assert.matches('steer', keys['S'], 1, true)
    assert.matches('queued prompts', keys['Q'], 1, true)
    tl.ask('first queued', sid)
    tl.ask('second queued', sid)
    H.wait(function()
      return #c:shown_queue() == 3
    end, 'the queue shown')
    assert.same({ '⏳ queued: first queued', '⏳ queued: second queued', 'Q edits or removes what waits' }, c:shown_queue())
    assert.is_nil(H.text(c.buf):find('first queued', 1, true), 'not in the conversation yet')

    -- Q: edit the second, then remove the first.
    local inputs = {}
    H.keep(vim.ui, 'input')
    vim.ui.input = function(opts, on_confirm)
      table.insert(inputs, opts)
      vim.schedule(function()
        on_confirm('second, edited')
      end)
    end
    local target, action
    local asked = H.answer_select(function(items, opts)
      if opts.kind == 'threadline.queue.item' then
        return action
      end
      for _, item in ipairs(items) do
        if item.prompt and item.prompt[1].text == target then
          return item
        end
      end
    end)
    local edited = H.record('ThreadlineQueueEdited')
    target, action = 'second queued', 'Edit'
    vim.api.nvim_set_current_buf(c.buf)
    vim.api.nvim_feedkeys('Q', 'x', false)
    H.wait_for(edited, 1, 'the edit')
    assert.is_nil(edited[1].error)
    assert.equals('second queued', inputs[1].default)
    H.wait(function()
      return c:shown_queue()[2] == '⏳ queued: second, edited'
    end, 'the edited prompt shown')
    target, action = 'first queued', 'Remove'
    vim.api.nvim_feedkeys('Q', 'x', false)
    H.wait_for(edited, 2, 'the removal')
    H.wait(function()
      return #c:shown_queue() == 2
    end, 'the removed prompt gone')
    assert.equals('⏳ queued: second, edited', c:shown_queue()[1])
    -- The menu offered each waiting prompt and a way to remove them all.
    local labels = vim.tbl_map(asked[1].opts.format_item, asked[1].items)
    assert.same({ '⏳ queued: first queued', '⏳ queued: second queued', 'Remove all that waits (2)' }, labels)
    H.wait_for(prompts, 1, 'the removed prompt answered')
    assert.equals('removed', prompts[1].queue)

    -- A steer from here and one from the other window join the running turn: each
    -- shows as a prompt of this conversation at once.
    vim.cmd('Threadline steer go left')
    other.call('session/resume', { sessionId = sid, cwd = H.home, mcpServers = {} })
    other.request('session/prompt', {
      sessionId = sid,
      prompt = { { type = 'text', text = 'and mind the step' } },
      _meta = { threadline = { whileRunning = 'steer' } },
    })
    H.wait(function()
      local text = H.text(c.buf)
      return text:find('## You\n\ngo left', 1, true) and text:find('## You\n\nand mind the step', 1, true)
    end, 'both steers shown')
    assert.is_nil(tl.state.unsent[sid])

    -- Open the gate: the turn takes the steers, ends, and the queue runs.
    gate.open = true
    gate.release(true)
    H.wait_for(turns, 1, 'the first turn')
    assert.equals('end_turn', turns[1].stopReason)
    H.wait(function()
      for _, p in ipairs(prompts) do
        if p.mode == 'queue' and p.stopReason == 'end_turn' then
          return true
        end
      end
    end, 'the queued turn')
    assert.same({ 'start', 'go left', 'and mind the step', 'second, edited' }, user_texts(sid))
    local text = H.text(c.buf)
    -- Each prompt once, in the order the model saw them, the queued turn's answer last.
    local last = 0
    for _, want in ipairs({ '## You\n\nstart', '## You\n\ngo left', 'past the gate', '## You\n\nsecond, edited' }) do
      local at = text:find(want, last + 1, true)
      assert.is_not_nil(at, want .. ' in ' .. text)
      last = at
    end
    assert.matches('## You\n\nsecond, edited\n\n## Threadline\n\n', text, 1, true)
    local _, n = text:gsub('## You\n\ngo left', '')
    assert.equals(1, n, text)
    assert.is_nil(text:find('first queued', 1, true))
    H.wait(function()
      return #c:shown_queue() == 0 and not require('threadline.live').busy(sid)
    end, 'the queue gone and the session idle')
    assert.equals('', tl.status(sid))
  end)

  it('shows live what another window does: its turn, a fork, a rename, a model change, a rewind, a deletion', function()
    vim.fn.writefile({ 'x' }, H.home .. '/seed.txt')
    local LOOK = H.scripted({ { tool_call = { name = 'list_directory', arguments = { path = '.' } } } }, { { echo = true } })
    local sid = H.new_session(tl, LOOK)
    local c = require('threadline.chat').all()[sid]
    other.call('session/resume', { sessionId = sid, cwd = H.home, mcpServers = {} })
    other.call('session/prompt', { sessionId = sid, prompt = { { type = 'text', text = 'hello from there' } } })
    -- No sync here (no prompt, no entering the buffer): the sidecar streamed it.
    H.wait(function()
      return H.text(c.buf):find('hello from there\n\n## Threadline\n\n✓ ', 1, true) ~= nil
        and H.text(c.buf):find('(completed)', 1, true) ~= nil
        and H.text(c.buf):find('(completed)[^\n]*\n\nhello from there') ~= nil
    end, 'the turn made there')
    other.call('session/prompt', { sessionId = sid, prompt = { { type = 'text', text = 'more from there' } } })
    H.wait(function()
      return H.text(c.buf):find('(completed)[^\n]*\n\nmore from there') ~= nil
    end, 'the second turn made there')

    local fork = other.call('session/fork', { sessionId = sid, cwd = H.home }).sessionId
    H.wait(function()
      return H.text(c.buf):find('_[forked into ' .. fork .. ']_', 1, true) ~= nil
    end, 'the fork')
    other.call('session/set_title', { sessionId = sid, title = 'Garden plans' })
    H.wait(function()
      return H.text(c.buf):find('_[renamed “Garden plans”]_', 1, true) ~= nil
    end, 'the rename')
    assert.equals('Garden plans', vim.b[c.buf].threadline_title)

    local model = 'scripted:echo'
    other.call('session/set_config_option', { sessionId = sid, configId = 'model', value = model })
    H.wait(function()
      return H.text(c.buf):find('(changed in another editor)]_', 1, true) ~= nil
    end, 'the model change')

    -- A rewind there to before the second prompt: the buffer shows what is left.
    local second
    for _, m in ipairs(H.history(tl, sid)) do
      if m.role == 'user' and H.text_of(m) == 'more from there' then
        second = m.messageId
      end
    end
    local rewound = H.record('ThreadlineRewound')
    other.call('session/rewind', { sessionId = sid, beforeMessageId = second, force = true })
    H.wait_for(rewound, 1, 'the rewind shown')
    local text = H.text(c.buf)
    assert.is_nil(text:find('more from there', 1, true), text)
    assert.matches('hello from there', text, 1, true)
    assert.matches('_[rewound in another editor]_', text, 1, true)

    local deleted = H.record('ThreadlineDeleted')
    other.call('session/delete', { sessionId = sid })
    H.wait_for(deleted, 1, 'the deletion shown')
    assert.matches('_[this session was deleted in another editor', H.text(c.buf), 1, true)
  end)

  it('says while the session works in another window, and who runs it, until it is idle', function()
    local sid = H.new_session(tl, H.scripted({ { text = 'partial ' }, { hang = true } }))
    local c = require('threadline.chat').all()[sid]
    local states = H.record('ThreadlineState')
    other.call('session/resume', { sessionId = sid, cwd = H.home, mcpServers = {} })
    other.request('session/prompt', { sessionId = sid, prompt = { { type = 'text', text = 'wait there' } } })
    H.wait(function()
      return require('threadline.live').busy(sid) and H.text(c.buf):find('partial', 1, true) ~= nil
    end, 'the turn there')
    local running = states[#states]
    assert.equals('running', running.state)
    assert.is_false(running.owner.here)
    assert.equals('number', type(running.owner.pid))
    assert.matches('^running in another editor %(Threadline pid %d+ on ', c.status)
    assert.equals('⋯ busy in another editor', tl.status(sid))
    other.call('session/interrupt', { sessionId = sid })
    H.wait(function()
      return states[#states].state == 'idle'
    end, 'the session idle again')
    assert.is_nil(c.status)
    assert.equals('', tl.status(sid))
    assert.is_false(require('threadline.live').busy(sid))
  end)

  it('an interrupt holds the queue (queue resume runs it); :Threadline! interrupt empties it', function()
    local sid = H.new_session(tl, GATED)
    local c = require('threadline.chat').all()[sid]
    local turns = H.record('ThreadlineTurnDone')
    local prompts = H.record('ThreadlinePromptDone')
    --- Start a turn (the gate's `n`th call holds it) and queue `later` behind it.
    local function queue_behind(start, n, later)
      tl.ask(start, sid)
      H.wait(function()
        return gate.calls == n and gate.release ~= nil
      end, 'the turn at the gate')
      tl.ask(later, sid)
      H.wait(function()
        return c:shown_queue()[1] == '⏳ queued: ' .. later
      end, 'the queued prompt')
    end
    --- Interrupt (`command`): the `n`th turn ends cancelled, and the queued prompt's
    --- request answers cancelled with `queue` ('held' or 'removed').
    local function interrupt(command, n, queue)
      vim.cmd(command)
      H.wait_for(turns, n, 'the interrupted turn')
      H.wait_for(prompts, n, 'the queued prompt answered')
      assert.equals('cancelled', turns[n].stopReason)
      assert.equals('cancelled', prompts[n].stopReason)
      assert.equals(queue, prompts[n].queue)
    end
    queue_behind('start', 1, 'held for later')
    interrupt('Threadline interrupt', 1, 'held')
    H.wait(function()
      return c:shown_queue()[1] == '⏳ held: held for later'
    end, 'the held prompt shown')
    -- Resumed, it runs as the next turn (its request here answered 'held' already).
    gate.release, gate.open = nil, true
    local edited = H.record('ThreadlineQueueEdited')
    vim.cmd('Threadline queue resume')
    H.wait_for(edited, 1, 'queue resume')
    assert.equals(1, #edited[1].resumed)
    -- (It follows a tool result, so the scripted model counts it as a steer: round 2.)
    H.wait(function()
      return H.text(c.buf):find('## You\n\nheld for later\n\n## Threadline\n\npast the gate', 1, true) ~= nil
        and not require('threadline.live').busy(sid)
    end, 'the held prompt run')
    assert.same({}, c:shown_queue())

    -- Now with the clearing interrupt.
    gate.open = false
    queue_behind('again', 2, 'never runs')
    interrupt('Threadline! interrupt', 2, 'removed')
    H.wait(function()
      return #c:shown_queue() == 0
    end, 'the queue emptied')
    assert.same({}, tl.call('session/queue/list', { sessionId = sid }).prompts)
    assert.same({ 'start', 'held for later', 'again' }, user_texts(sid))

  end)

  it("interrupting a queued prompt's turn that runs here is interrupting here", function()
    local sid = H.new_session(tl, GATED)
    local c = require('threadline.chat').all()[sid]
    local prompts = H.record('ThreadlinePromptDone')
    local messages = H.record_notify()
    tl.ask('third', sid)
    H.wait(function()
      return gate.release ~= nil
    end, 'the turn at the gate')
    tl.ask('fourth', sid)
    H.wait(function()
      return #c:shown_queue() > 0
    end, 'the queued prompt')
    gate.release(true) -- 'third' goes on and ends; 'fourth' stops at the gate
    H.wait(function()
      return gate.calls == 2 and H.text(c.buf):find('## You\n\nfourth', 1, true) ~= nil
    end, 'the queued turn at the gate')
    assert.is_nil(tl.state.running[sid], 'not a prompt of this Neovim in flight')
    assert.is_true(require('threadline.live').busy(sid))
    assert.equals('⋯ thinking', tl.status(sid))
    vim.cmd('Threadline interrupt')
    H.wait_for(prompts, 1, 'the queued turn interrupted')
    assert.equals('cancelled', prompts[1].stopReason)
    assert.is_nil(prompts[1].queue)
    local text = H.text(c.buf)
    assert.matches('## You\n\nfourth\n\n## Threadline\n\n✗ gate %(failed%)[^\n]*\n\n_%[interrupted%]_', text)
    for _, m in ipairs(messages) do
      assert.is_nil(m.msg:find('another editor', 1, true), m.msg)
    end
  end)

  it('a prompt queued or steering just after the work ended runs at once and shows before its answer', function()
    local sid = H.new_session(tl, 'scripted:echo')
    local c = require('threadline.chat').all()[sid]
    local prompts = H.record('ThreadlinePromptDone')
    for i, mode in ipairs({ 'queue', 'steer' }) do
      tl.state.activity[sid] = { state = 'running' } -- the news of the end has not come yet
      tl.ask('late ' .. mode, sid, mode)
      H.wait_for(prompts, i, 'the prompt answered')
      assert.equals('end_turn', prompts[i].stopReason)
      assert.is_nil(prompts[i].queue, 'it ran, it did not wait')
      H.wait(function()
        return H.text(c.buf):find('## You\n\nlate ' .. mode .. '\n\n## Threadline\n\nlate ' .. mode, 1, true) ~= nil
      end, 'the prompt, then its answer')
    end
    -- The sidecar showed each as a user message before its answer; the buffer was not
    -- filled again from the history (it shows each prompt once).
    local text = H.text(c.buf)
    local _, n = text:gsub('late steer', '')
    assert.equals(2, n, text)
  end)
end)
