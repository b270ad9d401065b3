"""Fuse in Jupyter: the `%%fuse` cell magic (`magic`) and notebook values as
sources (`values`); docs/notebooks.md.  IPython is imported only by `magic`,
when `%load_ext fuse_lang` loads it."""
