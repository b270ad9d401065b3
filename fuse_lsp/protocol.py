"""pygls's protocol, made to keep two promises of LSP it does not keep alone.

- Lines end at "\\n", "\\r\\n" or "\\r", and nowhere else: the server's copy of a
  document splits and edits lines as the editor does (pygls uses
  str.splitlines, which also ends lines at U+2028, U+0085, "\\v", "\\f", ...),
  through the same Converter as every handler.
- Every request (a message with a method and an id) gets exactly one answer,
  checked in this order: a message that is not JSON (or nested too deep to
  read) gets ParseError (-32700, id null; `answer_parse_error`, called from the
  reading loop's error handler); one that is not a JSON-RPC 2.0 object (a batch,
  a number, no `"jsonrpc": "2.0"`, a method that is not a string, an id that is
  not an integer, a string or null) gets InvalidRequest (-32600; id null when the
  id itself is the fault); a request before `initialize` gets
  ServerNotInitialized (-32002) and one after `shutdown` InvalidRequest
  (-32600); a method the server does not serve gets MethodNotFound (-32601);
  params that do not fit the method's types (missing, not an object, a string
  for a position, a number for a uri: JSON's types as they are, never coerced)
  get InvalidParams (-32602); anything else that fails while a
  request is handed over gets InternalError (-32603).  A notification that
  cannot be handled is logged, never answered (JSON-RPC answers no
  notification).  pygls alone drops such requests: it structures each JSON
  object inside json.loads (the reading loop's object_hook), where a failure
  leaves only a log line; here `structure_message` keeps the objects as read
  and `handle_message` checks and structures the whole message.
"""
from __future__ import annotations

import logging
import re
from typing import Any, Generator
from urllib.parse import unquote

from lsprotocol import types
from pygls.exceptions import (
    JsonRpcException,
    JsonRpcInternalError,
    JsonRpcInvalidParams,
    JsonRpcInvalidRequest,
    JsonRpcMethodNotFound,
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
    def update_text_document(self, text_doc: types.VersionedTextDocumentIdentifier,
                             change: types.TextDocumentContentChangeEvent) -> None:
        """A change of a document that is not open is the client's mistake: logged
        (pygls's KeyError became an error shown to the user)."""
        if unquote(text_doc.uri) not in self.text_documents:
            log.warning("fuse-lsp: a change of %s, which is not open, was ignored",
                        text_doc.uri)
            return
        super().update_text_document(text_doc, change)


    def _create_text_document(self, doc_uri: str, source: str | None = None,
                              version: int | None = None,
                              language_id: str | None = None) -> TextDocument:
        return FuseTextDocument(doc_uri, source=source, version=version,
                                language_id=language_id, sync_kind=self._sync_kind,
                                position_codec=self._position_codec)


class _Answered(logging.Filter):
    """Keeps out of the log pygls's traceback of a request a handler refused on
    purpose with InvalidParams (a rename to a name already taken, a command's bad
    arguments): the client has that error as its answer; no failure to log."""

    def filter(self, record: logging.LogRecord) -> bool:
        return not (record.exc_info and isinstance(record.exc_info[1], JsonRpcInvalidParams))


_ANSWERED = _Answered()


class FuseProtocol(LanguageServerProtocol):
    def __init__(self, server: Any, converter: Any) -> None:
        super().__init__(server, converter)
        logging.getLogger("pygls.protocol.json_rpc").addFilter(_ANSWERED)
        # params' strings, integers, numbers and Booleans as JSON gives them:
        # cattrs alone makes a string of anything (a uri of 7 is "7") and an
        # integer of a string ("0"), which answers params that do not fit
        for kind in (str, int, float, bool):
            converter.register_structure_hook(kind, _exactly(kind))

    # the process's exit status (fuse_lsp.cli): LSP's 1 for an `exit` that no
    # `shutdown` came before (pygls's own sys.exit(1) is lost in its reading loop,
    # which takes SystemExit for the end of the session), 0 for one after it or
    # for the end of the input
    exit_code = 0

    @lsp_method(types.EXIT)
    def lsp_exit(self, *args: Any) -> Generator[Any, Any, None]:
        self.exit_code = 0 if self._shutdown else 1
        yield from super().lsp_exit(*args)

    @lsp_method(types.SHUTDOWN)
    def lsp_shutdown(self, *args: Any) -> Generator[Any, Any, None]:
        """pygls's shutdown, the requests still going on cancelled over a copy of
        their table: a cancelled one leaves it at once (a run's), and pygls's loop
        over the table itself then failed ("dictionary changed size during
        iteration"): `shutdown` during a run was answered InternalError, the
        server never shut down, and its `exit` was taken for one without it."""
        if (user_handler := self.fm.features.get(types.SHUTDOWN)) is not None:
            yield user_handler, args, None
        current_id = self.msg_id  # (not this request's own future)
        for msg_id, future in list(self._request_futures.items()):
            if msg_id != current_id and not future.done():
                future.cancel()
        self._shutdown = True
        return None

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
        """Each JSON object as read, untouched.  pygls structures every object as
        json.loads reads it (the reading loop's object_hook, inner objects first),
        so a message it cannot structure ends as an exception in that loop, which
        answers nothing; `handle_message` structures the whole message instead."""
        return data

    def handle_message(self, message: Any) -> None:
        """Check a message as read (`message`: what json.loads made of it), then
        structure it and let pygls handle it; a request that cannot be handled is
        answered with its error here (the module's docstring lists them)."""
        request = isinstance(message, dict) and "method" in message and "id" in message
        try:
            structured = self._checked(message)
            if structured is not None:
                super().handle_message(structured)
        except Exception as error:  # noqa: BLE001 - a request is answered, whatever failed
            log.exception("fuse-lsp: a message could not be handled")
            if request:
                msg_id = message["id"] if _is_id(message["id"]) else None
                self._answer_error(msg_id, JsonRpcInternalError,
                                   f"{message['method']}: {type(error).__name__}")

    def _checked(self, data: Any) -> Any:
        """The message structured, or None when it was answered (a request) or
        logged (a notification or a response) as one that cannot be handled."""
        if not isinstance(data, dict):
            self._answer_error(None, JsonRpcInvalidRequest,
                               "a message is one JSON object (LSP sends no batches)")
            return None
        method = data.get("method")
        request = "method" in data and "id" in data  # (an id, even null: pygls's rule)
        problem = _envelope_problem(data)
        if problem is not None:
            if request or ("id" in data and "result" not in data and "error" not in data):
                msg_id = data["id"] if _is_id(data["id"]) else None
                self._answer_error(msg_id, JsonRpcInvalidRequest, f"the message {problem}")
            log.warning("fuse-lsp: a message that %s was not handled", problem)
            return None
        if self._workspace is None and method not in (types.INITIALIZE, types.EXIT):
            if request:  # before `initialize`: LSP's ServerNotInitialized
                self._answer_error(data["id"], JsonRpcServerNotInitialized,
                                   f"{method}: the server is not initialized yet")
            return None
        if method == types.INITIALIZE and self._workspace is not None:
            if request:  # LSP: once; pygls would start again, dropping the open documents
                self._answer_error(data["id"], JsonRpcInvalidRequest,
                                   "initialize: the server is initialized already")
            return None
        if self._shutdown and method != types.EXIT:
            if request:  # after `shutdown`: LSP's InvalidRequest
                self._answer_error(data["id"], JsonRpcInvalidRequest,
                                   f"{method}: the server is shutting down")
            return None
        try:
            return super().structure_message(data)
        except JsonRpcException:
            if not request:  # a notification (or a response) is never answered
                log.warning("fuse-lsp: a message (%s) that does not fit its types was "
                            "not handled", method or "a response")
            elif not self._serves(method):
                self._answer_error(data["id"], JsonRpcMethodNotFound,
                                   f"{method}: no such method")
            else:
                self._answer_error(data["id"], JsonRpcInvalidParams,
                                   f"{method}: the params do not fit the method")
            return None

    def _serves(self, method: str) -> bool:
        return method in self.fm.builtin_features or method in self.fm.features

    def answer_parse_error(self, error: BaseException) -> None:
        """Answer a message that could not be read as JSON (its id unknown: null)."""
        self._answer_error(None, JsonRpcParseError,
                           f"the message is not JSON fuse-lsp can read ({type(error).__name__})")

    def _answer_error(self, msg_id: Any, kind: type[JsonRpcException], message: str) -> None:
        """An error response, its id `null` too when unknown (pygls's response
        leaves a null id out, which JSON-RPC does not allow)."""
        error = self._converter.unstructure(kind(message).to_response_error())
        self._send_data({"jsonrpc": "2.0", "id": msg_id, "error": error})


_LENGTH = re.compile(rb"\s*content-length\s*:\s*(\d+)\s*", re.IGNORECASE)


class HeaderLines:
    """Standard input as pygls's reading loop reads it, each header line as that
    loop matches it.  The loop takes only `Content-Length: N\\r\\n` exactly, and a
    header as a client may write it (HTTP's names, which LSP's headers are, are
    case-insensitive: `content-length: N`; `Content-Length:N`; lines ended by a
    bare "\\n") was skipped: the message was never read, its request never
    answered, and its body read as the next headers.  The loop reads headers by
    lines and a body by its length, so only lines are rewritten."""

    def __init__(self, stream: Any) -> None:
        self._stream = stream

    def readline(self) -> bytes:
        line = self._stream.readline()
        if not line:
            return line  # the end of the input
        if not line.strip():
            return b"\r\n"  # the end of a message's headers
        length = _LENGTH.fullmatch(line)
        return b"Content-Length: %d\r\n" % int(length.group(1)) if length else line

    def read(self, size: int) -> bytes:
        return self._stream.read(size)


def _is_id(value: Any) -> bool:
    """LSP's id: an integer, a string or null (a Boolean is not an integer)."""
    return value is None or (isinstance(value, (int, str)) and not isinstance(value, bool))


def _exactly(kind: type) -> Any:
    """A structure hook that takes a JSON value of `kind` (an integer for a float
    too) and refuses any other (a Boolean is not an integer).  It serves
    `kind`'s subclasses too, LSP's enumerations (an IntEnum is an int): the
    value is made one of them, as cattrs does (an unknown one is refused)."""
    def structure(value: Any, to: Any) -> Any:
        if kind is float and isinstance(value, int) and not isinstance(value, bool):
            value = float(value)
        if not isinstance(value, kind) or (kind is not bool and isinstance(value, bool)):
            raise TypeError(f"{value!r} is not a {kind.__name__}")
        return value if to is kind else to(value)
    return structure


def _envelope_problem(data: dict[str, Any]) -> str | None:
    """What keeps `data` from being a JSON-RPC 2.0 request, notification or
    response (as words after "the message"), or None."""
    if data.get("jsonrpc") != "2.0":
        return 'does not say "jsonrpc": "2.0"'
    if "method" in data and not isinstance(data["method"], str):
        return "has a method that is not a string"
    if "id" in data and not _is_id(data["id"]):
        return "has an id that is not an integer, a string or null"
    if "method" not in data and "result" not in data and "error" not in data:
        return "is neither a request, a notification nor a response"
    return None
