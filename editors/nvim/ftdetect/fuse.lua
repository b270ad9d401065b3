-- *.fuse files are Fuse programs.
vim.filetype.add({ extension = { fuse = 'fuse' } })
