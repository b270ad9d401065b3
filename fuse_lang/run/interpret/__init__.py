"""The reference interpreter: an equation's right-hand side evaluated on labelled
arrays through the Backend interface (the living definition of the semantics)."""
