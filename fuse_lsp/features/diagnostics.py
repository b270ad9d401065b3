"""Document sync and diagnostics.

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

from fuse_lang.check import Analysis
from fuse_lang.front.diagnostics import Diagnostic, Related, Severity

from ..convert import Converter
from ..state import DocumentTooLarge, Feature, FuseServer, file_path, safe

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


def to_lsp(diag: Diagnostic, convert: Converter, uri: str,
           analysis: Analysis | None = None) -> types.Diagnostic:
    related = [types.DiagnosticRelatedInformation(
        location=_location(r, convert, uri, analysis), message=r.message)
        for r in diag.related]
    description = _description(diag.code)
    return types.Diagnostic(
        range=convert.range(diag.span), message=diag.message, severity=_SEVERITY[diag.severity],
        code=diag.code, code_description=description, source="fuse",
        related_information=related or None,
        data={"fixes": len(diag.fixes)} if diag.fixes else None)


def _location(related: Related, convert: Converter, uri: str,
              analysis: Analysis | None) -> types.Location:
    """Where a related place is: in this document, or in another file (an imported
    one: its span is in that file's text, its columns in the agreed code units)."""
    if related.path is None or related.position is None:
        return types.Location(uri=uri, range=convert.range(related.span))
    imported = analysis.imports.by_path(related.path) \
        if analysis is not None and analysis.imports is not None else None
    if imported is not None:
        other = Converter(imported.parsed.text, imported.parsed.lines, convert.encoding)
        return types.Location(uri=Path(related.path).as_uri(), range=other.range(related.span))
    line, col, end_line, end_col = related.position  # (characters: right for ASCII)
    return types.Location(uri=Path(related.path).as_uri(), range=types.Range(
        types.Position(line, col), types.Position(end_line, end_col)))


def document_diagnostics(ls: FuseServer, uri: str) -> list[types.Diagnostic]:
    try:
        analysis, convert = ls.analysis(uri)
    except DocumentTooLarge as oversized:
        return [to_lsp(oversized.diagnostic, oversized.converter, uri)]
    return [to_lsp(d, convert, uri, analysis) for d in analysis.diagnostics]


# ------------------------------------------------------------------ push


def publish(ls: FuseServer, uri: str, version: int | None) -> None:
    """Push the document's diagnostics, unless it has moved past `version`."""
    ls.pushes.pop(uri, None)
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
    """Push the current version's diagnostics after `delay` seconds (none for a
    pull client), replacing a push still pending."""
    if ls.pull_diagnostics:
        return
    document = ls.open_document(uri)
    if document is None:  # a change or save of a document never opened: nothing to push
        return
    version = document.version
    cancel_push(ls, uri)
    try:
        loop = asyncio.get_running_loop()
    except RuntimeError:
        publish(ls, uri, version)
        return
    ls.pushes[uri] = loop.call_later(delay, publish, ls, uri, version)


def cancel_push(ls: FuseServer, uri: str) -> None:
    old = ls.pushes.pop(uri, None)
    if old is not None:
        old.cancel()


# --------------------------------------------------------------- handlers


def _importers_again(ls: FuseServer, uri: str, delay: float) -> None:
    """The documents importing the file at `uri` analysed again and their
    diagnostics pushed: what they import changed (an edit, a save, a file on disk).
    A pull client is asked to pull again (`workspace/diagnostic/refresh`), when it
    can be: it knows of no change to those documents."""
    if not uri.startswith("file:"):
        return
    importers = [importer for importer in ls.importers(file_path(uri)) if importer != uri]
    for importer in importers:
        ls.forget(importer, closed=False)
        schedule(ls, importer, delay)
    if importers and ls.pull_diagnostics and _can_refresh(ls):
        _refresh_later(ls, delay)


def _can_refresh(ls: FuseServer) -> bool:
    workspace = ls.client_capabilities.workspace
    return bool(workspace and workspace.diagnostics and workspace.diagnostics.refresh_support)


def _refresh_later(ls: FuseServer, delay: float) -> None:
    """One `workspace/diagnostic/refresh` after `delay` (debounced as pushes are)."""
    cancel_push(ls, _REFRESH)
    try:
        loop = asyncio.get_running_loop()
    except RuntimeError:
        _refresh(ls)
        return
    ls.pushes[_REFRESH] = loop.call_later(delay, _refresh, ls)


_REFRESH = "workspace/diagnostic/refresh"  # (its key among the pending pushes)


def _refresh(ls: FuseServer) -> None:
    ls.pushes.pop(_REFRESH, None)
    try:
        ls.workspace_diagnostic_refresh(None)
    except Exception as error:  # noqa: BLE001 - the client may be gone
        ls.log_error("workspace/diagnostic/refresh", error)


@safe()
def did_open(ls: FuseServer, params: types.DidOpenTextDocumentParams) -> None:
    schedule(ls, params.text_document.uri, 0)
    _importers_again(ls, params.text_document.uri, 0)


@safe()
def did_change(ls: FuseServer, params: types.DidChangeTextDocumentParams) -> None:
    schedule(ls, params.text_document.uri, ls.options.debounce_ms / 1000)
    _importers_again(ls, params.text_document.uri, ls.options.debounce_ms / 1000)


@safe()
def did_save(ls: FuseServer, params: types.DidSaveTextDocumentParams) -> None:
    # source files beside it may have changed (the analyzer reads them every time)
    ls.forget(params.text_document.uri, closed=False)
    schedule(ls, params.text_document.uri, 0)
    _importers_again(ls, params.text_document.uri, 0)


@safe()
def did_close(ls: FuseServer, params: types.DidCloseTextDocumentParams) -> None:
    uri = params.text_document.uri
    cancel_push(ls, uri)
    ls.forget(uri)
    if not ls.pull_diagnostics:
        ls.text_document_publish_diagnostics(types.PublishDiagnosticsParams(
            uri=uri, diagnostics=[]))
    _importers_again(ls, uri, 0)  # (they read its file on disk again)


@safe()
def did_change_watched_files(ls: FuseServer, params: types.DidChangeWatchedFilesParams) -> None:
    for change in params.changes:
        _importers_again(ls, change.uri, 0)


@safe(lambda: types.RelatedFullDocumentDiagnosticReport(items=[]))
def pull(ls: FuseServer, params: types.DocumentDiagnosticParams
         ) -> types.RelatedFullDocumentDiagnosticReport:
    uri = params.text_document.uri
    version = ls.workspace.get_text_document(uri).version
    return types.RelatedFullDocumentDiagnosticReport(
        items=document_diagnostics(ls, uri), result_id=f"{uri}@{version}")


FEATURES = (
    Feature(types.TEXT_DOCUMENT_DID_OPEN, did_open),
    Feature(types.TEXT_DOCUMENT_DID_CHANGE, did_change),
    Feature(types.TEXT_DOCUMENT_DID_SAVE, did_save),
    Feature(types.TEXT_DOCUMENT_DID_CLOSE, did_close),
    Feature(types.WORKSPACE_DID_CHANGE_WATCHED_FILES, did_change_watched_files),
    Feature(types.TEXT_DOCUMENT_DIAGNOSTIC, pull, types.DiagnosticOptions(
        # (imports: a document's diagnostics change with the files it imports)
        inter_file_dependencies=True, workspace_diagnostics=False, identifier="fuse")),
)
