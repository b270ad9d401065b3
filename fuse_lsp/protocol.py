"""pygls's protocol, made to keep two promises of LSP it does not keep alone.

- Lines end at "\\n", "\\r\\n" or "\\r", and nowhere else: the server's copy of a
  document splits and edits lines as the editor does (pygls uses
  str.splitlines, which also ends lines at U+2028, U+0085, "\\v", "\\f", ...),
  through the same Converter as every handler.
- Every request gets an answer: params that do not fit the method's types get
  InvalidParams (-32602), a message that is not JSON (or nested too deep to
  read) gets ParseError (-32700), a request before `initialize` gets
  ServerNotInitialized (-32002) and one after `shutdown` InvalidRequest (-32600).
"""
from __future__ import annotations

import logging
from typing import Any, Generator

from lsprotocol import types
from pygls.exceptions import (
    JsonRpcException,
    JsonRpcInvalidParams,
    JsonRpcInvalidRequest,
    JsonRpcParseError,
    JsonRpcServerNotInitialized,
)
from pygls.protocol import LanguageServerProtocol
from pygls.protocol.language_server import lsp_method
from pygls.workspace import TextDocument, Workspace

from fuse_lang.front.span import split_lines

from .convert import Converter

log = logging.getLogger("fuse_lsp")


class FuseTextDocument(TextDocument):
    """A document whose lines are LSP's, edited through fuse_lsp.convert."""

    @property
    def lines(self) -> tuple[str, ...]:  # pygls's position codec reads these
        return tuple(split_lines(self.source))

    def _apply_incremental_change(self, change: types.TextDocumentContentChangePartial) -> None:
        text = self.source
        convert = Converter(text, encoding=self.position_codec.encoding)
        start = convert.offset(change.range.start)
        end = max(start, convert.offset(change.range.end))
        self._source = text[:start] + change.text + text[end:]


class FuseWorkspace(Workspace):
    def _create_text_document(self, doc_uri: str, source: str | None = None,
                              version: int | None = None,
                              language_id: str | None = None) -> TextDocument:
        return FuseTextDocument(doc_uri, source=source, version=version,
                                language_id=language_id, sync_kind=self._sync_kind,
                                position_codec=self._position_codec)


class _Answered:
    """A message already answered with an error while it was read: nothing to do."""

    jsonrpc = "2.0"


ANSWERED = _Answered()


class FuseProtocol(LanguageServerProtocol):
    @lsp_method(types.INITIALIZE)
    def lsp_initialize(self, params: types.InitializeParams
                       ) -> Generator[Any, Any, types.InitializeResult]:
        result = yield from super().lsp_initialize(params)
        made = self._workspace  # pygls's: the same settings, FuseTextDocuments
        assert made is not None
        self._workspace = FuseWorkspace(made.root_uri, self._server._text_document_sync_kind,
                                        list(made.folders.values()), made.position_encoding)
        return result

    def structure_message(self, data: dict[str, Any]) -> Any:
        try:
            return super().structure_message(data)
        except JsonRpcException as error:
            if "method" in data and data.get("id") is not None:  # a request: answer it
                why = "the params do not fit the method" \
                    if isinstance(error, JsonRpcInvalidParams) else "the message is malformed"
                self._answer_error(data["id"], type(error), f"{data['method']}: {why}")
            log.warning("fuse-lsp: ignored a malformed message (%s)", data.get("method"))
            return ANSWERED

    def handle_message(self, message: Any) -> None:
        if message is ANSWERED:
            return
        method = getattr(message, "method", None)
        is_request = method is not None and getattr(message, "id", None) is not None
        if self._workspace is None and method not in (types.INITIALIZE, types.EXIT):
            if is_request:  # before `initialize`: LSP's ServerNotInitialized
                self._answer_error(message.id, JsonRpcServerNotInitialized,
                                   f"{method}: the server is not initialized yet")
            return
        if self._shutdown and method != types.EXIT:
            if is_request:  # after `shutdown`: LSP's InvalidRequest
                self._answer_error(message.id, JsonRpcInvalidRequest,
                                   f"{method}: the server is shutting down")
            return
        super().handle_message(message)

    def answer_parse_error(self, error: BaseException) -> None:
        """Answer a message that could not be read as JSON (its id unknown: null)."""
        self._answer_error(None, JsonRpcParseError,
                           f"the message is not JSON fuse-lsp can read ({type(error).__name__})")

    def _answer_error(self, msg_id: Any, kind: type[JsonRpcException], message: str) -> None:
        self._send_response(msg_id, None, kind(message).to_response_error())
