"""One module per LSP feature; each lists its handlers (`FEATURES`, `COMMANDS`)
for fuse_lsp.server to register."""
