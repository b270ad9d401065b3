"""The Fuse language server (pygls); a thin layer over fuse_lang."""
