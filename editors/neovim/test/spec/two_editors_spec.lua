-- Two editors on one home: this Neovim and another editor's sidecar (driven over the
-- plugin's rpc module). A turn running there streams here once resumed, turns made
-- there show here, a prompt refused as busy leaves no prompt behind, an interrupt from
-- here says what it did, and a session deleted there is said in words.
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
    assert.is_nil(H.text(buf):find('and the rest', 1, true), 'the rest has not streamed yet')
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

  it('a prompt refused because the turn runs elsewhere leaves no prompt block; the running turn streams instead', function()
    local sid = running_elsewhere()
    resume(sid)
    local buf = tl.buffer(sid)
    local messages = H.record_notify()
    local done = H.turn(function()
      tl.ask('are you there', sid)
    end, 'the refusal')
    local text = H.text(buf)
    assert.is_nil(text:find('are you there', 1, true), 'the refused prompt is not shown as sent: ' .. text)
    assert.matches('_[not sent: this session is running in another editor', text, 1, true)
    assert.equals(false, done[1].sent)
    assert.equals('are you there', tl.state.unsent[sid])
    assert.matches('your prompt was not sent', messages[#messages].msg, 1, true)
    assert.is_nil(tl.state.running[sid])
    -- (The rest comes after the note, as its own paragraph.)
    H.wait(function()
      return H.text(buf):find('and the rest', 1, true) ~= nil
    end, 'the running turn streaming here')
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
