--- `:Threadline {sub} [args]`: each subcommand calls the API in `threadline`.
--- In a chat buffer a subcommand acts on that buffer's session.
local util = require('threadline.util')

local M = {}

---@param range? {first: integer, last: integer}
---@param question string
local function send(question, range)
  local tl = require('threadline')
  local context = require('threadline.context')
  local editor_tools = require('threadline.editor_tools')
  local buf = vim.api.nvim_get_current_buf()
  if vim.b[buf].threadline_session ~= nil then
    buf = editor_tools.editor_buffer() or buf
  end
  if vim.b[buf].threadline_session ~= nil then
    util.notify('send: no file buffer to send', vim.log.levels.WARN)
    return
  end
  local block = range and context.from_buffer(buf, range.first, range.last) or context.from_buffer(buf)
  tl.attach({ block }, nil, question)
end

---@type table<string, fun(arg: string, range?: {first: integer, last: integer})>
M.subcommands = {
  new = function(arg)
    require('threadline').new(arg ~= '' and arg or nil)
  end,
  ask = function(arg)
    require('threadline').ask(arg)
  end,
  interrupt = function()
    require('threadline').interrupt()
  end,
  fork = function(arg)
    require('threadline').fork(arg)
  end,
  compact = function(arg)
    require('threadline').compact(arg)
  end,
  sessions = function()
    require('threadline').sessions()
  end,
  resume = function(arg)
    require('threadline').resume(arg)
  end,
  delete = function(arg)
    require('threadline').delete(arg ~= '' and arg or nil)
  end,
  model = function(arg)
    require('threadline').set_model(arg)
  end,
  restart = function()
    require('threadline').restart()
  end,
  send = send,
  prompt = function()
    require('threadline').compose()
    vim.cmd('startinsert')
  end,
  health = function()
    vim.cmd('checkhealth threadline')
  end,
}

local USAGE = 'usage: :Threadline new [model] | ask {text} | interrupt | fork [messageId] | compact [text] | '
  .. 'sessions | resume {id} | delete [id] | model [id] | [range]send [question] | prompt | restart | health'

---@param line string
---@param range? {first: integer, last: integer}
function M.run(line, range)
  local sub, arg = line:match('^%s*(%S+)%s*(.-)%s*$')
  local fn = M.subcommands[sub or '']
  if not fn then
    util.notify(USAGE, vim.log.levels.ERROR)
    return
  end
  fn(arg, range)
end

---@param lead string
---@param line string
---@return string[]
function M.complete(lead, line)
  local function starting(list)
    local out = vim.tbl_filter(function(s)
      return vim.startswith(s, lead)
    end, list)
    table.sort(out)
    return out
  end
  -- What comes before the word being completed: `Threadline` (maybe with a range)
  -- and the subcommand, if there is one yet.
  local before = vim.split(vim.trim(line:sub(1, #line - #lead)), '%s+')
  if #before == 1 then
    return starting(vim.tbl_keys(M.subcommands))
  end
  if #before > 2 then
    return {}
  end
  local sub = before[2]
  if sub == 'resume' or sub == 'delete' then
    return starting(require('threadline').session_ids())
  elseif sub == 'new' or sub == 'model' then
    return starting(require('threadline').models())
  end
  return {}
end

return M
