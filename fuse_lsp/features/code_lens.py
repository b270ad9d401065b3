"""Code lenses: "Run" and "Explain" above each run target (fuse_lang.ide.run_targets)
and "Train" above the `train L` statement (fuse_lang.ide.train_targets); they
carry the commands, nothing runs until one is clicked."""
from __future__ import annotations

from typing import Any

from lsprotocol import types

from fuse_lang.ide.run_targets import run_targets
from fuse_lang.ide.train_targets import train_targets

from ..state import Feature, FuseServer, safe
from .commands import EXPLAIN, RUN, TRAIN


@safe(list)
def code_lens(ls: FuseServer, params: types.CodeLensParams) -> list[types.CodeLens]:
    uri = params.text_document.uri
    analysis, convert = ls.analysis(uri)
    lenses = []
    for target in run_targets(analysis):
        where = convert.range(target.span)
        names: Any = target.names[0] if len(target.names) == 1 else list(target.names)
        lenses.append(types.CodeLens(range=where, command=types.Command(
            title="Run", command=RUN, arguments=[uri, {"target": names}])))
        lenses.append(types.CodeLens(range=where, command=types.Command(
            title="Explain", command=EXPLAIN, arguments=[uri])))
    for target in train_targets(analysis)[:1]:  # a second `train` is an error
        lenses.append(types.CodeLens(range=convert.range(target.span), command=types.Command(
            title="Train", command=TRAIN, arguments=[uri, {}])))
    return lenses


FEATURES = (
    Feature(types.TEXT_DOCUMENT_CODE_LENS, code_lens,
            types.CodeLensOptions(resolve_provider=False)),
)
