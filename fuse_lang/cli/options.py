"""Options of `fuse run` and `fuse explain` that argparse cannot check alone:
the execution configuration's flags (`ConfigFlags`, made into an
ExecutionConfig by `config_of`), the mesh and shard maps, and a time limit."""
from __future__ import annotations

import argparse
import math
import re
from typing import TYPE_CHECKING, Sequence

from ..speed.fastinit import frozen_dataclass
from .status import UsageError

if TYPE_CHECKING:
    from ..plan.config import ExecutionConfig

__all__ = ["ConfigFlags", "UsageError", "add_config_options", "add_shard_options", "asks_for_json",
           "config_of", "importance_weights",
           "seconds", "shard_options"]


def shard_options(shard: Sequence[str], mesh: str | None
                  ) -> tuple[dict[str, str], dict[str, int] | None]:
    """`--shard p=data` (repeatable, or `p=data,q=model`) and `--mesh data=8,...`;
    raises UsageError for a malformed one, and for an index or a mesh axis given
    twice (the second would silently replace the first)."""
    shards: dict[str, str] = {}
    for item in ",".join(shard).split(",") if shard else ():
        index, sep, axis = (part.strip() for part in item.strip().partition("="))
        if not sep or not index or not axis:
            raise UsageError(f"--shard takes INDEX=MESH_AXIS (p=data), not {item!r}")
        if shards.get(index, axis) != axis:
            raise UsageError(f"--shard gives the index `{index}` twice ({index}={shards[index]} "
                             f"and {index}={axis}): an index is split over one mesh axis")
        shards[index] = axis
    if mesh is None:
        return shards, None
    sizes: dict[str, int] = {}
    for item in mesh.split(","):
        axis, sep, size = (part.strip() for part in item.strip().partition("="))
        # ASCII digits only: str.isdigit also takes '²', which int() refuses
        if not sep or not axis or not re.fullmatch(r"[0-9]+", size) or int(size) < 1:
            raise UsageError(f"--mesh takes AXIS=N,... with N devices along each axis "
                              f"(data=8), not {item!r}")
        if axis in sizes:
            raise UsageError(f"--mesh gives the axis `{axis}` twice: each mesh axis has "
                             f"one size")
        sizes[axis] = int(size)
    return shards, sizes


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
    parser.add_argument("--threads", type=int, default=None, metavar="N",
                        help="threads the sparse products may use (default: OMP_NUM_THREADS "
                             "where set, else every core)")


@frozen_dataclass
class ConfigFlags:
    """The flags of `add_config_options`, as given (`--importance` items are
    read by `config_of`, when the configuration is made)."""
    mode: str
    fixpoint: str
    max_iterations: int | None
    tolerance: float | None
    block_size: int | None
    projection: str
    samples: int | None
    seed: int | None
    importance: tuple[str, ...]
    estimate: tuple[str, ...] | None
    threads: int | None = None

    @classmethod
    def from_args(cls, ns: argparse.Namespace) -> ConfigFlags:
        """The flags of a parsed `fuse run` or `fuse explain` command line."""
        return cls(mode=ns.mode, fixpoint=ns.fixpoint, max_iterations=ns.max_iterations,
                   tolerance=ns.tolerance, block_size=ns.block_size, projection=ns.projection,
                   samples=ns.samples, seed=ns.seed, importance=tuple(ns.importance),
                   estimate=None if ns.estimate is None else tuple(ns.estimate),
                   threads=ns.threads)


def config_of(flags: ConfigFlags, trace: bool = False,
              cache_dir: str | None = None) -> ExecutionConfig:
    """The ExecutionConfig of the flags (backend, device and precision apart);
    `cache_dir` as `--cache-dir` gave it (cache.cache_dir_of)."""
    from ..plan.config import ExecutionConfig
    from .cache import cache_dir_of

    importance = importance_weights(flags.importance)
    return ExecutionConfig(
        mode=flags.mode, fixpoint=flags.fixpoint, max_iterations=flags.max_iterations,
        block_size=flags.block_size, projection=flags.projection, samples=flags.samples,
        seed=flags.seed, importance=importance, estimate=flags.estimate,
        trace=trace, cache_dir=cache_dir_of(cache_dir), threads=flags.threads,
        **({} if flags.tolerance is None else {"tolerance": flags.tolerance}))


def importance_weights(items: Sequence[str]) -> dict[str, str]:
    """`--importance TENSOR=WEIGHTS` items as {tensor: weights}; UsageError on a
    malformed one (`fuse run` and the `%%fuse` magic)."""
    importance = {}
    for item in items:
        tensor, sep, weights = item.partition("=")
        if not sep or not tensor or not weights:
            raise UsageError(f"--importance takes TENSOR=WEIGHTS, not {item!r}")
        importance[tensor] = weights
    return importance


def add_shard_options(parser: argparse.ArgumentParser, what: str) -> None:
    """`--shard INDEX=AXIS` (repeatable) and `--mesh AXIS=N,...`."""
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


def asks_for_json(words: Sequence[str]) -> bool:
    """Whether a command line's words ask for `--format json` (read without the
    parser: a line it refuses still gets its one JSON document, docs/cli.md).  The
    parser takes an unambiguous prefix of an option (`--form json`), so this does."""
    def is_format(word: str) -> bool:  # (`--fo`: no other option of a command starts so)
        return len(word) >= 4 and "--format".startswith(word)

    return any((w.partition("=")[2] == "json" and is_format(w.partition("=")[0]))
               or (is_format(w) and following == "json")
               for w, following in zip(words, [*words[1:], ""]))

