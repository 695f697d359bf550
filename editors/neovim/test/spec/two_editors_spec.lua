-- Two editors on one home: this Neovim and another editor's sidecar (driven over the
-- plugin's rpc module). A turn running there streams here once resumed, turns made
-- there show here, a prompt sent while it runs there waits in the queue, an interrupt
-- from here says what it did, and a session deleted there is said in words.
local H = require('helpers')

local SLOW = H.scripted({ { text = 'partial ' }, { text = 'answer' }, { sleep = 1.5 }, { text = ' and the rest' }, { hang = true } })

describe('threadline with two editors on one session', function()
  local tl, other
  before_each(function()
    tl = H.start()
    other = H.other_editor()
  end)
  after_each(H.stop)

  --- Resume `sid` here and wait until it is shown.
  local function resume(sid)
    local resumed = H.record('ThreadlineResumed')
    tl.resume(sid)
    H.wait(function()
      return #resumed == 1
    end, 'resume')
  end

  --- A session whose turn runs in the other editor, its partial answer streamed there.
  local function running_elsewhere()
    tl.call('session/list', vim.empty_dict()) -- this Neovim's sidecar is up before the turn starts
    local sid = other.call('session/new', { cwd = H.home, mcpServers = {}, _meta = { threadline = { model = SLOW } } }).sessionId
    other.request('session/prompt', { sessionId = sid, prompt = { { type = 'text', text = 'work elsewhere' } } })
    H.wait(function()
      return other.streamed():find('partial answer', 1, true) ~= nil
    end, 'the partial answer in the other editor')
    return sid
  end

  it('resuming a session whose turn runs elsewhere shows its partial answer, then the live stream', function()
    local sid = running_elsewhere()
    resume(sid)
    local buf = tl.buffer(sid)
    H.wait(function()
      return H.text(buf):find('partial answer', 1, true) ~= nil
    end, 'the partial answer here')
    assert.matches('## You\n\nwork elsewhere\n\n## Threadline\n\npartial answer', H.text(buf), 1, true)
    assert.is_nil(H.text(buf):find('and the rest', 1, true), 'the rest has not streamed yet: ' .. H.text(buf))
    H.wait(function()
      return H.text(buf):find('partial answer and the rest', 1, true) ~= nil
    end, 'the live stream')
    local _, n = H.text(buf):gsub('partial answer', '')
    assert.equals(1, n, 'each piece is shown once')
  end)

  it('turns made in the other editor after a resume show when the buffer is entered and before a prompt', function()
    local sid = other.call('session/new', { cwd = H.home, mcpServers = {}, _meta = { threadline = { model = 'scripted:echo' } } }).sessionId
    other.call('session/prompt', { sessionId = sid, prompt = { { type = 'text', text = 'first from there' } } })
    resume(sid)
    local buf = tl.buffer(sid)
    other.call('session/prompt', { sessionId = sid, prompt = { { type = 'text', text = 'second from there' } } })
    assert.is_nil(H.text(buf):find('second from there', 1, true))
    -- Leave the chat buffer and come back (more than a second later: entering is
    -- throttled to once a second).
    vim.wait(1100)
    vim.cmd('enew')
    vim.api.nvim_set_current_buf(buf)
    H.wait(function()
      return H.text(buf):find('## You\n\nsecond from there\n\n## Threadline\n\nsecond from there', 1, true) ~= nil
    end, 'the turn made elsewhere')
    -- A prompt first shows what was made elsewhere meanwhile, then itself.
    other.call('session/prompt', { sessionId = sid, prompt = { { type = 'text', text = 'third from there' } } })
    -- (Until the news that it ended there comes, a prompt from here would be queued.)
    H.wait(function()
      return not require('threadline.live').busy(sid)
    end, 'the turn there seen ended')
    local done = H.turn(function()
      tl.ask('and one from here', sid)
    end, 'the turn here')
    local text = H.text(buf)
    local third = text:find('third from there', 1, true)
    local here = text:find('## You\n\nand one from here', 1, true)
    assert.is_not_nil(third, text)
    assert.is_not_nil(here, text)
    assert.is_true(third < here, text)
    local _, n = text:gsub('## You\n\nfirst from there', '')
    assert.equals(1, n, 'nothing is shown twice: ' .. text)
    assert.equals(8, #H.history(tl, sid))
  end)

  it('a prompt or steer while the turn runs elsewhere waits; a refused one is queued; an interrupt holds them, queue clear removes them', function()
    local sid = running_elsewhere()
    resume(sid)
    local buf = tl.buffer(sid)
    local c = require('threadline.chat').all()[sid]
    H.wait(function()
      return require('threadline.live').busy(sid)
    end, 'the session shown as running elsewhere')
    assert.matches('running in another editor (Threadline pid', c.status, 1, true)
    assert.equals('⋯ busy in another editor', tl.status(sid))
    local done = H.record('ThreadlinePromptDone')
    tl.ask('are you there', sid)
    H.wait(function()
      return vim.deep_equal(c:shown_queue()[1], '⏳ queued: are you there')
    end, 'the queued prompt shown')
    assert.is_nil(H.text(buf):find('are you there', 1, true), 'not part of the conversation yet')
    assert.is_nil(tl.state.running[sid])
    -- A steer from here joins the turn running there: shown as a prompt at once.
    vim.cmd('Threadline steer hold on')
    H.wait(function()
      return H.text(buf):find('## You\n\nhold on', 1, true) ~= nil
    end, 'the steer shown')
    -- A prompt sent before the news that the session is busy came (as if the turn had
    -- started there a moment ago) is refused, taken back, and queued.
    tl.state.activity[sid] = nil
    local turns = H.record('ThreadlineTurnDone')
    tl.ask('and again', sid)
    H.wait_for(turns, 1, 'the refusal')
    assert.equals(false, turns[1].sent)
    assert.is_true(turns[1].queued)
    H.wait(function()
      return vim.tbl_contains(c:shown_queue(), '⏳ queued: and again')
    end, 'the refused prompt queued')
    local text = H.text(buf)
    assert.matches('_[the session was busy: your prompt waits in the queue]_', text, 1, true)
    assert.is_nil(text:find('## You\n\nand again', 1, true), 'the refused block was taken back: ' .. text)
    assert.same(
      { '⏳ queued: are you there', '⏳ steering: hold on', '⏳ queued: and again', 'Q edits or removes what waits' },
      c:shown_queue()
    )
    -- An interrupt stops the turn there and holds what waits.
    vim.cmd('Threadline interrupt')
    H.wait_for(done, 3, 'every waiting prompt answered')
    for _, d in ipairs(done) do
      assert.equals('cancelled', d.stopReason)
      assert.equals('held', d.queue)
    end
    H.wait(function()
      return c:shown_queue()[1] == '⏳ held: are you there'
    end, 'the held prompts shown')
    assert.same(
      { '⏳ held: are you there', '⏳ held: hold on', '⏳ held: and again', 'Q edits or removes what waits' },
      c:shown_queue()
    )
    vim.cmd('Threadline queue clear')
    H.wait(function()
      return #c:shown_queue() == 0
    end, 'the queue emptied')
    assert.same({}, tl.call('session/queue/list', { sessionId = sid }).prompts)
  end)

  it('an interrupt from here stops the turn running elsewhere and says so', function()
    local sid = running_elsewhere()
    local ended
    resume(sid)
    local messages = H.record_notify()
    vim.cmd('Threadline interrupt')
    H.wait(function()
      for _, m in ipairs(messages) do
        if m.msg:find('interrupted the turn running in another editor', 1, true) then
          ended = true
        end
      end
      return ended
    end, 'the interrupt to be said')
    assert.matches('_[interrupted the turn running in another editor]_', H.text(tl.buffer(sid)), 1, true)
  end)

  it('a session deleted in the other editor is said in words', function()
    local sid = H.new_session(tl, 'scripted:echo')
    other.call('session/delete', { sessionId = sid })
    local done = H.turn(function()
      tl.ask('still there?', sid)
    end, 'the failed prompt')
    assert.matches('no longer exists: it was deleted (perhaps in another editor)', done[1].error, 1, true)
    assert.matches('no longer exists: it was deleted', H.text(tl.buffer(sid)), 1, true)
    assert.is_nil(done[1].error:find('unknown session', 1, true))
  end)
end)
