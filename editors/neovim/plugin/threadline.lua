-- :Threadline new|ask|steer|queue|interrupt|attach|fork|compact|sessions|resume|delete|model|send|restart|search|rename|archive|unarchive|health
if vim.g.loaded_threadline then
  return
end
vim.g.loaded_threadline = true

vim.api.nvim_create_user_command('Threadline', function(cmd)
  local range = cmd.range > 0 and { first = cmd.line1, last = cmd.line2 } or nil
  require('threadline').command(cmd.args, range, cmd.bang)
end, {
  nargs = '+',
  range = true,
  bang = true,
  desc = 'Threadline: chat with the agent sidecar',
  complete = function(lead, line)
    return require('threadline').complete(lead, line)
  end,
})

-- Send the selection (visual mode) or the whole buffer (normal mode) to the chat: it
-- goes with the next prompt.
vim.keymap.set('x', '<Plug>(ThreadlineSend)', ':Threadline send<CR>', { silent = true, desc = 'Threadline: send the selection' })
vim.keymap.set('n', '<Plug>(ThreadlineSend)', '<Cmd>Threadline send<CR>', { silent = true, desc = 'Threadline: send the buffer' })
