"""The Fuse language server: a thin pygls layer over fuse_lang's pure functions.

Handlers fetch the document's analysis (cached per version), convert
positions in one place (fuse_lsp.convert), call one function of fuse_lang
and wrap its plain data in lsprotocol types.  A handler that fails logs the
error and answers with an empty result: the server keeps serving.
"""
from __future__ import annotations

import functools
import gc
import logging
import threading
import traceback
from pathlib import Path
from typing import Any, Callable, TypeVar

from lsprotocol import types
from pygls.lsp.server import LanguageServer
from pygls.uris import to_fs_path

from fuse_lang import __version__
from fuse_lang.check import Analysis, Analyzer
from fuse_lang.ide.outline import TokenCache

from .config import Options
from .convert import Converter

log = logging.getLogger("fuse_lsp")
F = TypeVar("F", bound=Callable[..., Any])


class FuseServer(LanguageServer):
    def __init__(self) -> None:
        super().__init__("fuse-lsp", __version__,
                         text_document_sync_kind=types.TextDocumentSyncKind.Incremental)
        self.options = Options()
        self.pull_diagnostics = False  # decided from the client's capabilities
        self._analyses: dict[str, tuple[int | None, str, Analysis]] = {}
        # one incremental analyzer per open document: after an edit only the
        # statements whose text changed are parsed and checked again
        self._analyzers: dict[str, Analyzer] = {}
        self._token_caches: dict[str, TokenCache] = {}
        self._lock = threading.Lock()

    # ---------------------------------------------------------- analysis
    def analysis(self, uri: str) -> tuple[Analysis, Converter] | None:
        """The analysis of the document's current text (cached per version)."""
        document = self.workspace.get_text_document(uri)
        text = document.source
        version = document.version
        with self._lock:
            cached = self._analyses.get(uri)
        if cached is not None and cached[0] == version and cached[1] == text:
            analysis = cached[2]
        else:
            path = to_fs_path(uri) if uri.startswith("file:") else None
            base_dir = Path(path).parent if path else Path.cwd()
            with self._lock:
                analyzer = self._analyzers.pop(uri, None) or Analyzer()
            collecting = gc.isenabled()
            gc.disable()
            try:
                analysis = analyzer.analyze(text, path, base_dir)
            finally:
                # The analysis lives until the next edit and holds no reference
                # cycles: keep the cycle collector from scanning its objects again
                # and again (on a large file a full pass takes longer than the
                # analysis).  They are freed by reference counting as usual.
                gc.freeze()
                if collecting:
                    gc.enable()
                with self._lock:
                    # a handler on another thread may have made its own meanwhile;
                    # either is fine to keep
                    self._analyzers.setdefault(uri, analyzer)
            with self._lock:
                self._analyses[uri] = (version, text, analysis)
        return analysis, Converter(text, analysis.lines, self.workspace.position_encoding)

    def token_cache(self, uri: str) -> TokenCache:
        """The document's semantic-token cache (see fuse_lang.ide.outline.TokenCache)."""
        with self._lock:
            cache = self._token_caches.get(uri)
            if cache is None:
                cache = self._token_caches[uri] = TokenCache()
            return cache

    def forget(self, uri: str, closed: bool = True) -> None:
        """Drop the document's analysis (it is made again when next asked for), and
        when the document is closed, its analyzer's memory of earlier versions."""
        with self._lock:
            self._analyses.pop(uri, None)
            if closed:
                self._analyzers.pop(uri, None)
                self._token_caches.pop(uri, None)
        if closed:
            # let the collector see everything again once (see analysis): what
            # reference cycles were frozen since are reclaimed
            gc.unfreeze()

    def log_error(self, where: str, error: BaseException) -> None:
        message = f"fuse-lsp: {where} failed: {error!r}\n{traceback.format_exc()}"
        log.error(message)
        try:
            self.window_log_message(types.LogMessageParams(type=types.MessageType.Error,
                                                           message=message))
        except Exception:  # noqa: BLE001 - the client may be gone
            pass


def safe(default: Any = None) -> Callable[[F], F]:
    """A handler's exception becomes a logged error and `default` as the answer."""

    def wrap(handler: F) -> F:
        @functools.wraps(handler)
        def run(ls: FuseServer, *args: Any, **kwargs: Any) -> Any:
            try:
                return handler(ls, *args, **kwargs)
            except Exception as error:  # noqa: BLE001 - never crash the server
                ls.log_error(handler.__name__, error)
                return default() if callable(default) else default

        return run  # type: ignore[return-value]

    return wrap


def create_server() -> FuseServer:
    from .features import actions, diagnostics, editing, navigation, outline

    server = FuseServer()
    for module in (diagnostics, navigation, outline, editing, actions):
        module.register(server)
    return server
