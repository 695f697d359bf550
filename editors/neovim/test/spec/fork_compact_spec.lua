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
    local done = H.turn(function()
      tl.ask('alpha words')
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
    assert.matches('_%[forked from “.+” at the answer “alpha words”%]_', buffer)
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
    local text = H.text(tl.buffer())
    assert.matches('%[compacted: %d+ → %d+ messages', text)
    -- The summary shows as one, live (not only after a resume).
    assert.matches('_[summary of the earlier conversation]_\n\n> ' .. compacted[1].summary, text, 1, true)
    assert.equals(sid, tl.state.session_id)
    -- A resume shows it the same way, once.
    local resumed = H.record('ThreadlineResumed')
    tl.resume(sid)
    H.wait(function()
      return #resumed == 1
    end, 'resume')
    local _, n = H.text(tl.buffer()):gsub('summary of the earlier conversation', '')
    assert.equals(1, n)
  end)

  it(':Threadline compact with nothing old enough says so, with no numbers', function()
    two_turns()
    local compacted = H.record('ThreadlineCompacted')
    vim.cmd('Threadline compact')
    H.wait(function()
      return #compacted == 1
    end, 'compaction')
    local text = H.text(tl.buffer())
    assert.matches('_[nothing to compact yet: nothing old enough to summarise]_', text, 1, true)
    assert.is_nil(text:find('[compacted:', 1, true))
    assert.is_nil(text:find('summary of the earlier conversation', 1, true))
  end)
end)
