-- Fuse language server configuration for Neovim 0.11+ (`:help lsp-config`).
--
-- With `editors/nvim` on the runtimepath, `vim.lsp.enable('fuse')` is the
-- whole setup: Neovim merges this table into `vim.lsp.config.fuse` and starts
-- the server for every buffer of filetype `fuse`.
--
-- The server is the `fuse-lsp` console script (`pip install -e .` in the
-- repository). When no `fuse-lsp` is on $PATH, the server is
-- started as `python3 -m fuse_lsp --stdio` (`vim.g.fuse_python` names another
-- interpreter, e.g. a virtual environment's). Override anything with
--   vim.lsp.config('fuse', { cmd = { '/path/to/fuse-lsp', '--stdio' } })

local function cmd()
  if vim.g.fuse_python then
    return { vim.g.fuse_python, '-m', 'fuse_lsp', '--stdio' }
  end
  if vim.fn.executable('fuse-lsp') == 1 then
    return { 'fuse-lsp', '--stdio' }
  end
  return { vim.fn.executable('python3') == 1 and 'python3' or 'python', '-m', 'fuse_lsp', '--stdio' }
end

---@type vim.lsp.Config
return {
  cmd = cmd(),
  filetypes = { 'fuse' },
  -- A project's root; a lone .fuse file outside any project still gets a
  -- server (single-file mode, no workspace folder).
  root_markers = { '.git', 'pyproject.toml' },
  -- Read by the server at `initialize` ...
  init_options = {
    backend = 'numpy', -- backend of :FuseRun / fuse.run
    device = 'cpu', -- device of :FuseRun / fuse.run
  },
  -- ... and answered when the server asks `workspace/configuration` for the
  -- section "fuse" (after `initialized`). Keys: backend, device, precision,
  -- memoryLimit (bytes, shared by all runs), maxConcurrentRuns, runTimeLimit
  -- (seconds), runTrace (a trace in :FuseRun's result), allowSinkWrites,
  -- debounceMs, and the defaults of :FuseTrain: trainOptimizer, trainLearningRate,
  -- trainSteps, trainBatch ("n=64"), trainSeed (docs/lsp.md).
  settings = {
    fuse = {
      backend = 'numpy',
      device = 'cpu',
      allowSinkWrites = false,
    },
  },
}
