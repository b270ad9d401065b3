-- :FuseRun, :FuseTrain, :FuseExplain, :FusePlot, :FuseGraph and :FuseWhy: the
-- server's `fuse.run`, `fuse.train`, `fuse.explain`, `fuse.plot`, `fuse.graph` and
-- `fuse.why` commands (workspace/executeCommand), shown in a scratch buffer.
local M = {}

--- The fuse client attached to `bufnr` (default: current buffer).
---@param bufnr integer?
---@return vim.lsp.Client?
function M.client(bufnr)
  bufnr = (bufnr == nil or bufnr == 0) and vim.api.nvim_get_current_buf() or bufnr
  for _, client in ipairs(vim.lsp.get_clients({ bufnr = bufnr, name = 'fuse' })) do
    return client
  end
  -- a differently named config that runs fuse-lsp with its commands
  for _, client in ipairs(vim.lsp.get_clients({ bufnr = bufnr })) do
    local provider = client.server_capabilities and client.server_capabilities.executeCommandProvider
    if provider and vim.tbl_contains(provider.commands or {}, 'fuse.run') then
      return client
    end
  end
end

local function fmt_number(v)
  if v == nil or v == vim.NIL then
    return '-'
  end
  if type(v) ~= 'number' then
    return tostring(v)
  end
  if v == math.floor(v) and math.abs(v) < 1e15 then
    return string.format('%d', v)
  end
  return string.format('%.6g', v)
end

local function fmt_shape(shape)
  if type(shape) ~= 'table' then
    return '?'
  end
  local parts = vim.tbl_map(fmt_number, shape)
  if #parts == 1 then
    return '(' .. parts[1] .. ',)'
  end
  return '(' .. table.concat(parts, ', ') .. ')'
end

local function fmt_preview(summary)
  local parts = vim.tbl_map(fmt_number, summary.preview or {})
  local more = summary.truncated and ', …' or ''
  return '[' .. table.concat(parts, ', ') .. more .. ']'
end

local function array_lines(lines, summary)
  lines[#lines + 1] = string.format('- shape `%s`, dtype `%s`, size %s', fmt_shape(summary.shape),
    tostring(summary.dtype or '?'), fmt_number(summary.size))
  local stats = string.format('- min %s, max %s, mean %s, std %s', fmt_number(summary.min),
    fmt_number(summary.max), fmt_number(summary.mean), fmt_number(summary.std))
  if (tonumber(summary.nonfinite) or 0) > 0 then
    stats = stats .. string.format(' (%s non-finite values)', fmt_number(summary.nonfinite))
  end
  lines[#lines + 1] = stats
  lines[#lines + 1] = '- preview `' .. fmt_preview(summary) .. '`'
end

--- A value as a Fuse program writes it (fuse_lang/io/relation_tuples.py
--- `value_text`): a capitalised name as is (`Alice`), any other string quoted
--- (`"ann"`), a number as a number.
function M.value_text(v)
  if type(v) == 'string' then
    if v:match('^[A-Z][A-Za-z0-9_]*$') then
      return v
    end
    return '"' .. v:gsub('\\', '\\\\'):gsub('"', '\\"') .. '"'
  end
  if type(v) == 'number' and v == math.floor(v) and math.abs(v) < 1e15 then
    return string.format('%d', v)
  end
  if type(v) == 'number' then
    local text = string.format('%.15g', v)
    return tonumber(text) == v and text or string.format('%.17g', v)
  end
  return tostring(v)
end

--- A relation among the outputs (`relation: true`): its tuple count, then its
--- tuples one a line as a program writes them (the server's `tuple_texts` when
--- it sends them), and `... and K more` when it has more than were sent.
local function relation_lines(lines, summary)
  local tuples = type(summary.tuples) == 'table' and summary.tuples or {}
  local count = tonumber(summary.count) or #tuples
  if type(summary.shape) ~= 'table' or #summary.shape == 0 then
    lines[#lines + 1] = count > 0 and 'yes' or 'no'
    return
  end
  lines[#lines + 1] = string.format('%d tuple%s', count, count == 1 and '' or 's')
  local texts = type(summary.tuple_texts) == 'table' and summary.tuple_texts or {}
  for i, t in ipairs(tuples) do
    local text = texts[i]
    if type(text) ~= 'string' then
      text = '(' .. table.concat(vim.tbl_map(M.value_text, t), ', ') .. ')'
    end
    lines[#lines + 1] = '- ' .. text
  end
  if count > #tuples then
    lines[#lines + 1] = string.format('- ... and %d more', count - #tuples)
  end
end

--- A readable summary (markdown) of a `fuse.run` result.
---@param result table
---@return string[]
function M.format_run(result)
  local lines = {}
  if type(result) ~= 'table' then
    return { '# Fuse run', '', 'No result.' }
  end
  if result.ok == false then
    lines[#lines + 1] = result.cancelled and '# Fuse run cancelled' or '# Fuse run failed'
    lines[#lines + 1] = ''
    for _, l in ipairs(vim.split(tostring(result.error or result.message or 'cancelled'), '\n')) do
      lines[#lines + 1] = l
    end
    return lines
  end
  local took = type(result.elapsed_ms) == 'number' and string.format(' in %s ms', fmt_number(result.elapsed_ms)) or ''
  lines[#lines + 1] = string.format('# Ran %s on %s (%s)%s', tostring(result.program or 'program'),
    tostring(result.device or '?'), tostring(result.backend or '?'), took)
  lines[#lines + 1] = ''
  if result.target ~= nil and result.target ~= vim.NIL then
    local target = result.target
    if type(target) == 'table' then
      target = table.concat(vim.tbl_map(tostring, target), ', ')
    end
    lines[#lines + 1] = 'Target: `' .. tostring(target) .. '`'
    lines[#lines + 1] = ''
  end
  local outputs = type(result.outputs) == 'table' and result.outputs or {}
  local names = vim.tbl_keys(outputs)
  table.sort(names)
  if #names > 0 then
    lines[#lines + 1] = '## Outputs'
    for _, name in ipairs(names) do
      lines[#lines + 1] = ''
      lines[#lines + 1] = '### ' .. name
      if outputs[name].relation == true and type(outputs[name].tuples) == 'table' then
        relation_lines(lines, outputs[name])
      else
        array_lines(lines, outputs[name])
      end
    end
    lines[#lines + 1] = ''
  end
  local queries = type(result.queries) == 'table' and result.queries or {}
  if #queries > 0 then
    lines[#lines + 1] = '## Queries'
    for _, q in ipairs(queries) do
      lines[#lines + 1] = ''
      lines[#lines + 1] = string.format('### `%s` %s', tostring(q.text), tostring(q.answer or ''))
      if type(q.tuples) == 'table' then
        local free = type(q.free) == 'table' and q.free or {}
        for _, t in ipairs(q.tuples) do
          local cells = {}
          for i, v in ipairs(t) do
            cells[#cells + 1] = (free[i] and (free[i] .. ' = ') or '') .. tostring(v)
          end
          lines[#lines + 1] = '- ' .. (#cells > 0 and table.concat(cells, ', ') or 'yes')
        end
      else
        array_lines(lines, q)
      end
    end
    lines[#lines + 1] = ''
  end
  if type(result.sinks) == 'table' and #result.sinks > 0 then
    lines[#lines + 1] = '## Files written'
    for _, s in ipairs(result.sinks) do
      lines[#lines + 1] = '- ' .. tostring(s)
    end
    lines[#lines + 1] = ''
  end
  -- what a run left out for an error: a target's cone, or the whole document run
  -- past errors that none of its exports, queries and sinks needs
  local broken = {}
  for _, n in ipairs(type(result.not_run) == 'table' and result.not_run or {}) do
    if n.reason ~= 'not needed by the target' then
      broken[#broken + 1] = string.format('- `%s` (line %s): %s', tostring(n.what),
        tostring(n.line), tostring(n.reason))
    end
  end
  if #broken > 0 then
    lines[#lines + 1] = '## Not run'
    lines[#lines + 1] = ''
    vim.list_extend(lines, broken)
    lines[#lines + 1] = ''
  end
  -- the trace (runTrace) and Monte Carlo standard errors: the server's `report`,
  -- lines of tables as `fuse run` prints them
  local report = type(result.report) == 'table' and result.report or {}
  if #report > 0 then
    lines[#lines + 1] = '## Trace and estimates'
    lines[#lines + 1] = ''
    lines[#lines + 1] = '```'
    for _, line in ipairs(report) do
      lines[#lines + 1] = tostring(line)
    end
    lines[#lines + 1] = '```'
    lines[#lines + 1] = ''
  end
  if #names == 0 and #queries == 0 then
    lines[#lines + 1] = 'Nothing to show (no export, query or target).'
  end
  while lines[#lines] == '' do
    lines[#lines] = nil
  end
  return lines
end

--- Show `lines` in a scratch buffer named `name`, reusing it (and its window).
---@return integer bufnr
function M.show(name, lines, filetype)
  local buf = -1
  for _, b in ipairs(vim.api.nvim_list_bufs()) do
    if vim.api.nvim_buf_is_valid(b) and vim.api.nvim_buf_get_name(b) == name then
      buf = b
      break
    end
  end
  if buf == -1 then
    buf = vim.api.nvim_create_buf(false, true)
    vim.api.nvim_buf_set_name(buf, name)
    vim.bo[buf].buftype = 'nofile'
    vim.bo[buf].bufhidden = 'hide'
    vim.bo[buf].swapfile = false
  end
  vim.bo[buf].modifiable = true
  vim.api.nvim_buf_set_lines(buf, 0, -1, false, lines)
  vim.bo[buf].modifiable = false
  vim.bo[buf].modified = false
  vim.bo[buf].filetype = filetype or 'markdown'
  local win = vim.fn.bufwinid(buf)
  if win == -1 then
    local current = vim.api.nvim_get_current_win()
    vim.cmd('botright split')
    vim.api.nvim_win_set_buf(0, buf)
    vim.wo.wrap = true
    vim.api.nvim_set_current_win(current)
  end
  return buf
end

local function fire(pattern, data)
  vim.api.nvim_exec_autocmds('User', { pattern = pattern, modeline = false, data = data })
end

local function execute(bufnr, command, arguments, on_result)
  local client = M.client(bufnr)
  if not client then
    vim.notify('Fuse: no fuse language server is attached to this buffer '
      .. '(is `vim.lsp.enable("fuse")` called and `fuse-lsp` installed?)', vim.log.levels.ERROR)
    return false
  end
  local params = { command = command, arguments = arguments }
  local handler = function(err, result)
    on_result(err, result)
  end
  if vim.fn.has('nvim-0.11') == 1 then
    client:request('workspace/executeCommand', params, handler, bufnr)
  else -- Neovim 0.10: client.request without self
    client.request('workspace/executeCommand', params, handler, bufnr)
  end
  return true
end

--- The program buffer to act on: `bufnr`, or, from a result buffer, its program.
local function program_buffer(bufnr)
  bufnr = (bufnr == nil or bufnr == 0) and vim.api.nvim_get_current_buf() or bufnr
  local source = vim.b[bufnr].fuse_source
  if source and vim.api.nvim_buf_is_valid(source) then
    return source
  end
  return bufnr
end

local function short_name(bufnr)
  local name = vim.api.nvim_buf_get_name(bufnr)
  return name ~= '' and vim.fn.fnamemodify(name, ':t') or ('buffer ' .. bufnr)
end

--- Parse `:FuseRun` arguments: `backend=B` and `device=D` words, the rest is
--- the target (a tensor's name or a query as written, e.g. `Ancestor(Alice, x)?`).
---@param args string
---@return table options for fuse.run
function M.parse_run_args(args)
  local opts = {}
  local rest = {}
  for word in vim.gsplit(vim.trim(args or ''), '%s+', { trimempty = true }) do
    local key, value = word:match('^(%a+)=(%S+)$')
    if key == 'backend' or key == 'device' then
      opts[key] = value
    else
      rest[#rest + 1] = word
    end
  end
  if #rest > 0 then
    opts.target = table.concat(rest, ' ')
  end
  return opts
end

--- Run the program in `bufnr` (fuse.run); the result goes to a scratch buffer.
---@param opts {target?: string|string[], backend?: string, device?: string, bufnr?: integer}
function M.run(opts)
  opts = opts or {}
  local bufnr = program_buffer(opts.bufnr)
  local request = {}
  for _, key in ipairs({ 'backend', 'device', 'target' }) do
    if opts[key] ~= nil and opts[key] ~= '' then
      request[key] = opts[key]
    end
  end
  local name = short_name(bufnr)
  if M.client(bufnr) then -- else execute says that no server is attached, not that it runs
    vim.notify('Fuse: running ' .. name .. ' ...', vim.log.levels.INFO)
  end
  return execute(bufnr, 'fuse.run', { vim.uri_from_bufnr(bufnr), request }, function(err, result)
    local lines
    if err then
      lines = { '# Fuse run failed', '', tostring(err.message or vim.inspect(err)) }
    else
      lines = M.format_run(result)
    end
    local out = M.show('fuse://run/' .. name, lines, 'markdown')
    vim.b[out].fuse_source = bufnr
    vim.b[out].fuse_result = err and { ok = false, error = err.message } or result
    fire('FuseRunDone', { buf = out, source = bufnr, result = result, err = err })
  end)
end

--- Explain the program in `bufnr` (fuse.explain): its plan, in markdown.
---@param opts {bufnr?: integer}?
function M.explain(opts)
  opts = opts or {}
  local bufnr = program_buffer(opts.bufnr)
  local name = short_name(bufnr)
  return execute(bufnr, 'fuse.explain', { vim.uri_from_bufnr(bufnr) }, function(err, result)
    local text
    if err then
      text = '# Fuse explain failed\n\n' .. tostring(err.message or vim.inspect(err))
    elseif type(result) == 'table' then
      text = tostring(result.value or '')
    else
      text = tostring(result or '')
    end
    local out = M.show('fuse://explain/' .. name, vim.split(text, '\n', { plain = true }), 'markdown')
    vim.b[out].fuse_source = bufnr
    fire('FuseExplainDone', { buf = out, source = bufnr, err = err })
  end)
end

--- Where a line of a why's text points: {line = N} in the program, or
--- {file = F, line = N} for a row of a relation file; nil when it cites nothing.
function M.why_place(text)
  local file_line, file = text:match('row (%d+) of (.+)$')
  if file_line then
    return { file = file, line = tonumber(file_line) }
  end
  -- a statement of an imported file: `by lib/l.fuse:3: ...`, `fact, lib/l.fuse:2`
  local imported, at = text:match('by ([^%s]+%.fuse):(%d+):')
  if not imported then
    imported, at = text:match('fact, ([^%s]+%.fuse):(%d+)$')
  end
  if not imported then
    imported, at = text:match('^%s*([^%s]+%.fuse):(%d+):')
  end
  if imported then
    return { file = imported, line = tonumber(at) }
  end
  local line = text:match('by line (%d+):') or text:match('fact, line (%d+)')
    or text:match('^%s*line (%d+):')
  if line then
    return { line = tonumber(line) }
  end
end

--- Jump from the why buffer's cursor line to the line it cites.
function M.why_jump()
  local place = M.why_place(vim.api.nvim_get_current_line())
  local source = vim.b.fuse_source
  if not place or not source or not vim.api.nvim_buf_is_valid(source) then
    return
  end
  if place.file then
    local base = vim.fs.dirname(vim.api.nvim_buf_get_name(source))
    local path = place.file:sub(1, 1) == '/' and place.file or (base .. '/' .. place.file)
    local win = vim.fn.bufwinid(source)
    if win ~= -1 then
      vim.api.nvim_set_current_win(win)
    end
    vim.cmd('edit ' .. vim.fn.fnameescape(path))
    vim.api.nvim_win_set_cursor(0, { math.max(place.line, 1), 0 })
    return
  end
  local win = vim.fn.bufwinid(source)
  if win == -1 then
    vim.cmd('split')
    vim.api.nvim_win_set_buf(0, source)
    win = vim.api.nvim_get_current_win()
  end
  vim.api.nvim_set_current_win(win)
  local count = vim.api.nvim_buf_line_count(source)
  vim.api.nvim_win_set_cursor(win, { math.min(math.max(place.line, 1), count), 0 })
end

--- Explain one answer of the program in `bufnr` (fuse.why): a tuple's derivation,
--- why it does not hold, or an element's terms, as a tree in `fuse://why/<file>`;
--- <CR> on a line jumps to the program line (or file row) it cites.
---@param opts {target: string, bufnr?: integer, limit?: integer, top?: integer}
function M.why(opts)
  opts = opts or {}
  local target = vim.trim(opts.target or '')
  if target == '' then
    vim.notify('Fuse: :FuseWhy takes a tuple or an element: :FuseWhy Ancestor(Alice, Eve)',
      vim.log.levels.ERROR)
    return false
  end
  local bufnr = program_buffer(opts.bufnr)
  local name = short_name(bufnr)
  local request = { target = target, limit = opts.limit, top = opts.top }
  return execute(bufnr, 'fuse.why', { vim.uri_from_bufnr(bufnr), request }, function(err, result)
    local text
    if err then
      text = 'Fuse why failed: ' .. tostring(err.message or vim.inspect(err))
    elseif type(result) == 'table' and result.ok then
      text = tostring(result.text or '')
    else
      text = 'Fuse why failed: ' .. tostring(type(result) == 'table' and result.error or result)
    end
    local out = M.show('fuse://why/' .. name, vim.split(text, '\n', { plain = true }), 'text')
    vim.b[out].fuse_source = bufnr
    vim.keymap.set('n', '<CR>', M.why_jump, { buffer = out, desc = 'Fuse: go to the cited line' })
    fire('FuseWhyDone', { buf = out, source = bufnr, result = result, err = err })
  end)
end

--- Open each written picture with the system's viewer (vim.ui.open).
local function open_pictures(paths)
  for _, path in ipairs(paths) do
    vim.ui.open(path)
  end
end

--- Pictures of the last run of the program in `bufnr` (fuse.plot): written by the
--- server, then opened.  `opts.tensor` draws one value only.
---@param opts {tensor?: string, format?: string, bufnr?: integer}?
function M.plot(opts)
  opts = opts or {}
  local bufnr = program_buffer(opts.bufnr)
  local request = {}
  for _, key in ipairs({ 'tensor', 'format' }) do
    if opts[key] ~= nil and opts[key] ~= '' then
      request[key] = opts[key]
    end
  end
  return execute(bufnr, 'fuse.plot', { vim.uri_from_bufnr(bufnr), request }, function(err, result)
    local message = err and tostring(err.message or vim.inspect(err))
      or (result and not result.ok and result.error)
    if message then
      vim.notify('Fuse: ' .. message, vim.log.levels.ERROR)
    else
      if result.stale then
        vim.notify('Fuse: the program changed since its last run; these are that run\'s values',
          vim.log.levels.WARN)
      end
      open_pictures(result.pictures)
    end
    fire('FusePlotDone', { source = bufnr, result = result, err = err })
  end)
end

--- The program in `bufnr` as a picture (fuse.graph): its dataflow, then opened.
---@param opts {format?: string, bufnr?: integer}?
function M.graph(opts)
  opts = opts or {}
  local bufnr = program_buffer(opts.bufnr)
  local request = { format = opts.format }
  return execute(bufnr, 'fuse.graph', { vim.uri_from_bufnr(bufnr), request }, function(err, result)
    local message = err and tostring(err.message or vim.inspect(err))
      or (result and not result.ok and result.error)
    if message then
      vim.notify('Fuse: ' .. message, vim.log.levels.ERROR)
    else
      open_pictures({ result.path })
    end
    fire('FuseGraphDone', { source = bufnr, result = result, err = err })
  end)
end

--- A readable summary (markdown) of a `fuse.train` result: the final loss,
--- the loss curve and its table (the server's `report`), the params.
---@param result table
---@return string[]
function M.format_train(result)
  if type(result) ~= 'table' then
    return { '# Fuse training failed', '', 'The server gave no answer.' }
  end
  if not result.ok then
    if result.cancelled then
      return { '# Fuse training cancelled' }
    end
    return { '# Fuse training failed', '', tostring(result.error or 'unknown error') }
  end
  local lines = { '# ' .. tostring(result.message or 'Trained'), '' }
  local options = {}
  for _, key in ipairs({ 'optimizer', 'lr', 'schedule', 'steps', 'seed' }) do
    local value = (result.options or {})[key]
    if value ~= nil and value ~= vim.NIL then
      options[#options + 1] = key .. ' ' .. fmt_number(value)
    end
  end
  local batch = (result.options or {}).batch
  if type(batch) == 'table' then
    for index, size in pairs(batch) do
      options[#options + 1] = 'batch ' .. index .. '=' .. fmt_number(size)
    end
  end
  lines[#lines + 1] = string.format('- on %s (%s), steps %s to %s; %s', tostring(result.device),
    tostring(result.backend), fmt_number(result.first_step), fmt_number(result.steps),
    table.concat(options, ', '))
  lines[#lines + 1] = string.format('- loss `%s`: %s -> **%s**', tostring(result.loss),
    fmt_number(result.initial_loss), fmt_number(result.final_loss))
  local held = type(result.validation) == 'table' and result.validation or {}
  if #held > 0 then
    lines[#lines + 1] = string.format('- validation loss %s (step %s)',
      fmt_number(held[#held].loss), fmt_number(held[#held].step))
  end
  if result.checkpoint and result.checkpoint ~= vim.NIL then
    lines[#lines + 1] = '- checkpoint `' .. tostring(result.checkpoint) .. '`'
  end
  lines[#lines + 1] = ''
  lines[#lines + 1] = '## Loss curve'
  lines[#lines + 1] = ''
  lines[#lines + 1] = '```'
  for _, line in ipairs(type(result.report) == 'table' and result.report or {}) do
    lines[#lines + 1] = tostring(line)
  end
  lines[#lines + 1] = '```'
  local names = vim.tbl_keys(type(result.params) == 'table' and result.params or {})
  table.sort(names)
  if #names > 0 then
    lines[#lines + 1] = ''
    lines[#lines + 1] = '## Params'
    for _, name in ipairs(names) do
      lines[#lines + 1] = ''
      lines[#lines + 1] = '### ' .. name
      array_lines(lines, result.params[name])
    end
  end
  return lines
end

local TRAIN_NUMBERS = { lr = true, steps = true, seed = true, epochs = true }
local TRAIN_WORDS = { backend = true, device = true, precision = true, optimizer = true,
  schedule = true, batch = true, checkpoint = true }

--- Parse `:FuseTrain` arguments: `key=value` words (backend, device, optimizer,
--- lr, steps, batch=n=64, seed, schedule, epochs, checkpoint=FILE).
---@param args string
---@return table options for fuse.train, or nil and a message
function M.parse_train_args(args)
  local opts = {}
  for word in vim.gsplit(vim.trim(args or ''), '%s+', { trimempty = true }) do
    local key, value = word:match('^(%a+)=(.+)$')
    if key and TRAIN_NUMBERS[key] and tonumber(value) then
      opts[key] = tonumber(value)
    elseif key and TRAIN_WORDS[key] then
      opts[key] = value
    else
      return nil, 'Fuse: :FuseTrain takes key=value words (backend, device, optimizer, lr, '
        .. 'steps, batch=n=64, seed, schedule, epochs, checkpoint), not ' .. word
    end
  end
  return opts
end

--- Where to train when no backend is given: the server's first "Train on ..."
--- code action (torch or jax, as installed where the server runs).
local function train_target(bufnr, on_target)
  local client = M.client(bufnr)
  if not client then
    return on_target(nil)
  end
  local params = {
    textDocument = { uri = vim.uri_from_bufnr(bufnr) },
    range = { start = { line = 0, character = 0 }, ['end'] = { line = 0, character = 0 } },
    context = { diagnostics = {}, only = { 'source.fuse.train' } },
  }
  local handler = function(_, actions)
    for _, action in ipairs(type(actions) == 'table' and actions or {}) do
      local command = type(action.command) == 'table' and action.command or action
      if command.command == 'fuse.train' and type(command.arguments) == 'table' then
        return on_target(command.arguments[2])
      end
    end
    on_target(nil)
  end
  if vim.fn.has('nvim-0.11') == 1 then
    client:request('textDocument/codeAction', params, handler, bufnr)
  else
    client.request('textDocument/codeAction', params, handler, bufnr)
  end
end

--- The training's progress (its step and loss) in the message area, while it goes.
local function follow_progress()
  return vim.api.nvim_create_autocmd('LspProgress', {
    callback = function(ev)
      local params = ev.data and ev.data.params or {}
      local value = params.value or {}
      if type(params.token) ~= 'string' or not vim.startswith(params.token, 'fuse.train/') then
        return
      end
      local text = value.message or value.title or ''
      if value.kind == 'begin' then
        text = tostring(value.title)
      end
      vim.api.nvim_echo({ { 'Fuse: ' .. text } }, false, {})
      fire('FuseTrainProgress', { kind = value.kind, message = value.message, title = value.title,
        percentage = value.percentage })
    end,
  })
end

--- Train the params of the program in `bufnr` (fuse.train); progress in the
--- message area, the result (loss curve and table) in a scratch buffer.
---@param opts table? {backend?, device?, optimizer?, lr?, steps?, batch?, seed?, ..., bufnr?}
function M.train(opts)
  opts = vim.deepcopy(opts or {})
  local bufnr = program_buffer(opts.bufnr)
  opts.bufnr = nil
  local name = short_name(bufnr)
  local function show(err, result)
    local lines = err and { '# Fuse training failed', '', tostring(err.message or vim.inspect(err)) }
      or M.format_train(result)
    local out = M.show('fuse://train/' .. name, lines, 'markdown')
    vim.b[out].fuse_source = bufnr
    vim.b[out].fuse_result = err and { ok = false, error = err.message } or result
    fire('FuseTrainDone', { buf = out, source = bufnr, result = result, err = err })
  end
  local function go(request)
    if M.client(bufnr) then
      vim.notify(string.format('Fuse: training %s on %s (%s) ...', name, tostring(request.device or 'cpu'),
        tostring(request.backend)), vim.log.levels.INFO)
    end
    local watch = follow_progress()
    return execute(bufnr, 'fuse.train', { vim.uri_from_bufnr(bufnr), request }, function(err, result)
      pcall(vim.api.nvim_del_autocmd, watch)
      show(err, result)
    end)
  end
  if opts.backend then
    return go(opts)
  end
  if not M.client(bufnr) then
    return execute(bufnr, 'fuse.train', {}, function() end)  -- says that no server is attached
  end
  train_target(bufnr, function(target)
    if not target then
      show(nil, { ok = false, error = name .. ': nothing to train on: the program needs a loss '
        .. '(`train L`), and training needs torch or jax where the server runs' })
      return
    end
    go(vim.tbl_extend('keep', opts, target))
  end)
  return true
end

--- Completion for :FuseRun: exported tensors, queries, backend=/device=.
function M.complete_run(arglead)
  local items = { 'backend=numpy', 'backend=torch', 'backend=jax', 'device=cpu', 'device=cuda' }
  for _, line in ipairs(vim.api.nvim_buf_get_lines(0, 0, -1, false)) do
    local code = line:gsub('#.*$', '')
    local exports = code:match('^%s*export%s+(.-)%s*$')
    if exports then
      for name in exports:gmatch("[%w_']+") do
        items[#items + 1] = name
      end
    end
    local query = code:match('^%s*(%S.-%?)%s*$')
    if query then
      items[#items + 1] = query
    end
  end
  return vim.tbl_filter(function(item)
    return vim.startswith(item, arglead)
  end, items)
end

return M
