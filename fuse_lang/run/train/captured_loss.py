"""A training loss on torch captured once as an aten graph (docs/training.md).

Each step of eager training walks the program's equations in Python again
(plans, scopes, labelled arrays) to issue the same few framework operations.
`CapturedLoss` records those operations once per input signature with torch's
`make_fx` and replays the recorded graph on later steps: autograd runs through
it as through the eager evaluation, and the step costs what the hand-written
model costs.  Imported only by the torch learner (it imports torch).

The capture traces *fake* tensors, which carry shapes but no values: an
evaluation whose course depends on values (a fixpoint iterated until it stops
changing, a NumPy detour) fails to capture and stays eager for good.  So a
graph that was captured computes what the engine computes, for any values of
its inputs.  After the capture the graph is tidied: operations whose result
nothing reads are dropped, identity permutations and expansions skipped, and
what depends on constants only (a `/ 512` as a reciprocal) computed once.

With a compile cache (`cache_dir`), the tidied graph is kept in
`DIR/torch/fuse-train/`, one file per program key and input signature
(`torch.save` of the GraphModule: its code and its folded constants), and a
later process loads it instead of capturing (on the character transformer
0.19 s against 1.3 s).  The folder is trusted as jax's persistent cache is, whose
entries are executables: a file that does not load is captured again and
written over.
"""
from __future__ import annotations

import hashlib
import io
import operator
import warnings
from pathlib import Path
from typing import Any, Callable, Mapping

import torch
from torch._subclasses.fake_tensor import is_fake
from torch.fx import GraphModule, Node
from torch.fx.experimental.proxy_tensor import make_fx

LossFunction = Callable[[Mapping[str, Any]], Any]

aten = torch.ops.aten


class CapturedLoss:
    """`loss(inputs)`, replayed from a captured graph where one could be made.
    `fresh()` gives the loss function of a copy of the program for each capture:
    what a program keeps between runs (its constants' values) must not become
    fake tensors for its eager runs."""

    def __init__(self, loss: LossFunction, fresh: Callable[[], LossFunction],
                 stored: Path | None = None) -> None:
        self.loss = loss
        self.fresh = fresh
        self.stored = stored  # the cache's folder and the program's key: `stored-<sig>.pt`
        self.graphs: dict[tuple, tuple[list[str], Callable[..., Any]] | None] = {}

    def __call__(self, inputs: Mapping[str, Any]) -> Any:
        # the backend gives every input its dtype and device: shapes and whether a
        # gradient is asked for are what a graph depends on
        key = tuple((n, v.shape, v.requires_grad) for n, v in inputs.items())
        found = self.graphs.get(key, False)
        if found is False:
            found = self.graphs[key] = self._capture(dict(inputs))
        if found is None:
            return self.loss(inputs)
        names, forward = found
        return forward(*[inputs[n] for n in names])

    def _capture(self, inputs: dict[str, Any]) -> tuple[list[str], Callable[..., Any]] | None:
        names = list(inputs)
        path = None
        if self.stored is not None:
            signature = repr([(n, tuple(v.shape), str(v.dtype), v.requires_grad, str(v.device))
                              for n, v in inputs.items()])
            digest = hashlib.sha256(signature.encode()).hexdigest()[:16]
            path = self.stored.with_name(f"{self.stored.name}-{digest}.pt")
            graph = _load(path)
            if graph is not None:
                return names, graph.forward
        loss = self.fresh()

        def flat(*values: Any) -> Any:
            return loss(dict(zip(names, values)))

        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                graph = make_fx(flat, tracing_mode="fake")(*inputs.values())
        except Exception:  # noqa: BLE001 - value-dependent or uncapturable: run eagerly
            return None
        tidy(graph)
        if path is not None:
            _store(path, graph)
        return names, graph.forward


def _load(path: Path) -> GraphModule | None:
    """A stored graph, or None: absent, or not one that loads."""
    try:
        data = path.read_bytes()
    except OSError:
        return None
    try:
        graph = torch.load(io.BytesIO(data), weights_only=False)  # (the module says why)
    except Exception:  # noqa: BLE001 - a corrupt file is captured again, never trusted
        return None
    return graph if isinstance(graph, GraphModule) else None


def _store(path: Path, graph: GraphModule) -> None:
    """Written whole; a folder that cannot be written costs a later process the
    reuse, never this training."""
    from ...io.sinks import atomic_write

    buffer = io.BytesIO()
    try:
        torch.save(graph, buffer)
        atomic_write(path, buffer.getvalue())  # (which makes the folder)
    except Exception:  # noqa: BLE001 - (an unpicklable graph among them)
        pass


def tidy(graph: GraphModule) -> None:
    """Identity operations skipped, constant subexpressions computed once, dead
    operations dropped, and the inputs taken as plain positional arguments."""
    nodes = graph.graph
    for node in list(nodes.nodes):
        if node.op == "call_function" and _identity(node):
            node.replace_all_uses_with(node.args[0])  # type: ignore[arg-type]
    _fold_constants(graph)
    nodes.eliminate_dead_code()
    used = {n.target for n in nodes.nodes if n.op == "get_attr"}
    for name, _ in list(graph.named_buffers()):
        if name.startswith(("_folded_", "_tensor_constant")) and name not in used:
            delattr(graph, name)  # a step of a folded chain, or folded unused
    nodes._codegen = torch.fx.graph.CodeGen()  # no pytree: positional tensors in, one out
    graph.recompile()


def _identity(node: Node) -> bool:
    """A permutation in order, or an expansion to the shape it has."""
    value = node.meta.get("val")
    source = node.args[0] if node.args else None
    if not isinstance(source, Node) or not isinstance(value, torch.Tensor):
        return False
    before = source.meta.get("val")
    if not isinstance(before, torch.Tensor) or before.shape != value.shape:
        return False
    if node.target is aten.permute.default:
        return list(node.args[1]) == list(range(value.dim()))  # type: ignore[arg-type]
    return node.target in (aten.expand.default, aten.alias.default)


def _fold_constants(graph: GraphModule) -> None:
    """Operations on constants only (get_attr nodes and numbers), computed now."""
    constant: dict[Node, Any] = {}
    for node in list(graph.graph.nodes):
        if node.op == "get_attr":
            value = getattr(graph, node.target)  # type: ignore[arg-type]
            if isinstance(value, torch.Tensor) and not is_fake(value):
                constant[node] = value
            continue
        if node.op != "call_function" or not _pure(node):
            continue
        leaves = [a for a in node.all_input_nodes]
        if not leaves or any(a not in constant for a in leaves):
            continue
        args, kwargs = torch.fx.node.map_arg((node.args, node.kwargs), lambda a: constant[a])
        value = node.target(*args, **kwargs)  # type: ignore[operator]
        if not isinstance(value, torch.Tensor):
            continue
        name = f"_folded_{len(constant)}"
        graph.register_buffer(name, value.detach())
        with graph.graph.inserting_before(node):
            folded = graph.graph.get_attr(name)
        folded.meta = dict(node.meta)
        node.replace_all_uses_with(folded)
        constant[folded] = value


def _pure(node: Node) -> bool:
    """An aten operation that writes nothing in place (its schema has no alias
    annotation on an argument that is written)."""
    target = node.target
    if target is operator.getitem:
        return False
    schema = getattr(target, "_schema", None)
    return schema is not None and not schema.is_mutable
