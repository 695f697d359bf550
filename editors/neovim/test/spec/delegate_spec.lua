-- A `delegate` call runs a child session: its tool call names the child
-- (`_meta.threadline.childSessionId`), <Tab> shows the child's progress under the
-- line, and gO opens the child session.
local H = require('helpers')

describe('threadline delegate calls', function()
  local tl
  before_each(function()
    tl = H.start()
  end)
  after_each(H.stop)

  it('names the child on the tool line, expands its result, and opens the child', function()
    local child_model = H.scripted({ { text = 'the child counted 3 files' } })
    local sid = H.new_session(tl, H.scripted(
      { { tool_call = { name = 'delegate', arguments = { task = 'count the files', model = child_model } } } },
      { { text = 'parent done' } }
    ))
    local c = require('threadline.chat').all()[sid]
    H.turn('Threadline ask count them')
    local id, entry
    for tid, e in pairs(c.tools) do
      id, entry = tid, e
    end
    assert.is_not_nil(entry and entry.child, vim.inspect(c.tools))
    local child = entry.child
    local text = H.text(c.buf)
    assert.matches('(completed) ↳ ' .. child, text, 1, true)
    assert.matches('parent done', text, 1, true)
    -- <Tab> on the line shows the whole result under it, and hides it again.
    local row = c:row_of(nil, id)
    vim.api.nvim_set_current_buf(c.buf)
    vim.api.nvim_win_set_cursor(0, { row + 1, 0 })
    vim.api.nvim_feedkeys(vim.keycode('<Tab>'), 'x', false)
    local shown = table.concat(c:shown_detail(id), '\n')
    assert.matches('the child counted 3 files', shown, 1, true)
    assert.matches('(child session ' .. child .. ')', shown, 1, true)
    vim.api.nvim_feedkeys(vim.keycode('<Tab>'), 'x', false)
    assert.same({}, c:shown_detail(id))
    -- gO opens the child session in its own chat buffer.
    local resumed = H.record('ThreadlineResumed')
    vim.api.nvim_feedkeys('gO', 'x', false)
    H.wait_for(resumed, 1, 'the child opened')
    assert.equals(child, resumed[1].sessionId)
    local child_text = H.text(tl.buffer(child))
    assert.matches('count the files', child_text, 1, true)
    assert.matches('the child counted 3 files', child_text, 1, true)
    -- The parent's buffer filled from history names the child too.
    require('threadline.chat').drop(sid)
    local again = H.record('ThreadlineResumed')
    tl.resume(sid)
    H.wait_for(again, 1, 'the parent resumed')
    assert.matches('(completed) ↳ ' .. child, H.text(tl.buffer(sid)), 1, true)
  end)
end)
