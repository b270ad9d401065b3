"""Generating tokens from a causal program (docs/generation.md): `generation` (the
loop behind `program.generate` and `fuse generate`), `stepping` (the program run
on a window of ids: whole, or one new position at a time over the rows kept),
`sampling` (greedy, temperature, top-k) and `vocabulary` (text to ids and back)."""
