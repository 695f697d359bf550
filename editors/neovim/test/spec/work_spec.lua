-- The agent's work in Neovim, against the real sidecar: the plan in the chat buffer, the
-- mode, an edit's diff beside the permission question (and not asked again at the
-- write), `:Threadline diff`, `:Threadline rewind!` and `:Threadline unrewind`.
local H = require('helpers')

local SOURCE = 'def add(a, b):\n    return a - b\n'
local FIXED = 'def add(a, b):\n    return a + b\n'

local function read(path)
  local f = assert(io.open(path, 'rb'))
  local data = f:read('*a')
  f:close()
  return data
end

--- The text of every visible buffer that `keep(buf)` picks.
local function windows(keep)
  local out = {}
  for _, win in ipairs(vim.api.nvim_list_wins()) do
    local buf = vim.api.nvim_win_get_buf(win)
    if keep(buf) then
      table.insert(out, H.text(buf))
    end
  end
  return out
end

local function diff_windows()
  return windows(function(buf)
    return vim.bo[buf].filetype == 'diff'
  end)
end

local function output_windows()
  return windows(function(buf)
    return vim.api.nvim_buf_get_name(buf):find('threadline://output/', 1, true) ~= nil
  end)
end

describe('threadline agent work', function()
  local tl, ws
  before_each(function()
    ws = vim.fn.tempname() -- a workspace of its own, beside the data folder
    vim.fn.mkdir(ws, 'p')
    tl = H.start({ cwd = ws })
    H.keep(vim.ui, 'select')
  end)
  after_each(function()
    H.stop()
  end)

  it('shows the plan as a checklist and switches the mode', function()
    local plan = {
      { content = 'Look around', status = 'in_progress' },
      { content = 'Write the code', priority = 'high' },
    }
    H.new_session(tl, H.scripted({ { tool_call = { name = 'update_plan', arguments = { entries = plan } } } }, {
      { text = 'Planned.' },
    }))
    local done = H.turn('Threadline ask plan it', 'the turn')
    local buffer = H.text(tl.buffer())
    assert.matches('**Plan**\n\n- [~] Look around\n- [ ] Write the code (high)', buffer, 1, true)
    local modes = H.record('ThreadlineMode')
    vim.cmd('Threadline mode plan')
    H.wait(function()
      return #modes == 1
    end, 'current_mode_update')
    assert.equals('plan', modes[1].mode)
    assert.matches('[mode: plan]', H.text(tl.buffer()), 1, true)
    local picked
    vim.ui.select = function(items, opts, on_choice)
      picked = { items = items, opts = opts }
      on_choice(nil)
    end
    vim.cmd('Threadline mode')
    assert.matches('now plan', picked.opts.prompt, 1, true)
    assert.same({ 'ask', 'plan', 'code', 'auto' }, vim.tbl_map(function(m)
      return m.id
    end, picked.items))
  end)

  it('reviews an edit as a diff, then diff, rewind! and unrewind', function()
    local path = ws .. '/calc.py'
    local f = assert(io.open(path, 'wb'))
    f:write(SOURCE)
    f:close()
    local edit = { oldText = 'a - b', newText = 'a + b' }
    local model = H.scripted(
      { { tool_call = { name = 'edit_file', arguments = { path = 'calc.py', edits = { edit } } } } },
      { { text = 'Fixed.' } }
    )
    local asked = H.answer_select(H.option('allow_once'), function(opts)
      return { kind = opts.kind, diffs = diff_windows() }
    end)
    H.new_session(tl, model)
    local done = H.turn('Threadline ask fix add', 'the turn')
    assert.equals('end_turn', done[1].stopReason)
    -- One question (the write is not asked about again), with the diff beside it.
    assert.equals(1, #asked)
    assert.equals('threadline.permission', asked[1].kind)
    assert.equals(1, #asked[1].diffs)
    assert.matches('--- a/', asked[1].diffs[1], 1, true)
    assert.matches('-    return a - b\n+    return a + b', asked[1].diffs[1], 1, true)
    assert.same({}, diff_windows(), 'the review closes with the question')
    assert.equals(FIXED, read(path))

    local diffs = H.record('ThreadlineDiff')
    vim.cmd('Threadline diff')
    H.wait(function()
      return #diffs == 1
    end, 'session/diff')
    local shown = diff_windows()
    assert.equals(1, #shown)
    assert.matches('# modified calc.py +1 -1', shown[1], 1, true)
    assert.matches('+    return a + b', shown[1], 1, true)
    vim.cmd('only')

    vim.api.nvim_set_current_buf(tl.buffer())
    local rewound = H.record('ThreadlineRewound')
    vim.cmd('Threadline! rewind')
    H.wait(function()
      return #rewound == 1
    end, 'session/rewind')
    assert.equals(SOURCE, read(path))
    assert.equals(0, rewound[1].result.messageCount)
    local buffer = H.text(tl.buffer())
    assert.is_nil(buffer:find('Fixed.', 1, true), 'the cut turn left the buffer')
    assert.matches('[rewound: the cut turns are session', buffer, 1, true)

    local unrewound = H.record('ThreadlineUnrewound')
    vim.cmd('Threadline unrewind')
    H.wait(function()
      return #unrewound == 1
    end, 'session/unrewind')
    assert.equals(FIXED, read(path))
    assert.matches('Fixed.', H.text(tl.buffer()), 1, true)
  end)

  it('streams into a split while the command runs', function()
    local command = 'echo started; while [ ! -f go ]; do sleep 0.1; done; echo finished'
    H.answer_select(H.option('allow_once'))
    H.new_session(tl, H.scripted(
      { { tool_call = { name = 'run_command', arguments = { command = command } } } },
      { { text = 'Ran it.' } }
    ))
    local done = H.record('ThreadlineTurnDone')
    vim.cmd('Threadline ask run it')
    -- The command waits for the file `go`: its first line shows before it ends.
    H.wait(function()
      local shown = output_windows()
      return #shown == 1 and shown[1]:find('started', 1, true) ~= nil
    end, 'the output so far')
    assert.is_nil(output_windows()[1]:find('finished', 1, true))
    assert.equals(0, #done)
    vim.fn.writefile({}, ws .. '/go')
    H.wait(function()
      return #done == 1
    end, 'the turn')
    local shown = output_windows()
    assert.equals(1, #shown)
    assert.matches('started\nfinished', shown[1], 1, true)
    assert.matches('[exit code 0]', shown[1], 1, true)
  end)
end)
