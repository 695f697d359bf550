-- The agent asks the user (`ask_user` → `elicitation/create`): a choice with
-- vim.ui.select, each field of a form with vim.ui.input (or vim.ui.select for a
-- choice or yes/no), and a dismissed question declines.
local H = require('helpers')

--- A model that calls ask_user with `arguments`, then ends the turn.
local function asking(arguments)
  return H.scripted(
    { { tool_call = { name = 'ask_user', arguments = arguments } } },
    { { text = 'Thanks.' } }
  )
end

--- What the model was told: the ask_user call's stored result.
local function answer_told(tl, sid)
  for _, m in ipairs(H.history(tl, sid)) do
    for _, b in ipairs(m.content or {}) do
      if b.type == 'tool_result' and b.toolName == 'ask_user' then
        return require('threadline.util').block_text(b.content), b.status
      end
    end
  end
end

describe('threadline answers the agent’s questions', function()
  local tl, inputs
  before_each(function()
    tl = H.start()
    inputs = {}
    H.keep(vim.ui, 'input')
  end)
  after_each(H.stop)

  --- vim.ui.input answers each question with the next of `answers` (nil: dismissed).
  local function type_answers(answers)
    local i = 0
    vim.ui.input = function(opts, on_confirm)
      i = i + 1
      table.insert(inputs, opts.prompt)
      local answer = answers[i]
      vim.schedule(function()
        on_confirm(answer)
      end)
    end
  end

  it('a question with choices is a vim.ui.select; the pick is the answer the model reads', function()
    local asked = H.answer_select(function(items)
      return items[2]
    end)
    local sid = H.new_session(tl, asking({ question = 'Which colour?', choices = { 'red', 'blue' } }))
    local done = H.turn('Threadline ask paint it')
    assert.equals('end_turn', done[1].stopReason)
    -- Asked at all: the sidecar sends elicitation/create only to a client that
    -- advertised `elicitation.form` (else the question ends the turn as its answer).
    assert.equals(1, #asked)
    assert.same({ 'red', 'blue' }, asked[1].items)
    assert.equals('threadline.elicitation', asked[1].opts.kind)
    assert.matches('Which colour?', asked[1].opts.prompt, 1, true)
    assert.equals('The user answered: blue', (answer_told(tl, sid)))
    local buffer = H.text(tl.buffer())
    assert.matches('✓ Ask: Which colour? (completed) — The user answered: blue', buffer, 1, true)
    assert.matches('Thanks.', buffer, 1, true)
  end)

  it('a form asks field by field; a number is asked again until it is one', function()
    local asked = H.answer_select(function()
      return 'yes'
    end)
    type_answers({ 'Ada', 'old', '42' })
    local sid = H.new_session(tl, asking({
      question = 'About you',
      fields = {
        { name = 'name', description = 'what to call you' },
        { name = 'age', type = 'integer' },
        { name = 'tea', type = 'boolean' },
      },
    }))
    H.turn('Threadline ask hello')
    assert.equals(3, #inputs, vim.inspect(inputs))
    assert.matches('About you\nname (what to call you): ', inputs[1], 1, true)
    assert.matches('About you\nage: ', inputs[2], 1, true)
    assert.matches('(old is not a whole number) About you\nage: ', inputs[3], 1, true)
    assert.equals(1, #asked)
    assert.same({ 'yes', 'no' }, asked[1].items)
    assert.matches('tea: ', asked[1].opts.prompt, 1, true)
    local told, status = answer_told(tl, sid)
    assert.equals('completed', status)
    -- One line per field (a Lua table has no key order, so neither has the answer).
    local lines = vim.split(told, '\n')
    assert.equals('The user answered:', table.remove(lines, 1))
    table.sort(lines)
    assert.same({ '- age: 42', '- name: Ada', '- tea: true' }, lines)
  end)

  it('a dismissed question declines: the model is told so and the turn goes on', function()
    type_answers({ nil })
    local sid = H.new_session(tl, asking({ question = 'Your name?' }))
    local done = H.turn('Threadline ask hi')
    assert.equals('end_turn', done[1].stopReason)
    assert.equals(1, #inputs)
    assert.matches('Your name?', inputs[1], 1, true)
    assert.equals('The user declined to answer.', (answer_told(tl, sid)))
    assert.matches('Thanks.', H.text(tl.buffer()), 1, true)
  end)

  it('a question withdrawn by an interrupt closes its picker and says so', function()
    local notes = H.record_notify()
    -- A picker in a floating window, as telescope or dressing open: it answers only
    -- when its window closes (nil: dismissed).
    local picker, answers = nil, {}
    vim.ui.select = function(items, _, on_choice)
      local buf = vim.api.nvim_create_buf(false, true)
      vim.api.nvim_buf_set_lines(buf, 0, -1, true, items)
      picker = vim.api.nvim_open_win(buf, true, { relative = 'editor', row = 1, col = 1, width = 20, height = 2 })
      vim.api.nvim_create_autocmd('WinClosed', {
        pattern = tostring(picker),
        once = true,
        callback = function()
          table.insert(answers, 'closed')
          on_choice(nil)
        end,
      })
    end
    H.new_session(tl, asking({ question = 'Which colour?', choices = { 'red', 'blue' } }))
    local done = H.record('ThreadlineTurnDone')
    vim.cmd('Threadline ask paint it')
    H.wait(function()
      return picker ~= nil
    end, 'the picker')
    -- The user does not answer; the turn is interrupted (this window or another).
    require('threadline').interrupt()
    H.wait_for(done, 1, 'the interrupted turn')
    assert.equals('cancelled', done[1].stopReason)
    H.wait(function()
      return not vim.api.nvim_win_is_valid(picker)
    end, 'the picker to close')
    assert.same({ 'closed' }, answers)
    local said = vim.tbl_filter(function(n)
      return n.msg:find('Which colour?', 1, true) and n.msg:find('withdrawn', 1, true)
    end, notes)
    assert.equals(1, #said, vim.inspect(notes))
    assert.matches('The question “Which colour?” was withdrawn', H.text(tl.buffer()), 1, true)
  end)
end)
