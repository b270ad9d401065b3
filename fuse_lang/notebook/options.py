"""The `%%fuse` line's options (docs/notebooks.md, "The cell magic"): those of
`fuse run` that make sense in a cell, under the same names, and `--config`, an
execution configuration from a JSON file or a notebook variable.

The configuration's flags (`--mode`, `--fixpoint`, `--max-iterations`, ...)
are `fuse run`'s own (cli.options.add_config_options); here their defaults are
None, so a flag on the line is known as given and overrides the field of
`--config` while the fields it does not name keep the configuration's value."""
from __future__ import annotations

import argparse
import dataclasses
import json
import keyword
from pathlib import Path
from typing import Any, Mapping

from ..cli.cache import add_cache_dir_option, cache_dir_of
from ..cli.options import UsageError, add_config_options, importance_weights, seconds
from ..plan.config import ExecutionConfig


class MagicUsage(Exception):
    """A `%%fuse` line that cannot be read; the message says why."""


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> None:  # never exit the kernel
        raise MagicUsage(f"%%fuse: {message}\n{self.format_usage().strip()}")


# the configuration's flags, by the ExecutionConfig field each sets
CONFIG_FLAGS = ("mode", "fixpoint", "max_iterations", "tolerance", "block_size", "projection",
                "samples", "seed", "backend", "device", "precision", "threads")
FIELDS = tuple(f.name for f in dataclasses.fields(ExecutionConfig))


def parser() -> argparse.ArgumentParser:
    """The `%%fuse` line's parser (its usage errors raise MagicUsage)."""
    p = _Parser(prog="%%fuse", add_help=False,
                description="Run the cell's Fuse program (docs/notebooks.md).")
    p.add_argument("--input", action="append", default=[], metavar="NAME[=VAR]",
                   help="the notebook variable VAR (default NAME) as the source NAME")
    p.add_argument("--out", action="append", default=[], metavar="NAME[=VAR]",
                   help="set only these outputs, as VAR (default NAME)")
    p.add_argument("--quiet", action="store_true", help="print no list of variables set")
    p.add_argument("--target", action="append", default=[], metavar="NAME",
                   help="a tensor or query to compute alone (with its dependency cone)")
    p.add_argument("--config", metavar="FILE|VAR",
                   help="an execution configuration: a JSON file of ExecutionConfig's "
                        "fields, or a notebook variable holding an ExecutionConfig or a "
                        "dict; flags on the line override its fields")
    p.add_argument("--backend", choices=("numpy", "torch", "jax", "auto"),
                   help="numpy (default), torch, jax or auto")
    p.add_argument("--device", help="cpu (default), cuda, cuda:N or auto")
    p.add_argument("--precision", choices=("fp32", "fp64", "bf16", "fp16"))
    p.add_argument("--compile", action=argparse.BooleanOptionalAction, default=None,
                   dest="compiled", help="run as compiled graphs (default: on for jax)")
    p.add_argument("--representation", action="append", default=[],
                   metavar="NAME=dense|sparse", help="keep a tensor dense or sparse")
    p.add_argument("--time-limit", type=seconds, default=None, metavar="SECONDS",
                   help="stop the run after this many seconds")
    p.add_argument("--weights", metavar="MANIFEST.json",
                   help="read the weights a manifest gives in place of the sources' files")
    p.add_argument("--params", metavar="CKPT.safetensors",
                   help="give every param its value from a `fuse train` checkpoint")
    p.add_argument("--adapter", action="append", default=[], metavar="NAME",
                   help="apply the manifest's LoRA adapter NAME (repeatable)")
    add_config_options(p)
    add_cache_dir_option(p)
    p.add_argument("--trace", action="store_true", default=None,
                   help="print per equation and per fixpoint round what ran and its time")
    p.add_argument("--why", action="append", default=[], metavar="TARGET",
                   help="after the run, explain a tuple `Ancestor(Alice, Eve)` or an "
                        "element `Y[3]` (repeatable)")
    p.add_argument("--plot", action="store_true",
                   help="show a picture of each output in the result (matplotlib)")
    p.add_argument("--plot-format", choices=("svg", "png"), default="svg")
    p.add_argument("--slice-along", metavar="INDEX",
                   help="draw a 3-D+ tensor as slices along this index")
    # None: not on the line (the configuration's value stands)
    p.set_defaults(mode=None, fixpoint=None, projection=None)
    return p


def pairs(items: list[str], flag: str) -> dict[str, str]:
    """`NAME=VAR` (or `NAME`, meaning `NAME=NAME`) items by NAME."""
    out = {}
    for item in items:
        name, _, var = item.partition("=")
        if not name.isidentifier() or (var and not var.isidentifier()):
            raise MagicUsage(f"%%fuse: {flag} takes NAME or NAME=VARIABLE, not {item!r}")
        if name in out:
            raise MagicUsage(f"%%fuse: {flag} {name} is given twice")
        if keyword.iskeyword(var or name):
            raise MagicUsage(f"%%fuse: {flag} {item}: `{var or name}` is a keyword of Python, "
                             f"not a notebook variable (name another: {name}=VARIABLE)")
        out[name] = var or name
    return out


def representations(items: list[str]) -> dict[str, str]:
    """`--representation NAME=dense|sparse` by name."""
    from ..plan.representation import RepresentationError, representation_flags

    try:
        return representation_flags(items)
    except RepresentationError as e:
        raise MagicUsage(f"%%fuse: {e}") from None


def config_fields(data: Mapping[str, Any], where: str) -> dict[str, Any]:
    """A mapping of ExecutionConfig fields (`max-iterations` read as
    `max_iterations`) checked for unknown names; lists made tuples or dicts."""
    fields = {}
    for key, value in data.items():
        name = str(key).replace("-", "_")
        if name not in FIELDS:
            raise MagicUsage(f"%%fuse: --config {where}: {key!r} is not a field of the "
                             f"execution configuration (those are: {', '.join(FIELDS)})")
        if name == "estimate" and isinstance(value, list):
            value = tuple(value)
        fields[name] = value
    return fields


def read_config(given: str, namespace: Mapping[str, Any]) -> ExecutionConfig:
    """`--config`'s configuration: the notebook variable `given` (an
    ExecutionConfig or a dict of its fields) where there is one, else the JSON
    file `given` (an object of ExecutionConfig's fields, as its `to_json` writes)."""
    if given.isidentifier() and given in namespace:
        value = namespace[given]
        if isinstance(value, ExecutionConfig):
            return value
        if isinstance(value, Mapping):
            return ExecutionConfig(**config_fields(value, given))
        raise MagicUsage(f"%%fuse: --config {given}: the notebook variable is a "
                         f"{type(value).__name__}, not an ExecutionConfig or a dict")
    try:
        data = json.loads(Path(given).read_text(encoding="utf-8"))
    except OSError as err:
        raise MagicUsage(f"%%fuse: --config {given}: cannot be read: "
                         f"{err.strerror or err} (and no notebook variable has that "
                         f"name)") from None
    except (ValueError, UnicodeDecodeError) as err:
        raise MagicUsage(f"%%fuse: --config {given}: not JSON: {err}") from None
    if not isinstance(data, dict):
        raise MagicUsage(f"%%fuse: --config {given}: a JSON object of the configuration's "
                         f"fields is expected, not a {type(data).__name__}")
    return ExecutionConfig(**config_fields(data, given))


def cell_config(options: argparse.Namespace, namespace: Mapping[str, Any]) -> ExecutionConfig:
    """The run's configuration: `--config`'s (or the default one) with each flag
    the line gives in place of its field."""
    config = read_config(options.config, namespace) if options.config else ExecutionConfig()
    given = {name: getattr(options, name) for name in CONFIG_FLAGS
             if getattr(options, name) is not None}
    if options.importance:
        try:
            given["importance"] = importance_weights(options.importance)
        except UsageError as err:
            raise MagicUsage(f"%%fuse: {err}") from None
    if options.estimate is not None:
        given["estimate"] = tuple(options.estimate)
    if options.trace:
        given["trace"] = True
    if options.cache_dir is not None:
        given["cache_dir"] = cache_dir_of(options.cache_dir)
    return dataclasses.replace(config, **given)
