-- Finding a session against the real sidecar: `:Threadline search` (the vim.ui.select
-- picker: no Telescope or fzf-lua here), opening a hit with the cursor on its message,
-- rename, archive and unarchive.
local H = require('helpers')

describe('threadline search, rename, archive', function()
  local tl
  before_each(function()
    tl = H.start({ picker = 'auto' })
  end)
  after_each(H.stop)

  --- Replace vim.ui.select until H.stop(): `choose(items)` returns the item to pick.
  local function select_with(choose)
    local shown = {}
    H.keep(vim.ui, 'select')
    vim.ui.select = function(items, opts, on_choice)
      table.insert(shown, { items = items, opts = opts })
      on_choice(choose(items, opts))
    end
    return shown
  end

  --- A session with one echo turn per prompt; returns its id.
  local function session_with(...)
    local sid = H.new_session(tl, 'scripted:echo')
    local done = H.record('ThreadlineTurnDone')
    for i, text in ipairs({ ... }) do
      tl.ask(text, sid)
      H.wait(function()
        return #done == i
      end, 'turn ' .. i)
    end
    return sid
  end

  it(':Threadline search picks a hit and opens its session with the cursor on the message', function()
    assert.equals('select', require('threadline.find').picker())
    local kettle = session_with('how often should I descale the kettle', 'and the coffee machine, and the dishwasher filter')
    local history = H.history(tl, kettle)
    local _other = session_with('plant tomatoes in spring')
    vim.cmd('enew') -- away from the chat buffers

    local shown = select_with(function(items)
      for _, hit in ipairs(items) do
        if hit.role == 'user' and hit.messageId == history[3].messageId then
          return hit
        end
      end
    end)
    local opened = H.record('ThreadlineOpened')
    vim.cmd('Threadline search coffee machine')
    H.wait(function()
      return #opened == 1
    end, 'the hit opened')

    -- The picker showed the hits of the one session, each with its snippet, the words marked.
    assert.equals(1, #shown)
    assert.equals('threadline.search', shown[1].opts.kind)
    assert.matches('hits? for “coffee machine”', shown[1].opts.prompt)
    for _, hit in ipairs(shown[1].items) do
      assert.equals(kettle, hit.sessionId)
    end
    local line = shown[1].opts.format_item(shown[1].items[1])
    assert.matches('^how often should I descale the kettle — in ', line)
    assert.matches('[coffee] [machine]', line, 1, true)

    -- The session is on screen, the cursor on the message's first line.
    assert.equals(kettle, tl.state.session_id)
    local buf = tl.buffer(kettle)
    assert.equals(buf, vim.api.nvim_get_current_buf())
    assert.equals(history[3].messageId, opened[1].messageId)
    local row = vim.api.nvim_win_get_cursor(0)[1]
    assert.equals(opened[1].row, row)
    assert.is_true(row > 1)
    local c = require('threadline.chat').of_buffer(buf)
    assert.equals(history[3].messageId, c:message_at(row - 1).id)
    local text = table.concat(vim.api.nvim_buf_get_lines(buf, row - 1, row + 3, false), '\n')
    assert.matches('and the coffee machine', text, 1, true)
  end)

  it('a hit in a tool result puts the cursor on the tool call; no words or no hits are said', function()
    tl = H.start({
      picker = 'select',
      tools = {
        {
          name = 'barometer',
          description = 'Air pressure',
          handler = function()
            return { content = { { type = 'text', text = 'the barometer reads 1013 hectopascal' } } }
          end,
        },
      },
    })
    local sid = H.new_session(tl, H.scripted({ { tool_call = { name = 'barometer', arguments = vim.empty_dict() } } }, { { text = 'Pressure is normal.' } }))
    local done = H.turn(function()
      tl.ask('what does the barometer say', sid)
    end, 'the turn')
    vim.cmd('enew')
    select_with(function(items)
      for _, hit in ipairs(items) do
        if hit.role == 'tool' then
          return hit
        end
      end
    end)
    local opened = H.record('ThreadlineOpened')
    tl.search('hectopascal')
    H.wait(function()
      return #opened == 1
    end, 'the tool hit opened')
    local row = vim.api.nvim_win_get_cursor(0)[1]
    assert.equals(opened[1].row, row)
    local line = vim.api.nvim_buf_get_lines(tl.buffer(sid), row - 1, row, false)[1]
    assert.matches('barometer', line, 1, true)
    assert.matches('1013 hectopascal', line, 1, true)

    local said = H.record_notify()
    local searched = H.record('ThreadlineSearched')
    tl.search('zebra crossing')
    H.wait(function()
      return #searched == 1
    end, 'the empty search')
    assert.same({}, searched[1].hits)
    assert.matches('nothing found for “zebra crossing”', said[#said].msg, 1, true)
    tl.search('   ')
    assert.matches('search needs words', said[#said].msg, 1, true)
    tl.search('(*)')
    H.wait(function()
      return said[#said].msg:find('search: ', 1, true) ~= nil
    end, 'the refusal')
    assert.equals(vim.log.levels.WARN, said[#said].level)
  end)

  it(':Threadline rename and archive act on the chat buffer\'s session; unarchive puts it back', function()
    local sid = session_with('notes about the garden beds')
    local other = session_with('something else')
    vim.api.nvim_set_current_buf(tl.buffer(sid))
    local renamed = H.record('ThreadlineRenamed')
    vim.cmd('Threadline rename Garden   plans')
    H.wait(function()
      return #renamed == 1
    end, 'the rename')
    assert.same({ sessionId = sid, title = 'Garden plans' }, renamed[1])
    local entry
    tl.info(sid, function(e)
      entry = e
    end)
    H.wait(function()
      return entry ~= nil
    end, 'the list entry')
    assert.equals('Garden plans', entry.title)

    local archived = H.record('ThreadlineArchived')
    vim.cmd('Threadline archive')
    H.wait(function()
      return #archived == 1
    end, 'the archive')
    local listed = tl.call('session/list', vim.empty_dict())
    assert.same({ other }, vim.tbl_map(function(s)
      return s.sessionId
    end, listed.sessions))

    -- `:Threadline sessions archived` lists it; a search still finds it, marked archived.
    local shown = select_with(function(items)
      return items[1]
    end)
    vim.cmd('Threadline sessions archived')
    H.wait(function()
      return #shown == 1
    end, 'the archived list')
    assert.equals('Threadline archived sessions', shown[1].opts.prompt)
    assert.same({ sid }, vim.tbl_map(function(s)
      return s.sessionId
    end, shown[1].items))
    local found = tl.call('session/search', { query = 'garden beds' })
    assert.is_true(found.hits[1].archived)
    assert.matches('· archived: ', require('threadline.find').label(found.hits[1]), 1, true)

    vim.cmd('Threadline unarchive ' .. sid)
    H.wait(function()
      return #archived == 2
    end, 'the unarchive')
    assert.is_false(archived[2].archived)
    assert.equals(2, #tl.call('session/list', vim.empty_dict()).sessions)
    assert.same({ 'archive', 'archived' }, vim.tbl_filter(function(s)
      return vim.startswith(s, 'archive')
    end, vim.list_extend(tl.complete('arch', 'Threadline arch'), tl.complete('', 'Threadline sessions '))))
  end)
end)
