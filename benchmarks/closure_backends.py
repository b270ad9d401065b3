"""Transitive closure: Fuse on JAX and Torch against the same semi-naive fixpoint
written by hand in each framework (float32 0/1 matrices).

The program and the graph are those of benchmarks/closure_numpy.py: the two
Datalog rules of reachability over a random sparse directed graph on N = 1000
nodes (mean out-degree 1.5; about 40 semi-naive rounds), Edge given at run time.
The hand-written versions join only the paths found in the last round with
Edge: a `lax.while_loop` under `jax.jit`; a Python loop in eager torch; a
Python loop over one `torch.compile`d round for torch.compile.  Fuse on either
backend runs the recursion as a loop of steps (only a straight run of equations
is one compiled graph).  Prints the medians and the ratios Fuse / hand-written
(target <= 1.1), after checking that the closures are equal, and that new
graphs of the same size add no compilation.

    python benchmarks/closure_backends.py [--device cpu|cuda] [--repeats 5]
        [--nodes 1000] [--degree 1.5] [--pairs jax,torch,torch-compile]
        [--threads N] [--clock wall|cpu] [--small] [--profile jax|torch|torch-compile]
"""
from __future__ import annotations

import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).parent))
from _frameworks import Framework, Workload, parse_args, run_all  # noqa: E402
from closure_numpy import PROGRAM, random_graph  # noqa: E402


def jax_closure(fw: Framework):
    import jax
    import jax.numpy as jnp

    @jax.jit
    def closure(Edge):
        edge = (Edge > 0).astype(jnp.float32)

        def more(state):
            return state[2]

        def round_(state):
            reach, delta, _ = state
            new = ((delta @ edge) > 0) & (reach <= 0)
            return reach + new, new.astype(jnp.float32), jnp.any(new)

        reach, _, _ = jax.lax.while_loop(more, round_, (edge, edge, jnp.any(edge > 0)))
        return reach

    return closure


def torch_closure(fw: Framework):
    import torch

    def round_(reach, delta, edge):
        new = ((delta @ edge) > 0) & (reach <= 0)
        delta = new.to(torch.float32)
        return reach + delta, delta, new.any()

    step = torch.compile(round_) if fw.compiled else round_

    def closure(Edge):
        edge = (Edge > 0).to(torch.float32)
        reach, delta, more = edge, edge, True
        while more:
            reach, delta, more = step(reach, delta, edge)
            more = bool(more)  # one number back from the device per round
        return reach

    return closure


def main() -> None:
    def options(parser):
        parser.add_argument("--nodes", type=int, default=1000)
        parser.add_argument("--degree", type=float, default=1.5, help="mean out-degree")

    args = parse_args(__doc__.splitlines()[0], repeats=5, configure=options)
    n = 40 if args.small else args.nodes
    degree = args.degree

    def inputs(seed: int) -> dict[str, np.ndarray]:
        return {"Edge": random_graph(n, degree, seed)}

    edge = inputs(0)["Edge"]
    reach, delta, rounds = edge.copy(), edge, 0
    while delta.any():
        rounds += 1
        delta = (((delta @ edge) > 0) & (reach == 0)).astype(np.float32)
        reach += delta
    workload = Workload("closure", PROGRAM, "Path", inputs,
                        {"jax": jax_closure, "torch": torch_closure,
                         "torch-compile": torch_closure}, exact=True, warmup=1)
    run_all(f"transitive closure, N={n}, {int(edge.sum())} edges, {int(reach.sum())} pairs "
            f"in the closure, {rounds} semi-naive rounds", [workload], args)


if __name__ == "__main__":
    main()
