-- `:Threadline attach {image}`: an image file goes with the next prompt as an ACP
-- `image` block; the chat shows it, and the sidecar stores it.
local H = require('helpers')

-- A 1×1 PNG.
local DOT = vim.base64.decode(
  'iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg=='
)

describe('threadline images', function()
  local tl, home
  before_each(function()
    tl, home = H.start()
  end)
  after_each(H.stop)

  it(':Threadline attach adds an image block to the next prompt', function()
    local path = home .. '/dot.png'
    local f = assert(io.open(path, 'wb'))
    f:write(DOT)
    f:close()
    local sid = H.new_session(tl, 'scripted:echo')
    vim.cmd('Threadline attach ' .. vim.fn.fnameescape(path))
    assert.matches('[attached 🖼 dot.png: it goes with your next prompt]', H.text(tl.buffer(sid)), 1, true)
    local done = H.turn(function()
      tl.ask('what is this', sid)
    end)
    assert.equals('end_turn', done[1].stopReason)
    assert.matches('## You\n\nwhat is this\n> 📎 🖼 dot.png', H.text(tl.buffer(sid)), 1, true)
    local history = H.history(tl, sid)
    local image
    for _, b in ipairs(history[1].content) do
      if b.type == 'image' then
        image = b
      end
    end
    assert.is_not_nil(image, vim.inspect(history[1]))
    assert.equals('image/png', image.mimeType)
    assert.equals(DOT, vim.base64.decode(image.data))
    assert.equals(1, image._meta.threadline.image.width)
    -- A resumed buffer shows it from the history.
    require('threadline.chat').drop(sid)
    local resumed = H.record('ThreadlineResumed')
    tl.resume(sid)
    H.wait_for(resumed, 1, 'resume')
    assert.matches('## You\n\nwhat is this\n> 📎 🖼', H.text(tl.buffer(sid)), 1, true)
  end)

  it('a file that is not an image is refused in words, and nothing is attached', function()
    local messages = H.record_notify()
    local sid = H.new_session(tl, 'scripted:echo')
    vim.fn.writefile({ 'just text' }, home .. '/notes.txt')
    vim.cmd('Threadline attach ' .. vim.fn.fnameescape(home .. '/notes.txt'))
    assert.matches('is not a PNG, JPEG, GIF or WebP image', messages[#messages].msg, 1, true)
    assert.is_nil(tl.state.pending[sid])
  end)
end)
