"""Code actions: the quick fixes of the diagnostics in the range, "Run on
…" source actions (one per available backend and device) that merely offer
the `fuse.run` command, and, for a program with a loss (`train L`), "Train on
…" (one per available torch or jax device) offering `fuse.train`: nothing runs
unless it is chosen."""
from __future__ import annotations

import asyncio

from lsprotocol import types

from fuse_lang.check import Analysis
from fuse_lang.front.diagnostics import Diagnostic
from fuse_lang.ide.train_targets import train_targets
from fuse_lang.run.backends import available_targets
from fuse_lang.run.train.training import TRAINING_BACKENDS

from ..convert import Converter
from ..state import Feature, FuseServer, safe
from .commands import RUN, TRAIN
from .diagnostics import to_lsp

RUN_KIND = "source.fuse.run"  # a source action: it acts on the whole file
TRAIN_KIND = "source.fuse.train"


async def code_action(ls: FuseServer, params: types.CodeActionParams
                      ) -> list[types.CodeAction] | list[types.Command]:
    targets = await asyncio.to_thread(available_targets)  # may import a framework once
    actions = code_actions(ls, params, targets)
    if _takes_literals(ls):
        return actions
    # LSP: a client without codeActionLiteralSupport reads Command[] only (a
    # CodeAction is not one): the actions that are a command; a quick fix is an
    # edit, which such a client cannot be given here
    return [action.command for action in actions if action.command and not action.edit]


def _takes_literals(ls: FuseServer) -> bool:
    caps = ls.client_capabilities.text_document
    action = caps.code_action if caps else None
    return bool(action and action.code_action_literal_support)


def _wanted(kind: str, only: list[str] | None) -> bool:
    return not only or any(kind == k or kind.startswith(k + ".") for k in only)


@safe(list)
def code_actions(ls: FuseServer, params: types.CodeActionParams,
                 targets: tuple[tuple[str, str], ...]) -> list[types.CodeAction]:
    uri = params.text_document.uri
    only = [str(getattr(k, "value", k)) for k in params.context.only or ()]
    actions = []
    if _wanted(types.CodeActionKind.QuickFix.value, only):
        analysis, convert = ls.analysis(uri)
        start, end = convert.offset(params.range.start), convert.offset(params.range.end)
        for diag in analysis.diagnostics:
            if diag.fixes and diag.span.start <= end and start <= diag.span.end:
                actions += quick_fixes(diag, convert, uri, params.context.diagnostics,
                                       analysis)
    if _wanted(RUN_KIND, only):
        actions += [types.CodeAction(
            title=f"Run on {device} ({backend})", kind=RUN_KIND,
            command=types.Command(title=f"Run on {device} ({backend})", command=RUN,
                                  arguments=[uri, {"backend": backend, "device": device}]))
            for backend, device in targets]
    if _wanted(TRAIN_KIND, only) and train_targets(ls.analysis(uri)[0]):
        actions += [types.CodeAction(
            title=f"Train on {device} ({backend})", kind=TRAIN_KIND,
            command=types.Command(title=f"Train on {device} ({backend})", command=TRAIN,
                                  arguments=[uri, {"backend": backend, "device": device}]))
            for backend, device in targets if backend in TRAINING_BACKENDS]
    return actions


def quick_fixes(diag: Diagnostic, convert: Converter, uri: str,
                sent: list[types.Diagnostic], analysis: Analysis | None = None
                ) -> list[types.CodeAction]:
    lsp_diag = to_lsp(diag, convert, uri, analysis)
    # attach the client's own copy when it sent one (same code and range)
    for d in sent:
        if d.code == lsp_diag.code and d.range == lsp_diag.range:
            lsp_diag = d
            break
    return [types.CodeAction(
        title=fix.title, kind=types.CodeActionKind.QuickFix, diagnostics=[lsp_diag],
        is_preferred=len(diag.fixes) == 1,
        edit=types.WorkspaceEdit(changes={uri: [
            types.TextEdit(range=convert.range(e.span), new_text=e.new_text)
            for e in fix.edits]}))
        for fix in diag.fixes]


FEATURES = (
    Feature(types.TEXT_DOCUMENT_CODE_ACTION, code_action, types.CodeActionOptions(
        code_action_kinds=[types.CodeActionKind.QuickFix, RUN_KIND, TRAIN_KIND], resolve_provider=False)),
)
