-- :FuseRun [backend=B] [device=D] [target]  run the program (fuse.run)
-- :FuseTrain [backend=B] [steps=N] [lr=X] ... learn its params (fuse.train), progress
--                                            in the message area, the loss curve in a buffer
-- :FuseExplain                               show its plan (fuse.explain)
-- :FusePlot [tensor]                         pictures of the last run, opened (fuse.plot)
-- :FuseGraph                                 the program's dataflow picture, opened (fuse.graph)
-- :FuseWhy Ancestor(Alice, Eve) | Y[3]       why an answer is what it is (fuse.why), a tree
--                                            whose lines jump to the lines they cite (<CR>)
-- Both act on the current buffer's fuse language server and show the answer
-- in a scratch buffer (`fuse://run/<file>`, `fuse://explain/<file>`).
if vim.g.loaded_fuse then
  return
end
vim.g.loaded_fuse = 1

vim.api.nvim_create_user_command('FuseRun', function(cmd)
  require('fuse').run(require('fuse').parse_run_args(cmd.args))
end, {
  nargs = '*',
  desc = 'Fuse: run the program (or one target) with the language server',
  complete = function(arglead)
    return require('fuse').complete_run(arglead)
  end,
})

vim.api.nvim_create_user_command('FuseTrain', function(cmd)
  local opts, problem = require('fuse').parse_train_args(cmd.args)
  if not opts then
    vim.notify(problem, vim.log.levels.ERROR)
    return
  end
  require('fuse').train(opts)
end, {
  nargs = '*',
  desc = "Fuse: train the program's params against its loss (`train L`) with the language server",
  complete = function(arglead)
    local items = { 'backend=torch', 'backend=jax', 'device=cpu', 'device=cuda', 'optimizer=sgd',
      'optimizer=adam', 'optimizer=adamw', 'lr=', 'steps=', 'batch=', 'seed=', 'schedule=cosine',
      'epochs=', 'checkpoint=' }
    return vim.tbl_filter(function(item)
      return vim.startswith(item, arglead)
    end, items)
  end,
})

vim.api.nvim_create_user_command('FuseExplain', function()
  require('fuse').explain()
end, { nargs = 0, desc = 'Fuse: explain the program (its plan) in markdown' })

vim.api.nvim_create_user_command('FusePlot', function(cmd)
  require('fuse').plot({ tensor = vim.trim(cmd.args) })
end, {
  nargs = '?',
  desc = 'Fuse: draw the values of the last run (or one tensor) and open the pictures',
  complete = function(arglead)
    return vim.tbl_filter(function(item)
      return not item:find('[=?]')
    end, require('fuse').complete_run(arglead))
  end,
})

vim.api.nvim_create_user_command('FuseGraph', function()
  require('fuse').graph()
end, { nargs = 0, desc = "Fuse: draw the program's dataflow and open the picture" })

vim.api.nvim_create_user_command('FuseWhy', function(cmd)
  require('fuse').why({ target = cmd.args })
end, {
  nargs = '+',
  desc = "Fuse: why a tuple holds (its derivation) or a number is what it is (its terms)",
})
