-- The sidecar dies mid-turn (kill -9): the buffer says so and keeps what streamed, the
-- messages say so, nothing starts a new sidecar behind the user's back, and
-- :Threadline restart brings the sessions back.
local H = require('helpers')

local HANG = H.scripted({ { text = 'partial ' }, { text = 'answer' }, { hang = true } })

--- The sidecar process: the child of this Neovim whose command line names threadline.
local function sidecar_pid()
  for _, pid in ipairs(vim.api.nvim_get_proc_children(vim.fn.getpid())) do
    local cmdline = table.concat(vim.fn.readfile('/proc/' .. pid .. '/cmdline', 'b'), ' ')
    if cmdline:find('threadline', 1, true) then
      return pid
    end
  end
end

describe('threadline when the sidecar dies', function()
  local tl, messages
  before_each(function()
    tl = H.start()
    messages = H.record_notify()
  end)
  after_each(function()
    H.stop()
  end)

  local function said(pattern)
    for _, m in ipairs(messages) do
      if m.msg:find(pattern, 1, true) then
        return m
      end
    end
  end

  it('says it died, keeps what streamed, and restarts on request', function()
    local sid = H.new_session(tl, HANG)
    local buf = tl.buffer(sid)
    local done = H.record('ThreadlineTurnDone')
    tl.ask('never stop')
    H.wait(function()
      return H.text(buf):find('partial answer', 1, true) ~= nil
    end, 'the partial answer')
    local pid = sidecar_pid()
    assert.is_not_nil(pid, 'the sidecar process')
    vim.uv.kill(pid, 'sigkill')
    H.wait(function()
      return #done == 1
    end, 'the turn to end')
    assert.matches('killed by signal 9', done[1].error, 1, true)
    local text = H.text(buf)
    assert.matches('never stop\n\n## Threadline\n\npartial answer', text, 1, true)
    assert.matches('_[the sidecar was killed by signal 9; :Threadline restart starts it again]_', text, 1, true)
    local m = said('the sidecar was killed by signal 9')
    assert.is_not_nil(m, vim.inspect(messages))
    assert.equals(vim.log.levels.ERROR, m.level)
    assert.matches('died', tl.status(sid), 1, true)

    -- No silent new sidecar: interrupt and ask say what happened.
    messages = H.record_notify()
    vim.cmd('Threadline interrupt')
    assert.is_not_nil(said('not running'), vim.inspect(messages))
    messages = H.record_notify()
    vim.cmd('Threadline ask again')
    H.wait(function()
      return said('restart') ~= nil
    end, 'the ask to be refused')
    assert.is_nil(sidecar_pid(), 'no sidecar was started')

    -- :Threadline restart reattaches the open buffer's session; it takes prompts.
    vim.cmd('Threadline restart')
    H.wait(function()
      return H.text(buf):find('[the sidecar was restarted]', 1, true) ~= nil
    end, 'the restart')
    tl.ask('once more', sid)
    H.wait(function()
      local _, n = H.text(buf):gsub('partial answer', '')
      return n == 2
    end, 'the answer after the restart')
    tl.interrupt(sid)
    H.wait(function()
      return #done == 2
    end, 'the interrupt after the restart')
    assert.equals('cancelled', done[2].stopReason)
    -- The stored transcript kept the first turn's partial answer too.
    local history = H.history(tl, sid)
    assert.equals('partial answer', H.text_of(history[2]))
  end)
end)
