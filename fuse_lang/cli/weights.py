"""`fuse check --weights MANIFEST`: a program's diagnostics with a weights
manifest's tensors standing in for its source files (docs/weights.md); and what
is wrong with `--weights` and `--params` as a command gives them.  The
manifest and its files' headers are read; no tensor's data is loaded and no
sha256 is computed (the run does that)."""
from __future__ import annotations

from ..check import Analysis, analyze
from ..front.diagnostics import Diagnostic


def check_with_weights(text: str, path: str, weights: str) -> tuple[Analysis, list[Diagnostic]]:
    """The analysis of `text` with the manifest's shapes, and its diagnostics: the
    manifest's problem first if it has one (a source the manifest was meant to
    replace is then not reported missing as well)."""
    # (here, not at the top: every command imports this module, few read a manifest)
    from ..io.manifest import (
        ManifestError,
        as_diagnostic,
        layouts,
        program_axes,
        read_manifest,
        recoded,
    )

    try:
        manifest = read_manifest(weights)
        layout = layouts(manifest, program_axes(analyze(text, path).program))
    except ManifestError as err:
        analysis = analyze(text, path)
        rest = [d for d in analysis.diagnostics if d.code != "missing-source"]
        return analysis, [as_diagnostic(err, analysis.program)] + rest
    shapes = {name: found.shape for name, found in layout.items()}
    analysis = analyze(text, path, input_shapes=shapes)
    return analysis, list(recoded(analysis.diagnostics, manifest, layout))


def weights_problem(weights: str | None, params: str | None) -> str | None:
    """What is wrong with `--weights MANIFEST.json` and `--params CKPT.safetensors`
    as given (`fuse run`, `fuse export`, the `%%fuse` magic), or None."""
    if params and weights:
        return ("give --weights MANIFEST.json or --params CKPT.safetensors, not both "
                "(a manifest may name the checkpoint's tensors)")
    if params and not params.lower().endswith(".safetensors"):
        return (f"--params takes a .safetensors checkpoint (as `fuse train --checkpoint` "
                f"writes), not {params}")
    return None
