"""Commands (`fuse.run`, `fuse.explain`), code actions, code lenses and the
`workspace/configuration` pull.

Nothing runs unless asked: only `fuse.run` runs a program (fuse_lsp.running),
and code actions and lenses merely offer it as a Command.
"""
from __future__ import annotations

import asyncio
from typing import Any

from lsprotocol import types
from pygls.exceptions import JsonRpcInvalidParams

from fuse_lang.run.backends import available_targets
from fuse_lang.front.diagnostics import Diagnostic, Severity
from fuse_lang.plan.render import render_plan_markdown
from fuse_lang.plan import plan_program
from fuse_lang.ide.run_targets import run_targets

from ..convert import Converter
from ..running import document_name, parse_request, run_document
from ..server import FuseServer, safe
from .diagnostics import to_lsp

RUN = "fuse.run"
EXPLAIN = "fuse.explain"
RUN_KIND = "source.fuse.run"  # a source action: it acts on the whole file


def register(server: FuseServer) -> None:
    @server.feature(types.INITIALIZED)
    async def initialized(ls: FuseServer, params: types.InitializedParams) -> None:
        await pull_configuration(ls)

    @server.command(RUN)
    async def run(ls: FuseServer, *args: Any) -> dict[str, Any] | None:
        try:
            request = parse_request(ls, args)
        except ValueError as error:
            raise JsonRpcInvalidParams(str(error)) from None
        return await run_document(ls, request)

    @server.command(EXPLAIN)
    def explain(ls: FuseServer, *args: Any) -> dict[str, str]:
        if not args or not isinstance(args[0], str):
            raise JsonRpcInvalidParams("fuse.explain takes [uri]")
        return {"kind": types.MarkupKind.Markdown.value, "value": explain_markdown(ls, args[0])}

    @server.feature(types.TEXT_DOCUMENT_CODE_ACTION, types.CodeActionOptions(
        code_action_kinds=[types.CodeActionKind.QuickFix, RUN_KIND], resolve_provider=False))
    async def code_action(ls: FuseServer, params: types.CodeActionParams
                          ) -> list[types.CodeAction]:
        targets = await asyncio.to_thread(available_targets)  # may import a framework once
        return code_actions(ls, params, targets)

    @server.feature(types.TEXT_DOCUMENT_CODE_LENS, types.CodeLensOptions(resolve_provider=False))
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
        return lenses


async def pull_configuration(ls: FuseServer) -> None:
    """Ask the client for the "fuse" section, when it can answer."""
    workspace = ls.client_capabilities.workspace
    if not (workspace and workspace.configuration):
        return
    try:
        settings = await ls.workspace_configuration_async(types.ConfigurationParams(
            items=[types.ConfigurationItem(section="fuse")]))
    except Exception as error:  # noqa: BLE001 - a client may fail it: keep the defaults
        ls.log_error("workspace/configuration", error)
        return
    if settings:
        ls.options.update(settings[0])


def explain_markdown(ls: FuseServer, uri: str) -> str:
    analysis, _ = ls.analysis(uri)
    text = render_plan_markdown(plan_program(analysis), title=document_name(uri))
    errors = sum(1 for d in analysis.diagnostics if d.severity is Severity.ERROR)
    if errors:
        text = (f"> **{errors} error{'' if errors == 1 else 's'}** in this program: "
                f"the plan may be incomplete.\n\n") + text
    return text


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
                actions += quick_fixes(diag, convert, uri, params.context.diagnostics)
    if _wanted(RUN_KIND, only):
        actions += [types.CodeAction(
            title=f"Run on {device} ({backend})", kind=RUN_KIND,
            command=types.Command(title=f"Run on {device} ({backend})", command=RUN,
                                  arguments=[uri, {"backend": backend, "device": device}]))
            for backend, device in targets]
    return actions


def quick_fixes(diag: Diagnostic, convert: Converter, uri: str,
                sent: list[types.Diagnostic]) -> list[types.CodeAction]:
    lsp_diag = to_lsp(diag, convert, uri)
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
