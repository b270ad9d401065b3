"""An `ExecutionConfig` made ready for a run: merged with `compile`'s keywords,
checked against the program, and `backend="auto"` decided.

The rule of `backend="auto"` (docs/execution.md): NumPy for a relational
program (any Boolean tensor: relations are sparse and small-step, NumPy's
per-operation cost is lowest) and for a small one (under AUTO_GPU_FLOPS
multiply-adds in all); otherwise a GPU framework when a GPU is there (torch
with CUDA, else jax with a GPU), and NumPy when none is.
"""
from __future__ import annotations

import dataclasses
import importlib.util
import re
from typing import Any

from ..check import Analysis
from ..plan.config import ExecutionConfig, config_problems
from ..plan.sampling import sample_sites
from .results import FuseError

# a program with fewer multiply-adds than this runs on NumPy under backend="auto":
# a GPU's launch and transfer costs outweigh what it saves below it
AUTO_GPU_FLOPS = 10**9

# compile keyword -> the config field it sets (the same name)
KEYWORDS = ("backend", "device", "precision", "max_iterations", "tolerance")


def merged(config: ExecutionConfig | None, keywords: dict[str, Any]) -> ExecutionConfig:
    """The configuration with `compile`'s keywords (None: not given) folded in; a
    keyword that contradicts a field the configuration set is refused."""
    if config is None:
        config = ExecutionConfig()
    elif not isinstance(config, ExecutionConfig):
        raise FuseError(f"config must be a fuse_lang.ExecutionConfig, not "
                        f"{type(config).__name__}")
    default = ExecutionConfig()
    given = {k: v for k, v in keywords.items() if v is not None}
    for name, value in given.items():
        mine = getattr(config, name)
        if mine != getattr(default, name) and mine != value:
            raise FuseError(f"compile({name}={value!r}) contradicts the configuration's "
                            f"{name}={mine!r}; give it once")
    config = dataclasses.replace(config, **given)
    problems = config_problems(config)
    if problems:
        raise FuseError("the execution configuration is refused: " + "; ".join(problems))
    return config


def checked_against(config: ExecutionConfig, analysis: Analysis) -> None:
    """What the configuration names in the program exists and fits it."""
    if config.projection != "monte_carlo":
        return
    sites = {s.tensor: s for s in sample_sites(analysis, config)}
    for tensor in config.estimate or ():
        if tensor not in sites:
            raise FuseError(f"estimate names `{tensor}`, which is not a tensor whose "
                            f"equation Monte Carlo projection can estimate (one product of "
                            f"references summing an index with more values than samples; "
                            f"docs/execution.md)")
    for tensor, weights in config.importance.items():
        if tensor not in analysis.tensors:
            raise FuseError(f"importance names `{tensor}`, which is not a tensor of this "
                            f"program")
        if tensor not in sites:
            raise FuseError(f"importance names `{tensor}`, whose equation Monte Carlo "
                            f"projection does not estimate (docs/execution.md says which do)")
        info = analysis.tensors.get(weights)
        site = sites[tensor]
        if info is None or len(info.shape) != 1 or info.shape[0] != site.extent:
            raise FuseError(f"importance weights `{weights}` for `{tensor}` must be a 1-D "
                            f"tensor of the program with {site.extent} values (the extent "
                            f"of `{site.index}`)")


def choose_backend(analysis: Analysis, device: str) -> tuple[str, str, str]:
    """backend="auto": (backend, device, why), by the rule in this module's docstring.
    A device that is none of cpu, cuda, cuda:N and auto is refused (it was taken for
    the cpu, or for `cuda` on a large program)."""
    if not isinstance(device, str) or not re.fullmatch(r"cpu|auto|cuda(:\d+)?", device):
        raise FuseError(f"backend='auto' runs on the device cpu, cuda, cuda:N or auto, "
                        f"not {device!r}")
    if any(t.boolean for t in analysis.tensors.values()):
        return "numpy", "cpu", "relational program (Boolean tensors): NumPy"
    from ..plan.planner import plan_program

    flops = plan_program(analysis).total_flops
    if flops is not None and flops < AUTO_GPU_FLOPS:
        return "numpy", "cpu", (f"small program ({flops:.3g} multiply-adds < "
                                f"{AUTO_GPU_FLOPS:.0e}): NumPy")
    size = "large dense" if flops is not None else "dense (size unknown)"
    if device == "cpu":
        return "numpy", "cpu", f"{size} program, but device cpu asked: NumPy"
    gpu = device if device.startswith("cuda") else "cuda"  # `cuda:1` asked: that one
    if importlib.util.find_spec("torch") is not None:
        import torch

        if torch.cuda.is_available():
            return "torch", gpu, f"{size} program and a CUDA GPU: torch on {gpu}"
    if importlib.util.find_spec("jax") is not None:
        import jax

        if any(d.platform == "gpu" for d in jax.devices()):
            return "jax", gpu, f"{size} program and a GPU: jax on the GPU"
    return "numpy", "cpu", f"{size} program but no GPU here: NumPy"
