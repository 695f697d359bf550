-- Interrupting a turn that would never end: the prompt answers `cancelled`, the
-- buffer says so, and the partial answer is kept.
local H = require('helpers')

local HANG = H.scripted({ { text = 'partial ' }, { text = 'answer' }, { hang = true } })

describe('threadline interrupt', function()
  local tl
  before_each(function()
    tl = H.start()
  end)
  after_each(H.stop)

  local function start_hanging_turn()
    local sid = H.new_session(tl, HANG)
    local done = H.record('ThreadlineTurnDone')
    tl.ask('never stop')
    H.wait(function()
      return H.text(tl.buffer()):find('partial answer', 1, true) ~= nil
    end, 'the partial answer')
    vim.wait(200)
    assert.equals(0, #done, 'the turn hangs until interrupted')
    return sid, done
  end

  it('<C-c> in the chat buffer interrupts; the turn ends cancelled', function()
    local sid, done = start_hanging_turn()
    assert.equals(tl.buffer(), vim.api.nvim_get_current_buf())
    local map = vim.fn.maparg('<C-c>', 'n', false, true)
    assert.equals(1, map.buffer)
    map.callback()
    H.wait(function()
      return #done == 1
    end, 'the cancelled turn', 10000)
    assert.equals('cancelled', done[1].stopReason)
    assert.matches('partial answer\n\n_%[interrupted%]_', H.text(tl.buffer()))
    -- What streamed before the interrupt is counted (it was 0/0).
    local tokens_in, tokens_out = H.text(tl.buffer()):match('tokens in (%d+) · out (%d+)')
    assert.is_true(tonumber(tokens_in) > 0)
    assert.equals(2, tonumber(tokens_out))
    local history = H.history(tl, sid)
    assert.is_true(history[#history].truncated)
    assert.equals('partial answer', H.text_of(history[#history]))
  end)

  it(':Threadline interrupt does the same, and the session stays usable', function()
    local sid, done = start_hanging_turn()
    vim.cmd('Threadline interrupt')
    H.wait(function()
      return #done == 1
    end, 'the cancelled turn', 10000)
    assert.equals('cancelled', done[1].stopReason)
    assert.matches('_%[interrupted%]_', H.text(tl.buffer()))
    -- The session takes another prompt (it hangs again: interrupt it again).
    tl.ask('again')
    H.wait(function()
      local _, n = H.text(tl.buffer()):gsub('partial answer', '')
      return n == 2
    end, 'the second partial answer')
    tl.interrupt()
    H.wait(function()
      return #done == 2
    end, 'the second cancelled turn', 10000)
    assert.equals('cancelled', done[2].stopReason)
    assert.equals(4, #H.history(tl, sid))
  end)
end)
