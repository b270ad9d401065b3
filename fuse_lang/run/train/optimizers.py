"""The names training offers, apart from the code (run.train.learners imports NumPy and
the frameworks; `fuse check` imports the CLI's parsers, which list these)."""

OPTIMIZERS = ("sgd", "adam", "adamw")
SCHEDULES = ("constant", "cosine")
