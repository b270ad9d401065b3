"""Each module registers one group of LSP features on the server."""
