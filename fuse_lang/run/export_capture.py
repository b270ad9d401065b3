"""The framework's side of export (run.export): the program's function captured
by `torch.export` as a module with named inputs and its params as state, or by
`jax.export` with the params as constants; the dynamic axes as `torch.export.Dim`
or jax symbolic sizes, one per index, shared by every input that has it.
Imported only when exporting (it imports the framework)."""
from __future__ import annotations

import inspect
import warnings
from typing import Any

# `capture` below is run.export.Capture (not imported: export imports this module)
Capture = Any


def framework_symbol(index: str) -> str:
    """A dynamic index's name as the frameworks want it (an identifier)."""
    return index.replace("'", "_prime").replace("::", "__")


def capture_torch(capture: Capture) -> Any:
    """An `ExportedProgram` whose forward takes the inputs by keyword and returns
    the exports as a dict; the state is the module's parameters, by Fuse name."""
    import torch

    whole, names = capture.whole, capture.names
    by_keyword = {k: n for n, k in names.items()}

    class FuseProgram(torch.nn.Module):
        """The program: inputs by keyword, params as parameters, exports as a dict."""

        def forward(self, **inputs: torch.Tensor) -> dict[str, torch.Tensor]:
            values = {by_keyword[k]: v for k, v in inputs.items()}
            values.update(self._parameters)
            return whole(values)

    # the signature torch.export binds: one keyword-only argument per input
    keyword_only = inspect.Parameter.KEYWORD_ONLY
    FuseProgram.forward.__signature__ = inspect.Signature(  # type: ignore[attr-defined]
        [inspect.Parameter("self", inspect.Parameter.POSITIONAL_OR_KEYWORD)]
        + [inspect.Parameter(names[n], keyword_only) for n in capture.inputs])
    module = FuseProgram()
    for name, value in capture.state.items():
        try:
            module.register_parameter(name, torch.nn.Parameter(value.detach().clone(),
                                                               requires_grad=False))
        except KeyError:
            from .results import FuseError

            raise FuseError(f"the param `{name}` cannot be a torch module's state: "
                            f"torch.nn.Module has an attribute `{name}`; rename it") from None
    shapes = None
    if capture.dynamic:
        dims = {index: torch.export.Dim(framework_symbol(index)) for index in capture.dynamic}
        shapes = {names[n]: {k: dims[index] for index, pairs in capture.dynamic.items()
                             for m, k in pairs if m == n} or None
                  for n in capture.inputs}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        artifact = torch.export.export(module, (), {names[n]: v for n, v in
                                                    capture.inputs.items()},
                                       dynamic_shapes=shapes, strict=False)
    return artifact


def capture_jax(capture: Capture) -> tuple[Any, Any]:
    """The jitted function of the inputs by keyword (the state closed over: its
    constants) and its `jax.export.Exported`, over symbolic sizes where dynamic."""
    import jax

    whole, names = capture.whole, capture.names
    by_keyword = {k: n for n, k in names.items()}
    state = dict(capture.state)

    def program(**inputs: Any) -> dict:
        return whole({**{by_keyword[k]: v for k, v in inputs.items()}, **state})

    jitted = jax.jit(program)
    specs = {}
    sizes = {}
    if capture.dynamic:
        scope = jax.export.SymbolicScope()
        symbols = jax.export.symbolic_shape(", ".join(framework_symbol(i) for i in capture.dynamic),
                                            scope=scope)
        sizes = dict(zip(capture.dynamic, symbols))
    for name, value in capture.inputs.items():
        shape = list(value.shape)
        for index, pairs in capture.dynamic.items():
            for m, k in pairs:
                if m == name:
                    shape[k] = sizes[index]
        specs[names[name]] = jax.ShapeDtypeStruct(tuple(shape), value.dtype)
    return jitted, jax.export.export(jitted)(**specs)
