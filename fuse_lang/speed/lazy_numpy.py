"""`defer_numpy_tools`: numpy's tools no run uses (f2py, testing, ...) loaded
on first use instead of at scipy's import.

scipy's array-API layer (`scipy._lib.array_api_compat.numpy`, imported by
`scipy.sparse`) copies every public attribute of numpy, and numpy imports a
lazy submodule when one is first read: so `import scipy.sparse` also imports
`numpy.f2py` (about 0.2 s, most of it compiling f2py's regular expressions),
`numpy.testing`, `numpy.matlib`, `numpy.ma` and `numpy.polynomial`, which a
run does not use.  Here each is put in place as an `importlib.util.LazyLoader`
module: scipy copies the reference, and the module's code runs only if
something reads from it.  `fuse run` and `fuse why` call it: a whole-process
run of a relation paid this at every start (about 0.25 s of 1.3 s for the
transitive closure of 200,000 nodes).
"""
from __future__ import annotations

import importlib.util
import sys

DEFERRED = ("numpy.f2py", "numpy.testing", "numpy.matlib", "numpy.ma", "numpy.polynomial")


def defer_numpy_tools() -> None:
    """Install DEFERRED as lazily loaded modules (each one not imported yet)."""
    import numpy

    for name in DEFERRED:
        if name in sys.modules:
            continue
        spec = importlib.util.find_spec(name)
        if spec is None or spec.loader is None:
            continue
        spec.loader = importlib.util.LazyLoader(spec.loader)
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module
        spec.loader.exec_module(module)
        # numpy's own __getattr__ would import it again for `numpy.f2py`
        setattr(numpy, name.rsplit(".", 1)[1], module)
