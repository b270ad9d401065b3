"""Fuse: tensor logic as a language. The engine (no editor or framework imports)."""
