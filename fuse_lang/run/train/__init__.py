"""Training a program's params against its loss (`train L`; docs/training.md)."""
