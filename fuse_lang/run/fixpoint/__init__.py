"""Recursive groups to their fixpoint: `loop` (the one loop, plain or semi-naive
rounds) and `closure` (a deep linear recursion finished by one graph search)."""
