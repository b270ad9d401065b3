"""The front end: text -> tokens -> statements -> IR with spans, and syntax diagnostics."""
