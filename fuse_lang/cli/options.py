"""Options of `fuse run` and `fuse explain` that argparse cannot check alone:
the execution configuration's flags, the mesh and shard maps, and a time limit."""
from __future__ import annotations

import argparse
import math
from typing import Any


class UsageError(Exception):
    """A command line the user must correct (exit 2, with the usage line)."""


def shard_options(args: argparse.Namespace) -> tuple[dict[str, str], dict[str, int] | None]:
    """`--shard p=data` (repeatable, or `p=data,q=model`) and `--mesh data=8,...`;
    raises UsageError for a malformed one."""
    shard: dict[str, str] = {}
    for item in ",".join(args.shard).split(",") if args.shard else ():
        index, sep, axis = item.strip().partition("=")
        if not sep or not index.strip() or not axis.strip():
            raise UsageError(f"--shard takes INDEX=MESH_AXIS (p=data), not {item!r}")
        shard[index.strip()] = axis.strip()
    if args.mesh is None:
        return shard, None
    mesh: dict[str, int] = {}
    for item in args.mesh.split(","):
        axis, sep, size = item.strip().partition("=")
        if not sep or not axis.strip() or not size.strip().isdigit() or int(size) < 1:
            raise UsageError(f"--mesh takes AXIS=N,... with N devices along each axis "
                              f"(data=8), not {item!r}")
        mesh[axis.strip()] = int(size)
    return shard, mesh


def add_config_options(parser: argparse.ArgumentParser) -> None:
    """The fields of ExecutionConfig as flags (docs/execution.md)."""
    from ..plan.config import FIXPOINTS, MODES, PROJECTIONS

    parser.add_argument("--mode", choices=MODES, default="forward")
    parser.add_argument("--fixpoint", choices=FIXPOINTS, default="semi_naive",
                        help="semi_naive (where exact; naive elsewhere) or naive")
    parser.add_argument("--max-iterations", type=int, default=None, metavar="N",
                        help="rounds a recursive group may take (default: from its extents)")
    parser.add_argument("--tolerance", type=float, default=None, metavar="X",
                        help="numeric recursion stops when no value changes more (1e-6)")
    parser.add_argument("--block-size", type=int, default=None, metavar="ELEMENTS",
                        help="the most elements an intermediate of a contraction may hold")
    parser.add_argument("--projection", choices=PROJECTIONS, default="exact")
    parser.add_argument("--samples", type=int, default=None, metavar="N",
                        help="values drawn per summed index (--projection monte_carlo)")
    parser.add_argument("--seed", type=int, default=None, help="seed of the draws")
    parser.add_argument("--importance", action="append", default=[],
                        metavar="TENSOR=WEIGHTS",
                        help="draw TENSOR's summed index by the 1-D tensor WEIGHTS")
    parser.add_argument("--estimate", action="append", default=None, metavar="TENSOR",
                        help="estimate only this tensor's equation (repeatable; default: all)")


def config_of(args: argparse.Namespace) -> Any:
    """The ExecutionConfig of the flags (backend, device and precision apart)."""
    from .cache import cache_dir_of
    from ..plan.config import ExecutionConfig

    importance = {}
    for item in args.importance:
        tensor, sep, weights = item.partition("=")
        if not sep or not tensor or not weights:
            raise UsageError(f"--importance takes TENSOR=WEIGHTS, not {item!r}")
        importance[tensor] = weights
    return ExecutionConfig(
        mode=args.mode, fixpoint=args.fixpoint, max_iterations=args.max_iterations,
        block_size=args.block_size, projection=args.projection, samples=args.samples,
        seed=args.seed, importance=importance,
        estimate=None if args.estimate is None else tuple(args.estimate),
        trace=getattr(args, "trace", False), cache_dir=cache_dir_of(args),
        **({} if args.tolerance is None else {"tolerance": args.tolerance}))


def add_shard_options(parser: argparse.ArgumentParser, what: str) -> None:
    parser.add_argument("--shard", action="append", default=[], metavar="INDEX=AXIS",
                        help=f"{what}: the tensors' axes named INDEX are split over the mesh "
                             f"axis AXIS (repeatable; docs/scale.md)")
    parser.add_argument("--mesh", metavar="AXIS=N,...",
                        help="the mesh's axes and sizes (default: one axis over all devices, "
                             "named by --shard)")


def seconds(text: str) -> float:
    """A positive, finite number of seconds (argparse reports anything else)."""
    try:
        value = float(text)
    except ValueError:
        value = math.nan
    if not (math.isfinite(value) and value > 0):
        raise argparse.ArgumentTypeError(f"expected a positive number of seconds, not {text!r}")
    return value
