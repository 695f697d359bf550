-- Runs busted inside `nvim --headless -l`, so specs drive a real Neovim (its event
-- loop, buffers, vim.lsp.rpc) against a real sidecar. Usage: see run.sh.
local here = vim.fs.dirname(vim.fs.normalize(vim.fn.fnamemodify(debug.getinfo(1, 'S').source:sub(2), ':p')))
local root = vim.fs.dirname(here) -- editors/neovim

vim.opt.runtimepath:prepend(root)
vim.opt.swapfile = false
vim.opt.shadafile = 'NONE'
package.path = table.concat({
  root .. '/lua/?.lua',
  root .. '/lua/?/init.lua',
  here .. '/?.lua',
  (os.getenv('BUSTED_LUA_DIR') or '/usr/share/lua/5.1') .. '/?.lua',
  (os.getenv('BUSTED_LUA_DIR') or '/usr/share/lua/5.1') .. '/?/init.lua',
  package.path,
}, ';')
package.cpath = (os.getenv('BUSTED_LUA_CDIR') or '/usr/lib/x86_64-linux-gnu/lua/5.1') .. '/?.so;' .. package.cpath

vim.cmd('runtime plugin/threadline.lua')
require('busted.runner')({ standalone = false })
