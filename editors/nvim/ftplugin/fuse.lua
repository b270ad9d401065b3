-- Buffer settings for Fuse programs.
if vim.b.did_ftplugin then
  return
end
vim.b.did_ftplugin = 1

vim.bo.commentstring = '# %s'
vim.bo.comments = ':#'
-- Primes belong to names: p', x''.
vim.opt_local.iskeyword:append("'")
vim.opt_local.formatoptions:remove('t')
vim.opt_local.formatoptions:append('croql')

vim.b.undo_ftplugin = 'setlocal commentstring< comments< iskeyword< formatoptions<'
