-- :Threadline new|ask {text}|interrupt|fork [messageId]|compact [instructions]|sessions|resume {id}
if vim.g.loaded_threadline then
  return
end
vim.g.loaded_threadline = true

vim.api.nvim_create_user_command('Threadline', function(cmd)
  require('threadline').command(cmd.args)
end, {
  nargs = '+',
  desc = 'Threadline: chat with the agent sidecar',
  complete = function(lead, line)
    return require('threadline').complete(lead, line)
  end,
})
