-- Installing as docs/editors.md says: :help works (the tags ship), a sidecar command
-- that is not there is one clear message, and :checkhealth threadline reports.
local H = require('helpers')

local here = vim.fn.fnamemodify(debug.getinfo(1, 'S').source:sub(2), ':p')
local root = vim.fs.dirname(vim.fs.dirname(vim.fs.dirname(vim.fs.normalize(here)))) -- editors/neovim

describe('threadline setup', function()
  local messages
  before_each(function()
    messages = H.record_notify()
  end)
  after_each(function()
    H.stop()
    vim.cmd('silent! only')
  end)

  it(':help threadline opens the help; doc/tags is up to date', function()
    local ok, err = pcall(vim.cmd, 'help threadline')
    assert.is_true(ok, tostring(err))
    assert.equals('help', vim.bo.buftype)
    assert.matches('threadline.txt$', vim.api.nvim_buf_get_name(0))
    vim.cmd('helpclose')
    assert.is_true(pcall(vim.cmd, 'help :Threadline'))
    vim.cmd('helpclose')
    -- The shipped tags are what :helptags makes of the help file now.
    local scratch = vim.fn.tempname()
    vim.fn.mkdir(scratch, 'p')
    vim.fn.writefile(vim.fn.readfile(root .. '/doc/threadline.txt'), scratch .. '/threadline.txt')
    vim.cmd('helptags ' .. vim.fn.fnameescape(scratch))
    assert.same(vim.fn.readfile(scratch .. '/tags'), vim.fn.readfile(root .. '/doc/tags'))
    vim.fn.delete(scratch, 'rf')
  end)

  it('a sidecar command that is not installed is one message naming the setting', function()
    local tl = require('threadline')
    tl.setup({ cmd = { 'threadline-is-not-installed-here', 'serve' } })
    local ok, err = pcall(vim.cmd, 'Threadline new')
    assert.is_true(ok, tostring(err))
    local ok2, err2 = pcall(vim.cmd, 'Threadline ask hello')
    assert.is_true(ok2, tostring(err2))
    assert.equals(2, #messages, vim.inspect(messages))
    for _, m in ipairs(messages) do
      assert.equals(vim.log.levels.ERROR, m.level)
      assert.matches("'threadline-is-not-installed-here' is not executable", m.msg, 1, true)
      assert.matches('set `cmd` in', m.msg, 1, true)
      assert.is_nil(m.msg:find('traceback', 1, true))
      assert.is_nil(m.msg:find('\n', 1, true), 'one line')
    end
  end)

  --- A sidecar started without $OPENAI_API_KEY.
  local function keyless()
    local saved = vim.env.OPENAI_API_KEY
    vim.env.OPENAI_API_KEY = nil
    local tl = H.start()
    vim.env.OPENAI_API_KEY = saved
    return tl
  end

  --- Ask for `model` in the open session and wait for the answer.
  local function choose(tl, sid, model)
    local changed = H.record('ThreadlineModel')
    tl.set_model(model, sid)
    H.wait(function()
      return #changed == 1
    end, 'model change')
    return changed[1]
  end

  it('a model without its API key is refused when a session starts, in words', function()
    local tl = keyless()
    tl.new('openai:gpt-4o-mini')
    local refused
    H.wait(function()
      for _, m in ipairs(messages) do
        if m.msg:find('no API key for openai:gpt-4o-mini: set $OPENAI_API_KEY', 1, true) then
          refused = m
        end
      end
      return refused ~= nil
    end, 'the refusal')
    assert.equals(vim.log.levels.ERROR, refused.level)
    assert.is_nil(refused.msg:find('\n', 1, true), 'one line')
    assert.is_nil(refused.msg:find('(no api key)', 1, true), 'the reason is not said twice')
  end)

  it('a model without its API key is refused when it is chosen for an open session', function()
    local tl = keyless()
    local sid = H.new_session(tl, 'scripted:echo')
    local changed = choose(tl, sid, 'openai:gpt-4o-mini')
    assert.equals('scripted:echo', changed.model)
    assert.equals('openai:gpt-4o-mini', changed.refused)
    assert.matches('model not changed: no API key', messages[#messages].msg, 1, true)
    assert.matches('[model not changed (still scripted:echo): no API key', H.text(tl.buffer(sid)), 1, true)
    -- The session kept its model: the next prompt is answered, not an auth error.
    local done = H.turn(function()
      tl.ask('still echoing', sid)
    end, 'the prompt after the refusal')
    assert.equals('end_turn', done[1].stopReason)
    assert.equals('', tl.status(sid))
  end)

  it(':checkhealth threadline reports the sidecar, its version, initialize, the model and the data folder', function()
    H.start()
    vim.cmd('checkhealth threadline')
    local text = H.text(0)
    assert.matches('OK Neovim ' .. tostring(vim.version()), text, 1, true)
    assert.matches('OK command: ', text, 1, true)
    assert.matches('OK version: threadline %d+%.%d+%.%d+', text)
    assert.matches('OK initialize: threadline %d+%.%d+%.%d+, protocol 1', text)
    assert.matches('model local:smollm2%-135m', text)
    assert.matches('OK writable: ' .. H.home, text, 1, true)
    assert.is_nil(text:find('ERROR', 1, true), text)
    vim.cmd('bwipeout!')
    -- A command that is not there is an error with the advice.
    require('threadline').setup({ cmd = { 'threadline-is-not-installed-here', 'serve' } })
    vim.cmd('checkhealth threadline')
    text = H.text(0)
    assert.matches("ERROR 'threadline-is-not-installed-here' is not executable", text, 1, true)
    assert.matches('ADVICE', text, 1, true)
    vim.cmd('bwipeout!')
    -- A command that runs but is no sidecar: initialize fails, in words.
    require('threadline').setup({ cmd = { 'false' } })
    vim.cmd('checkhealth threadline')
    text = H.text(0)
    assert.matches('ERROR initialize failed: the sidecar exited (code 1', text, 1, true)
    vim.cmd('bwipeout!')
  end)

  it(':checkhealth threadline reads initialize from the sidecar already running', function()
    local tl = H.start()
    H.new_session(tl, 'scripted:echo')
    local conn = tl.state.conn
    local rpc = require('threadline.rpc')
    local started = 0
    H.keep(rpc, 'start')
    local start = rpc.start
    rpc.start = function(...)
      started = started + 1
      return start(...)
    end
    vim.cmd('checkhealth threadline')
    local text = H.text(0)
    assert.matches('OK running in this Neovim', text, 1, true)
    assert.matches('OK initialize: threadline %d+%.%d+%.%d+, protocol 1', text)
    assert.equals(0, started) -- no second sidecar for the check
    assert.equals(conn, tl.state.conn)
    assert.is_false(conn.closed)
    vim.cmd('bwipeout!')
  end)
end)
