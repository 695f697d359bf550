-- Fork (switches to the child, whose buffer shows the shared prefix) and compact.
local H = require('helpers')

describe('threadline fork and compact', function()
  local tl
  before_each(function()
    tl = H.start()
  end)
  after_each(H.stop)

  local function two_turns(model)
    local sid = H.new_session(tl, model or 'scripted:echo')
    local done = H.record('ThreadlineTurnDone')
    tl.ask('alpha words')
    H.wait(function()
      return #done == 1
    end, 'turn 1')
    tl.ask('beta words')
    H.wait(function()
      return #done == 2
    end, 'turn 2')
    return sid
  end

  it(':Threadline fork {messageId} branches at that message and switches to it', function()
    local parent = two_turns()
    local first_answer = H.history(tl, parent)[2].messageId
    local forked = H.record('ThreadlineForked')
    vim.cmd('Threadline fork ' .. first_answer)
    H.wait(function()
      return #forked == 1
    end, 'fork')
    local child = tl.state.session_id
    assert.are_not.equal(parent, child)
    assert.equals(parent, forked[1].parentSessionId)
    local buffer = H.text(tl.buffer())
    assert.matches('alpha words', buffer, 1, true)
    assert.is_nil(buffer:find('beta words', 1, true))
    assert.matches('[forked from ' .. parent .. ' at ' .. first_answer .. ']', buffer, 1, true)
    assert.equals(2, #H.history(tl, child))
    assert.equals(4, #H.history(tl, parent))
  end)

  it(':Threadline compact summarises and says so in the buffer', function()
    -- Every call (the summary's too) answers 40 words: shorter than what it replaces.
    local sid = H.new_session(tl, H.scripted({ { ['repeat'] = { text = 'lorem ', count = 40 } } }))
    local done = H.record('ThreadlineTurnDone')
    for i = 1, 4 do
      tl.ask('question ' .. i)
      H.wait(function()
        return #done == i
      end, 'turn ' .. i)
    end
    local compacted = H.record('ThreadlineCompacted')
    vim.cmd('Threadline compact keep it short')
    H.wait(function()
      return #compacted == 1
    end, 'compaction', 30000)
    assert.is_true(compacted[1].messagesAfter < compacted[1].messagesBefore)
    assert.matches('%[compacted: %d+ → %d+ messages', H.text(tl.buffer()))
    assert.equals(sid, tl.state.session_id)
  end)
end)
