-- An editor tool that needs approval: the sidecar asks (session/request_permission),
-- vim.ui.select answers, and the tool runs only when allowed.
local H = require('helpers')

local DEPLOY = H.scripted(
  { { tool_call = { name = 'deploy', arguments = { to = 'prod' }, id = 'call_deploy' } } },
  { { text = 'Done.' } }
)

describe('threadline permission prompts', function()
  local tl, ran
  before_each(function()
    ran = {}
    tl = H.start({
      tools = {
        {
          name = 'deploy',
          description = 'Deploy the app',
          input_schema = { type = 'object', properties = { to = { type = 'string' } } },
          needs_approval = true,
          handler = function(args)
            table.insert(ran, args)
            return { content = { { type = 'text', text = 'deployed to ' .. args.to } } }
          end,
        },
      },
    })
  end)
  after_each(function()
    H.stop()
  end)

  local function run_with_choice(kind)
    local asked = H.answer_select(H.option(kind))
    H.new_session(tl, DEPLOY)
    local done = H.turn('Threadline ask ship it', 'the turn')
    return asked, done[1]
  end

  it('allow_once runs the tool', function()
    local asked, done = run_with_choice('allow_once')
    assert.equals('end_turn', done.stopReason)
    assert.equals(1, #asked)
    assert.matches('allow deploy', asked[1].opts.prompt, 1, true)
    local kinds = vim.tbl_map(function(o)
      return o.kind
    end, asked[1].items)
    assert.same({ 'allow_once', 'allow_always', 'reject_once', 'reject_always' }, kinds)
    assert.same({ { to = 'prod' } }, ran)
    local buffer = H.text(tl.buffer())
    assert.matches('✓ deploy to=prod (completed) — deployed to prod', buffer, 1, true)
    local _, lines = buffer:gsub('deploy to=prod %(', '')
    assert.equals(1, lines, 'one line per tool call, updated in place')
    assert.matches('Done.', buffer, 1, true)
  end)

  it('reject_once keeps the tool from running', function()
    local asked, done = run_with_choice('reject_once')
    assert.equals('end_turn', done.stopReason)
    assert.equals(1, #asked)
    assert.same({}, ran)
    assert.matches('✗ deploy to=prod (failed)', H.text(tl.buffer()), 1, true)
  end)

  it('a picker dismissed twice answers cancelled: the tool does not run', function()
    -- A stray key dismisses the picker; it comes back once before the tool is refused.
    local asked, done = run_with_choice('none of them')
    assert.equals(2, #asked)
    assert.matches('(dismissed', asked[2].opts.prompt, 1, true)
    assert.equals('end_turn', done.stopReason)
    assert.same({}, ran)
  end)
end)
