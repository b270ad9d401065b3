"""Speed helpers for the whole process, below every layer and importing nothing of
Fuse: `fastinit` (the IR's frozen slotted dataclasses made with fewer generated
methods, half of `import fuse_lang` before) and `gc_pause` (the cycle collector
paused while a whole file is analysed).  Each stays only while a benchmark shows
that it pays (docs/architecture.md, "Speed tricks")."""
