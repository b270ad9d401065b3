"""Sparse relations behind one neutral interface (`value`): NumPy's CSR (`csr`) and
N-D relations (`nd`), joins (`join`), and the torch and JAX representations."""
