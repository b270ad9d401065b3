"""`python -m fuse_lang.cli ...`: the same as `fuse ...`."""
from . import entry

entry()
