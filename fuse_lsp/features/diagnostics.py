"""Document sync, options and diagnostics.

Clients that announce pull diagnostics get them only by pull
(`textDocument/diagnostic`); the others only by push (`publishDiagnostics`,
stamped with the document version).  Pushes are debounced after edits and
dropped when the document has moved on: a stale result never lands over a
newer one.
"""
from __future__ import annotations

import asyncio
import functools
from pathlib import Path

from lsprotocol import types

from fuse_lang.front.diagnostics import Diagnostic, Severity

from ..convert import Converter
from ..server import FuseServer, safe

_SEVERITY = {
    Severity.ERROR: types.DiagnosticSeverity.Error,
    Severity.WARNING: types.DiagnosticSeverity.Warning,
    Severity.INFORMATION: types.DiagnosticSeverity.Information,
    Severity.HINT: types.DiagnosticSeverity.Hint,
}
_DOCS = Path(__file__).resolve().parents[2] / "docs" / "diagnostics.md"


@functools.lru_cache(maxsize=None)
def _description(code: str) -> types.CodeDescription | None:
    """The link to the code's section of docs/diagnostics.md (looked up once per code)."""
    if not _DOCS.exists():
        return None
    return types.CodeDescription(href=f"{_DOCS.as_uri()}#{code}")


def to_lsp(diag: Diagnostic, convert: Converter, uri: str) -> types.Diagnostic:
    related = [types.DiagnosticRelatedInformation(
        location=types.Location(uri=uri, range=convert.range(r.span)), message=r.message)
        for r in diag.related]
    description = _description(diag.code)
    return types.Diagnostic(
        range=convert.range(diag.span), message=diag.message, severity=_SEVERITY[diag.severity],
        code=diag.code, code_description=description, source="fuse",
        related_information=related or None,
        data={"fixes": len(diag.fixes)} if diag.fixes else None)


def document_diagnostics(ls: FuseServer, uri: str) -> list[types.Diagnostic]:
    found = ls.analysis(uri)
    if found is None:
        return []
    analysis, convert = found
    return [to_lsp(d, convert, uri) for d in analysis.diagnostics]


def register(server: FuseServer) -> None:
    timers: dict[str, asyncio.TimerHandle] = {}

    @server.feature(types.INITIALIZE)
    @safe()
    def initialize(ls: FuseServer, params: types.InitializeParams) -> None:
        ls.options.update(params.initialization_options)
        text_caps = params.capabilities.text_document
        ls.pull_diagnostics = bool(text_caps and text_caps.diagnostic)

    @server.feature(types.WORKSPACE_DID_CHANGE_CONFIGURATION)
    async def did_change_configuration(ls: FuseServer,
                                       params: types.DidChangeConfigurationParams) -> None:
        from .actions import pull_configuration

        try:
            if params.settings:
                ls.options.update(params.settings)
            else:  # "settings changed, ask me": the pull model
                await pull_configuration(ls)
        except Exception as error:  # noqa: BLE001
            ls.log_error("didChangeConfiguration", error)

    def publish(ls: FuseServer, uri: str, version: int | None) -> None:
        timers.pop(uri, None)
        try:
            document = ls.workspace.get_text_document(uri)
            if document.version != version:
                return  # a newer edit is pending: its own push will come
            items = document_diagnostics(ls, uri)
            if ls.workspace.get_text_document(uri).version != version:
                return
            ls.text_document_publish_diagnostics(types.PublishDiagnosticsParams(
                uri=uri, version=version, diagnostics=items))
        except Exception as error:  # noqa: BLE001
            ls.log_error("publishing diagnostics", error)

    def schedule(ls: FuseServer, uri: str, delay: float) -> None:
        if ls.pull_diagnostics:
            return
        version = ls.workspace.get_text_document(uri).version
        old = timers.pop(uri, None)
        if old is not None:
            old.cancel()
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:
            publish(ls, uri, version)
            return
        timers[uri] = loop.call_later(delay, publish, ls, uri, version)

    @server.feature(types.TEXT_DOCUMENT_DID_OPEN)
    @safe()
    def did_open(ls: FuseServer, params: types.DidOpenTextDocumentParams) -> None:
        schedule(ls, params.text_document.uri, 0)

    @server.feature(types.TEXT_DOCUMENT_DID_CHANGE)
    @safe()
    def did_change(ls: FuseServer, params: types.DidChangeTextDocumentParams) -> None:
        schedule(ls, params.text_document.uri, ls.options.debounce_ms / 1000)

    @server.feature(types.TEXT_DOCUMENT_DID_SAVE)
    @safe()
    def did_save(ls: FuseServer, params: types.DidSaveTextDocumentParams) -> None:
        # source files beside it may have changed (the analyzer reads them every time)
        ls.forget(params.text_document.uri, closed=False)
        schedule(ls, params.text_document.uri, 0)

    @server.feature(types.TEXT_DOCUMENT_DID_CLOSE)
    @safe()
    def did_close(ls: FuseServer, params: types.DidCloseTextDocumentParams) -> None:
        uri = params.text_document.uri
        old = timers.pop(uri, None)
        if old is not None:
            old.cancel()
        ls.forget(uri)
        if not ls.pull_diagnostics:
            ls.text_document_publish_diagnostics(types.PublishDiagnosticsParams(
                uri=uri, diagnostics=[]))

    @server.feature(types.TEXT_DOCUMENT_DIAGNOSTIC,
                    types.DiagnosticOptions(inter_file_dependencies=False,
                                            workspace_diagnostics=False, identifier="fuse"))
    @safe(lambda: types.RelatedFullDocumentDiagnosticReport(items=[]))
    def pull(ls: FuseServer, params: types.DocumentDiagnosticParams
             ) -> types.RelatedFullDocumentDiagnosticReport:
        uri = params.text_document.uri
        version = ls.workspace.get_text_document(uri).version
        return types.RelatedFullDocumentDiagnosticReport(
            items=document_diagnostics(ls, uri), result_id=f"{uri}@{version}")
