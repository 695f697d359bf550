--- Answers to the sidecar's requests: permission (`vim.ui.select`), the agent's
--- questions (`elicitation/create`: `vim.ui.select` / `vim.ui.input`), editor tools
--- (`tool/call`), and files (`fs/read_text_file`, `fs/write_text_file`) served from
--- loaded buffers so the model sees unsaved text.
---
--- vim.lsp.rpc runs each server request in a coroutine and sends whatever it returns,
--- so a handler that must wait for the user yields and is resumed by the callback.
local config = require('threadline.config')

local M = {}

local function response_error(code, message)
  return nil, vim.lsp.rpc.rpc_response_error(code, message)
end

--- Wait in the request's coroutine for `start(done)` to call `done(value)`.
---@param start fun(done: fun(value: any))
---@return any
local function await(start)
  local co = coroutine.running()
  local result, finished = nil, false
  start(function(value)
    result, finished = value, true
    vim.schedule(function()
      if coroutine.status(co) == 'suspended' then
        coroutine.resume(co)
      end
    end)
  end)
  while not finished do
    coroutine.yield()
  end
  return result
end
M.await = await

--- Pickers open for a request the sidecar may withdraw: the key is
--- `sessionId .. '\0' .. toolCallId` (the asking call). An interrupt, from any window,
--- withdraws a pending question or permission request and ends its tool call; the
--- picker must not stay open for an answer nobody waits for.
---@type table<string, {done: fun(value: any), win: integer?, what: string}>
local open = {}
--- Keys withdrawn while their request is still being handled (a form's later fields,
--- a permission's second chance are not asked then).
---@type table<string, true>
local withdrawn = {}

---@param sid string?
---@param call_id string?
---@return string?
local function key_of(sid, call_id)
  if type(sid) == 'string' and type(call_id) == 'string' then
    return sid .. '\0' .. call_id
  end
end

--- `await(start)` for a picker the sidecar may withdraw: registered under `key` while
--- it is open, with its floating window if it opened one (telescope, dressing,
--- fzf-lua, snacks… do), so that M.withdraw can close it. nil when withdrawn.
---@param key string?
---@param what string what is asked, for the message that says it was withdrawn
---@param start fun(done: fun(value: any))
---@return any
local function ask(key, what, start)
  if not key then
    return await(start)
  end
  if withdrawn[key] then
    return nil
  end
  return await(function(done)
    local entry = { done = done, what = what }
    open[key] = entry
    local before = vim.api.nvim_get_current_win()
    start(function(value)
      if open[key] == entry then -- else withdrawn: the answer is no longer wanted
        open[key] = nil
        done(value)
      end
    end)
    local win = vim.api.nvim_get_current_win()
    if open[key] == entry and win ~= before and vim.api.nvim_win_get_config(win).relative ~= '' then
      entry.win = win
    end
  end)
end

--- The sidecar no longer waits for the request a picker answers (its tool call
--- ended: the turn was interrupted, here or in another window): close the picker
--- and say so. The request is answered (the sidecar ignores a withdrawn one's answer).
---@param sid string
---@param call_id string
function M.withdraw(sid, call_id)
  local key = key_of(sid, call_id)
  local entry = key and open[key]
  if not entry then
    return
  end
  open[key] = nil
  withdrawn[key] = true
  if entry.win and vim.api.nvim_win_is_valid(entry.win) then
    pcall(vim.api.nvim_win_close, entry.win, true)
  elseif vim.api.nvim_get_mode().mode == 'c' then
    -- The default vim.ui.input / vim.ui.select wait at the command line.
    vim.api.nvim_input('<C-c>')
  end
  entry.done(nil)
  local text = ('%s was withdrawn: the turn no longer waits for it (interrupted)'):format(entry.what)
  local c = require('threadline.chat').all()[sid]
  if c then
    c:note('[' .. text .. ']')
  end
  require('threadline.util').notify(text, vim.log.levels.WARN)
end

--- The tools the model may call here: the user's, then the built-in editor tools.
---@return threadline.Tool[]
function M.tools()
  return config.options.tools
end

--- Edits whose diff the permission question showed and the user allowed: path → text.
---@type table<string, string>
M.reviewed = {}

---@param params table ACP RequestPermissionRequest
---@return table
function M.permission(params)
  local call = params.toolCall or {}
  local options = params.options or {}
  local title = call.title or call.toolCallId or 'a tool'
  local detail = require('threadline.util').args_line(call.rawInput, 100)
  local key = key_of(params.sessionId, call.toolCallId)
  local function pick(prefix)
    return ask(key, 'The permission request for ' .. title, function(done)
      vim.ui.select(options, {
        prompt = ('%sThreadline: allow %s%s?'):format(prefix, title, detail ~= '' and (' (' .. detail .. ')') or ''),
        kind = 'threadline.permission',
        format_item = function(o)
          return o.name or o.optionId
        end,
      }, function(item)
        done(item)
      end)
    end)
  end
  -- An edit is shown as a diff in a split below while the question is open.
  local diff = require('threadline.work').unified(call.content)
  local review = diff ~= '' and require('threadline.work').show('review/' .. (call.toolCallId or 'edit'), diff) or nil
  local choice = pick('')
  if type(choice) ~= 'table' and not (key and withdrawn[key]) then
    -- A stray key dismisses the picker: ask once more before refusing the tool.
    choice = pick('(dismissed: dismiss again to refuse) ')
  end
  if review and vim.api.nvim_win_is_valid(review) and #vim.api.nvim_list_wins() > 1 then
    vim.api.nvim_win_close(review, true)
  end
  if key then
    withdrawn[key] = nil
  end
  if type(choice) ~= 'table' or not choice.optionId then
    return { outcome = { outcome = 'cancelled' } }
  end
  if review and tostring(choice.kind or choice.optionId):match('^allow') then
    -- The diff was reviewed here: the write that follows is not asked about again.
    for _, item in ipairs(call.content or {}) do
      if type(item) == 'table' and item.type == 'diff' then
        M.reviewed[item.path] = item.newText
      end
    end
  end
  return { outcome = { outcome = 'selected', optionId = choice.optionId } }
end

--- The names of a requested schema's properties, in the order to ask them: the
--- required ones as listed, then the rest by name.
---@param schema table
---@return string[]
local function field_names(schema)
  local props = type(schema.properties) == 'table' and schema.properties or {}
  local names, seen = {}, {}
  for _, name in ipairs(type(schema.required) == 'table' and schema.required or {}) do
    if props[name] and not seen[name] then
      table.insert(names, name)
      seen[name] = true
    end
  end
  local rest = vim.tbl_filter(function(name)
    return not seen[name]
  end, vim.tbl_keys(props))
  table.sort(rest)
  return vim.list_extend(names, rest)
end

--- Ask for one property's value: a choice (`enum`, a boolean) with vim.ui.select,
--- anything else with vim.ui.input (a number is asked again until it is one). nil:
--- the user dismissed the question.
---@param prop table ACP property schema
---@param prompt string
---@param key string? the request's key (M.withdraw)
---@param what string
---@return any
local function ask_value(prop, prompt, key, what)
  local kind = 'threadline.elicitation'
  local choices = type(prop.enum) == 'table' and prop.enum
    or (type(prop.items) == 'table' and type(prop.items.enum) == 'table' and prop.items.enum)
    or nil
  if choices or prop.type == 'boolean' then
    local items = choices or { 'yes', 'no' }
    local picked = ask(key, what, function(done)
      vim.ui.select(items, { prompt = prompt, kind = kind }, function(item)
        done(item)
      end)
    end)
    if picked == nil then
      return nil
    elseif prop.type == 'boolean' then
      return picked == 'yes'
    elseif prop.type == 'array' then
      return { picked }
    end
    return picked
  end
  local again = ''
  while true do
    local text = ask(key, what, function(done)
      vim.ui.input({ prompt = again .. prompt, default = prop.default and tostring(prop.default) or nil }, function(t)
        done(t)
      end)
    end)
    if text == nil then
      return nil
    end
    if prop.type ~= 'number' and prop.type ~= 'integer' then
      return text
    end
    local n = tonumber(vim.trim(text))
    if n and (prop.type == 'number' or n == math.floor(n)) then
      return n
    end
    again = ('(%s is not %s) '):format(vim.trim(text), prop.type == 'integer' and 'a whole number' or 'a number')
  end
end

--- `elicitation/create` (the agent's `ask_user`): each field of the form in turn, the
--- question in its prompt; dismissing any of them declines the whole question.
---@param params table `{sessionId, toolCallId?, mode, message, requestedSchema}`
---@return table `{action, content?}`
function M.elicitation(params)
  local schema = type(params.requestedSchema) == 'table' and params.requestedSchema or {}
  local props = type(schema.properties) == 'table' and schema.properties or {}
  local names = field_names(schema)
  local message = tostring(params.message or 'Threadline asks')
  local content = {}
  local key = key_of(params.sessionId, params.toolCallId)
  local what = ('The question “%s”'):format(message)
  for _, name in ipairs(names) do
    local prop = props[name]
    local prompt = message .. ': '
    if #names > 1 then
      local label = prop.title or name
      prompt = ('%s\n%s%s: '):format(message, label, prop.description and (' (' .. prop.description .. ')') or '')
    end
    local value = ask_value(prop, prompt, key, what)
    if value == nil then
      if key and withdrawn[key] then
        withdrawn[key] = nil
        return { action = 'cancel' }
      end
      return { action = 'decline' }
    end
    content[name] = value
  end
  return { action = 'accept', content = next(content) and content or vim.empty_dict() }
end

---@param params table `{sessionId, toolCallId, name, arguments}`
function M.tool_call(params)
  for _, tool in ipairs(M.tools()) do
    if tool.name == params.name then
      local ok, result = pcall(tool.handler, params.arguments or {}, {
        session_id = params.sessionId,
        tool_call_id = params.toolCallId,
      })
      if not ok then
        return { content = { { type = 'text', text = tostring(result) } }, isError = true }
      end
      if type(result) == 'string' then
        result = { content = { { type = 'text', text = result } } }
      end
      return result
    end
  end
  return response_error(vim.lsp.protocol.ErrorCodes.MethodNotFound, 'no tool ' .. tostring(params.name))
end

---@param path string
---@return integer? buf a loaded buffer showing that file
local function loaded_buffer(path)
  local want = vim.fs.normalize(vim.uv.fs_realpath(path) or path)
  for _, buf in ipairs(vim.api.nvim_list_bufs()) do
    if vim.api.nvim_buf_is_loaded(buf) and vim.bo[buf].buftype == '' then
      local name = vim.api.nvim_buf_get_name(buf)
      if name ~= '' and vim.fs.normalize(vim.uv.fs_realpath(name) or name) == want then
        return buf
      end
    end
  end
end
M.loaded_buffer = loaded_buffer

---@param params table `{sessionId, path, line?, limit?}` (line is 1-based)
function M.read_text_file(params)
  local lines
  local buf = loaded_buffer(params.path)
  if buf then
    lines = vim.api.nvim_buf_get_lines(buf, 0, -1, true)
    if vim.bo[buf].eol or vim.bo[buf].fixeol then
      table.insert(lines, '')
    end
  else
    local f = io.open(params.path, 'rb')
    if not f then
      return response_error(vim.lsp.protocol.ErrorCodes.RequestFailed, 'cannot read ' .. params.path)
    end
    local data = f:read('*a')
    f:close()
    lines = vim.split(data, '\n', { plain = true })
  end
  local first = math.max(1, tonumber(params.line) or 1)
  local last = #lines
  if tonumber(params.limit) then
    last = math.min(last, first + tonumber(params.limit) - 1)
  end
  return { content = table.concat(vim.list_slice(lines, first, last), '\n') }
end

---@param path string
---@return string[] lines the file holds now (a loaded buffer's text), {} if none
local function current_lines(path)
  local buf = loaded_buffer(path)
  if buf then
    return vim.api.nvim_buf_get_lines(buf, 0, -1, true)
  end
  local f = io.open(path, 'rb')
  if not f then
    return {}
  end
  local data = f:read('*a')
  f:close()
  local lines = vim.split(data, '\n', { plain = true })
  if lines[#lines] == '' then
    table.remove(lines)
  end
  return lines
end

---@param params table `{sessionId, path, content}`
function M.write_text_file(params)
  local lines = vim.split(params.content, '\n', { plain = true })
  local reviewed = M.reviewed[params.path] == params.content
  M.reviewed[params.path] = nil
  if config.options.diff and not reviewed then
    local proposed = vim.list_slice(lines, 1, lines[#lines] == '' and #lines - 1 or #lines)
    local accepted = await(function(done)
      require('threadline.review').ask(params.path, current_lines(params.path), proposed, done)
    end)
    if not accepted then
      return response_error(
        vim.lsp.protocol.ErrorCodes.RequestFailed,
        'the user rejected the edit to ' .. params.path .. ' (nothing was written)'
      )
    end
  end
  local buf = loaded_buffer(params.path)
  if buf then
    local eol = lines[#lines] == ''
    if eol then
      table.remove(lines)
    end
    vim.api.nvim_buf_set_lines(buf, 0, -1, true, lines)
    vim.bo[buf].eol = eol
    vim.api.nvim_buf_call(buf, function()
      vim.cmd('silent noautocmd write')
    end)
    return vim.empty_dict()
  end
  vim.fn.mkdir(vim.fs.dirname(params.path), 'p')
  local f, err = io.open(params.path, 'wb')
  if not f then
    return response_error(vim.lsp.protocol.ErrorCodes.RequestFailed, tostring(err))
  end
  f:write(params.content)
  f:close()
  return vim.empty_dict()
end

---@param method string
---@param params table
function M.handle(method, params)
  if method == 'session/request_permission' then
    return M.permission(params)
  elseif method == 'elicitation/create' then
    return M.elicitation(params)
  elseif method == 'tool/call' then
    return M.tool_call(params)
  elseif method == 'fs/read_text_file' and config.options.fs then
    return M.read_text_file(params)
  elseif method == 'fs/write_text_file' and config.options.fs then
    return M.write_text_file(params)
  end
  return response_error(vim.lsp.protocol.ErrorCodes.MethodNotFound, 'threadline.nvim has no ' .. method)
end

return M
