"""The server's state: the documents' analyses (cached per version), the
options, the pending diagnostics pushes, and the error guard every handler
wears.  Feature modules import from here; nothing here imports a feature.
"""
from __future__ import annotations

import asyncio
import dataclasses
import functools
import gc
import logging
import os
import threading
import traceback
from dataclasses import dataclass, fields
from pathlib import Path
from typing import Any, Callable, NamedTuple, TypeVar
from urllib.parse import unquote

from lsprotocol import types
from pygls.exceptions import JsonRpcException
from pygls.lsp.server import LanguageServer
from pygls.uris import to_fs_path
from pygls.workspace import TextDocument

from fuse_lang import __version__
from fuse_lang.check import Analysis, Analyzer, analyze
from fuse_lang.check.imports import SHARED_CACHE, ImportCache
from fuse_lang.front.diagnostics import Diagnostic
from fuse_lang.front.program_size import too_large
from fuse_lang.front.span import LineIndex
from fuse_lang.front.syntax import binary_text, decode
from fuse_lang.ide.imported import depends_on
from fuse_lang.ide.semantic_tokens import TokenCache
from fuse_lang.run.backends import BACKENDS, PRECISIONS
from fuse_lang.run.train.optimizers import OPTIMIZERS
from fuse_lang.speed.gc_pause import gc_frozen_after

from .convert import Converter
from .protocol import FuseProtocol
from .run_budget import RunBudget

log = logging.getLogger("fuse_lsp")
F = TypeVar("F", bound=Callable[..., Any])


@dataclass
class Options:
    """The server's options: initialization options or `workspace/configuration`
    (section "fuse"), with defaults for everything."""

    backend: str = "numpy"  # default backend for fuse.run
    device: str = "cpu"  # default device for fuse.run
    precision: str = "fp32"  # default precision for fuse.run (fp32, fp64, bf16, fp16)
    # bytes all the runs going on may use together (None: half the free memory)
    memory_limit: int | None = None
    max_concurrent_runs: int = 2  # runs computing at once; more wait (fuse_lsp.run_budget)
    run_time_limit: int = 60  # seconds a run may compute before it is stopped
    run_trace: bool = False  # whether fuse.run records a trace (ExecutionConfig.trace)
    allow_sink_writes: bool = False  # whether a run from the editor may write sinks
    debounce_ms: int = 150  # quiet time after an edit before diagnostics are computed
    # fuse.train's defaults (a request's arguments win; fuse_lsp.training)
    train_optimizer: str = "adam"
    train_learning_rate: float = 0.01
    train_steps: int = 100
    train_batch: str = ""  # "n=64": minibatches of 64 positions of index n; "": all data
    train_seed: int = 0

    def update(self, data: Any) -> list[str]:
        """Take the known keys of a settings object (camelCase or snake_case); a
        value of the wrong kind or out of its range (see _BOUNDS, _CHOICES) is
        ignored, the value before kept: a warning for each is returned."""
        if data is None:
            return []
        if not isinstance(data, dict):
            return [f"fuse settings: expected an object, got {type(data).__name__}; ignored"]
        data = data.get("fuse", data) if isinstance(data.get("fuse"), dict) else data
        warnings = []
        for field in fields(self):
            camel = "".join(word.capitalize() if k else word
                            for k, word in enumerate(field.name.split("_")))
            for key in dict.fromkeys((field.name, camel)):  # `backend`: one key, one warning
                if key in data and data[key] is not None:
                    value, problem = _checked(field.name, data[key], getattr(self, field.name))
                    if problem is None:
                        setattr(self, field.name, value)
                    else:
                        warnings.append(f"fuse settings: {key} = {data[key]!r} ignored "
                                        f"({problem}); keeping {getattr(self, field.name)!r}")
        return warnings


# The settings' ranges (inclusive), documented in docs/lsp.md: a debounce of
# 10^12 ms would mean diagnostics never arrive.
_BOUNDS = {"debounce_ms": (0, 10_000), "memory_limit": (1, 1 << 60),
           "max_concurrent_runs": (1, 64), "run_time_limit": (1, 86_400),
           "train_steps": (0, 10_000_000), "train_seed": (0, 2**32 - 1)}
_FLOAT_BOUNDS = {"train_learning_rate": (1e-12, 1e6)}
_CHOICES = {"backend": tuple(BACKENDS), "precision": PRECISIONS,
            "train_optimizer": OPTIMIZERS}


def _checked(name: str, value: Any, current: Any) -> tuple[Any, str | None]:
    """The setting's value as the server keeps it, or why it is refused."""
    if name in _BOUNDS:
        low, high = _BOUNDS[name]
        whole = isinstance(value, int) or (isinstance(value, float) and value.is_integer())
        if isinstance(value, bool) or not whole:
            return None, "expected a whole number"
        if not low <= value <= high:
            return None, f"expected {low} to {high}"
        return int(value), None
    if name in _FLOAT_BOUNDS:
        low, high = _FLOAT_BOUNDS[name]
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            return None, "expected a number"
        if not low <= value <= high:
            return None, f"expected {low:g} to {high:g}"
        return float(value), None
    if name == "train_batch" and isinstance(value, str) and value.strip():
        index, sep, size = value.partition("=")
        if not (sep and index.strip().isidentifier() and size.strip().isdigit()
                and int(size) >= 1):
            return None, "expected INDEX=N, as n=64, or an empty string"
    if isinstance(current, bool):
        return (value, None) if isinstance(value, bool) else (None, "expected true or false")
    if not isinstance(value, str):
        return None, "expected a string"
    if name in _CHOICES and value not in _CHOICES[name]:
        return None, f"expected one of {', '.join(_CHOICES[name])}"
    return value, None


class Feature(NamedTuple):
    """One LSP method a feature module serves (server.py registers them all)."""

    method: str
    handler: Callable[..., Any]
    options: Any = None  # the method's registration options, if any


class Command(NamedTuple):
    """One `workspace/executeCommand` command a feature module serves."""

    name: str
    handler: Callable[..., Any]


class DocumentTooLarge(Exception):
    """The document is over the program size limit: it is not analysed, its one
    diagnostic is `diagnostic`, and every feature answers empty (see `safe`)."""

    def __init__(self, diagnostic: Diagnostic, converter: Converter) -> None:
        super().__init__(diagnostic.message)
        self.diagnostic = diagnostic
        self.converter = converter


class DocumentUnavailable(Exception):
    """A request names a document that is not open and whose file cannot be read
    as text (deleted, never saved, not a file: URI): every feature answers empty."""


def file_path(uri: str) -> str | None:
    """The path of a `file:` URI; None for another scheme (`untitled:`, ...).
    `file://localhost/p` is `/p` (RFC 8089: the local host), not the network
    share `//localhost/p` pygls's to_fs_path makes of it (imports beside such a
    document were looked for on that share)."""
    if not uri.startswith("file:"):
        return None
    if uri[:17].lower() == "file://localhost/":
        uri = "file:///" + uri[17:]
    return to_fs_path(uri)


def closed_text(uri: str) -> str:
    """The text of a document that is not open: its file as it is now."""
    path = file_path(uri)
    if not path:
        raise DocumentUnavailable(f"{uri} is not open")
    try:
        text, problem = decode(Path(path).read_bytes())
    except OSError as error:
        raise DocumentUnavailable(f"{uri} is not open and cannot be read: "
                                  f"{error.strerror or error}") from None
    if problem is not None:
        raise DocumentUnavailable(f"{uri} is not open and {problem.message}")
    return text


class FuseServer(LanguageServer):
    def __init__(self) -> None:
        super().__init__("fuse-lsp", __version__,
                         text_document_sync_kind=types.TextDocumentSyncKind.Incremental,
                         protocol_cls=FuseProtocol)
        self.options = Options()
        self.run_budget = RunBudget()  # one memory budget and slots for all runs
        self.pull_diagnostics = False  # decided from the client's capabilities
        # the pending (debounced) diagnostics push of each document
        self.pushes: dict[str, asyncio.TimerHandle] = {}
        self._analyses: dict[str, tuple[int | None, str, Analysis]] = {}
        # one incremental analyzer per open document: after an edit only the
        # statements whose text changed are parsed and checked again
        self._analyzers: dict[str, Analyzer] = {}
        self._token_caches: dict[str, TokenCache] = {}
        # the files documents import, parsed once per version for all documents; an
        # open document's text is read instead of its file (check/imports.py).  The
        # process's own cache: every analysis made in the server reads the open texts,
        # a run's, a training's and their cones' included (what the editor shows is
        # what runs: a run read an open library's saved text, its diagnostics its text)
        self.import_cache = SHARED_CACHE
        self._lock = threading.Lock()
        # each document's last successful run (fuse_lsp.running.LastRun): its
        # pictures (fuse.plot) and the values its hover shows
        self.last_runs: dict[str, Any] = {}
        self.markdown_images = False  # whether hovers may hold a picture (lifecycle.py)

    # ---------------------------------------------------------- analysis
    def analysis(self, uri: str) -> tuple[Analysis, Converter]:
        """The analysis of the document's current text (cached per version), and
        the converter for that text.  Raises DocumentTooLarge past the size limit;
        a document that is not open is its file as it is now, analysed afresh and
        kept nowhere (DocumentUnavailable: no such file, or not text)."""
        document = self.open_document(uri)
        if document is None:
            text = closed_text(uri)
            version = None
        else:
            text = document.source
            version = document.version
        oversized = too_large(text)
        if oversized is not None:
            self.forget(uri, closed=False)
            with self._lock:
                self._analyzers.pop(uri, None)  # its memory of the last version, too
            raise DocumentTooLarge(oversized, Converter(text, LineIndex(text),
                                                        self.workspace.position_encoding))
        if document is None:  # (not kept: a closed document gets no diagnostics pushed)
            analysis = self._analyze(uri, text, keep=False)
            return analysis, Converter(text, analysis.lines, self.workspace.position_encoding)
        with self._lock:
            cached = self._analyses.get(uri)
        if cached is not None and cached[0] == version and cached[1] == text:
            analysis = cached[2]
        else:
            analysis = self._analyze(uri, text)
            with self._lock:
                retired = self._analyses.get(uri)
                self._analyses[uri] = (version, text, analysis)
            _let_go_later(retired)
        return analysis, Converter(text, analysis.lines, self.workspace.position_encoding)

    def open_document(self, uri: str) -> TextDocument | None:
        """The open document of `uri`, or None.  pygls keeps its documents by their
        URIs unquoted (`file:///a%20b.fuse` as `file:///a b.fuse`): looked up by the
        URI as the client sent it, a path with a space or a letter past ASCII (which
        every client percent-encodes) was never open."""
        return self.workspace.text_documents.get(unquote(uri))

    def open_uris(self) -> list[str]:
        """The open documents' URIs, as the client spelled them in `didOpen`."""
        return [document.uri for document in list(self.workspace.text_documents.values())]

    def _analyze(self, uri: str, text: str, keep: bool = True) -> Analysis:
        path = file_path(uri)
        base_dir = Path(path).parent if path else Path.cwd()
        binary = binary_text(text)
        if binary is not None:  # what `fuse check` says of such a file: that alone
            return dataclasses.replace(analyze("", path, base_dir), text=text,
                                       lines=LineIndex(text), diagnostics=(binary,))
        if "import" in text:
            self.note_open_texts()
        with self._lock:
            analyzer = (self._analyzers.pop(uri, None) if keep else None) or \
                Analyzer(import_cache=self.import_cache)
        try:
            # The analysis lives until the next edit and holds no reference
            # cycles: keep the cycle collector from scanning its objects again
            # and again (on a large file a full pass takes longer than the
            # analysis).  They are freed by reference counting as usual.
            with gc_frozen_after():
                return analyzer.analyze(text, path, base_dir)
        finally:
            if keep:
                with self._lock:
                    # a handler on another thread may have made its own meanwhile;
                    # either is fine to keep
                    self._analyzers.setdefault(uri, analyzer)

    def note_open_texts(self) -> ImportCache:
        """The import cache, told the open documents' texts as they are now (read
        instead of their files): before any analysis that may import them."""
        self.import_cache.open_texts = self.open_texts()
        return self.import_cache

    def open_texts(self) -> dict[str, str]:
        """The open documents' texts by their files' absolute paths."""
        return {os.path.normpath(os.path.abspath(path)): document.source
                for document in list(self.workspace.text_documents.values())
                if (path := file_path(document.uri))}

    def importers(self, path: str) -> list[str]:
        """The documents whose last analysis imports the file at `path` (directly or
        not), or looked for it and did not find it: their diagnostics change with it."""
        path = os.path.normpath(os.path.abspath(path))
        with self._lock:
            cached = list(self._analyses.items())
        return [uri for uri, (_, _, analysis) in cached if depends_on(analysis, path)]

    def token_cache(self, uri: str) -> TokenCache:
        """The document's semantic-token cache (see fuse_lang.ide.semantic_tokens.TokenCache)."""
        with self._lock:
            cache = self._token_caches.get(uri)
            if cache is None:
                cache = self._token_caches[uri] = TokenCache()
            return cache

    def forget(self, uri: str, closed: bool = True) -> None:
        """Drop the document's analysis (it is made again when next asked for), and
        when the document is closed, its analyzer's memory of earlier versions and
        its last run."""
        with self._lock:
            self._analyses.pop(uri, None)
            if closed:
                self._analyzers.pop(uri, None)
                self._token_caches.pop(uri, None)
                # its last run's values too: a document opened again starts its
                # versions again, and the old values would pass for current ones
                self.last_runs.pop(uri, None)
        if closed:
            # let the collector see everything again once (see _analyze): what
            # reference cycles were frozen since are reclaimed
            gc.unfreeze()

    def report_server_error(self, error: Exception, source: Any) -> None:
        if source is JsonRpcException and isinstance(error, (ValueError, RecursionError)):
            # the reading loop's: a message json.loads refused (or too deep for it)
            self.protocol.answer_parse_error(error)  # type: ignore[attr-defined]
            return
        super().report_server_error(error, source)

    def warn(self, message: str) -> None:
        """A warning in the client's log (window/logMessage)."""
        log.warning(message)
        try:
            self.window_log_message(types.LogMessageParams(type=types.MessageType.Warning,
                                                           message=message))
        except Exception:  # noqa: BLE001 - the client may be gone
            pass

    def refused(self, what: str, error: BaseException) -> None:
        """The client answered the server's request (`what`) with an error: a client
        may (LSP), and the server goes on without; one line in the log, not an error
        with a traceback.  Anything else that failed is one (log_error)."""
        if isinstance(error, JsonRpcException):
            self.warn(f"fuse-lsp: the client refused {what}: {error}; going on without")
        else:
            self.log_error(what, error)

    def log_error(self, where: str, error: BaseException) -> None:
        message = f"fuse-lsp: {where} failed: {error!r}\n{traceback.format_exc()}"
        log.error(message)
        try:
            self.window_log_message(types.LogMessageParams(type=types.MessageType.Error,
                                                           message=message))
        except Exception:  # noqa: BLE001 - the client may be gone
            pass


def _let_go_later(value: object) -> None:
    """Let `value` (the last version's analysis) go once the request or push being
    served is done: freeing a large file's analysis takes tens of milliseconds,
    better spent after its successor's diagnostics are out."""
    if value is None:
        return
    try:
        loop = asyncio.get_running_loop()
    except RuntimeError:
        return  # (not on the server's loop: it goes now)
    loop.call_soon(_let_go, value)  # (the callback holds it until it has run)


def _let_go(value: object) -> None:
    pass


def safe(default: Any = None) -> Callable[[F], F]:
    """A handler's exception becomes a logged error and `default` as the answer
    (called, when callable: a fresh empty list or report each time); a document
    over the size limit gets `default` too, without an error."""

    def wrap(handler: F) -> F:
        @functools.wraps(handler)
        def run(ls: FuseServer, *args: Any, **kwargs: Any) -> Any:
            try:
                return handler(ls, *args, **kwargs)
            except (DocumentTooLarge, DocumentUnavailable):  # not an error: the
                return default() if callable(default) else default  # document is not analysed
            except Exception as error:  # noqa: BLE001 - never crash the server
                ls.log_error(handler.__name__, error)
                return default() if callable(default) else default

        return run  # type: ignore[return-value]

    return wrap
