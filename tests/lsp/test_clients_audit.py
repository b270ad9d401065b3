"""What an audit of the server against clients the other tests do not speak as
found (Emacs's eglot, Helix, Kate, a hand-written JSON-RPC client: no workspace
folders, no capabilities, UTF-32 positions, file URIs percent-encoded): each test
is one fault as it was found, over stdio.  Raw JSON-RPC where a typed client
cannot say it (capabilities left out, a second `initialize`, `exit` alone)."""
from __future__ import annotations

import json

import pytest
import pytest_lsp
from lsprotocol import types
from pytest_lsp import ClientServerConfig, LanguageClient, client_capabilities

from .conftest import SERVER, WAIT_S, wait_for_push
from .test_malformed_requests import RawClient
from .test_run_bounds import LONG


class Session(RawClient):
    """A raw client that keeps every message it is not waiting for (`seen`)."""

    def __init__(self) -> None:
        super().__init__()
        self.seen: list[dict] = []

    def answer(self, msg_id) -> dict:
        for message in self.seen:  # (one that came while another was awaited)
            if "method" not in message and message.get("id") == msg_id:
                self.seen.remove(message)
                return message
        while True:
            message = self.messages.get(timeout=WAIT_S)
            if "method" not in message and message.get("id") == msg_id:
                return message
            self.seen.append(message)

    def request(self, msg_id, method: str, params=None) -> dict:
        message = {"jsonrpc": "2.0", "id": msg_id, "method": method}
        if params is not None:
            message["params"] = params
        self.send(message)
        return self.answer(msg_id)

    def notify(self, method: str, params=None) -> None:
        self.send({"jsonrpc": "2.0", "method": method, "params": params or {}})

    def start(self, capabilities: dict, **init) -> dict:
        result = self.request(1, "initialize", {"processId": None, "rootUri": None,
                                                "capabilities": capabilities, **init})
        self.notify("initialized")
        return result["result"]

    def server_requests(self, method: str | None = None) -> list[dict]:
        return [m for m in self.seen if "method" in m and "id" in m
                and (method is None or m["method"] == method)]

    def errors_shown(self) -> list[str]:
        """Errors in the client's log or shown to its user."""
        return [m["params"]["message"] for m in self.seen
                if m.get("method") in ("window/logMessage", "window/showMessage")
                and m["params"]["type"] == types.MessageType.Error]


@pytest.fixture
def raw():
    client = Session()
    yield client
    client.close()


TEXT = "X[i] = const([1.0, 2.0])\nY[i] = X[i] * 2\nexport Y\n"
AT_Y = {"line": 1, "character": 0}


def opened(raw: Session, uri: str, text: str = TEXT, version: int = 1) -> None:
    raw.notify("textDocument/didOpen", {"textDocument": {
        "uri": uri, "languageId": "fuse", "version": version, "text": text}})


def hover(raw: Session, msg_id, uri: str, position=None):
    return raw.request(msg_id, "textDocument/hover", {
        "textDocument": {"uri": uri}, "position": position or AT_Y})["result"]


# ------------------------------------------------ percent-encoded file URIs


@pytest_lsp.fixture(config=ClientServerConfig(server_command=SERVER))
async def eglot(lsp_client: LanguageClient, tmp_path):
    """Emacs 29's eglot: UTF-32 positions first, one root and no workspace folders."""
    result = await lsp_client.initialize_session(types.InitializeParams(
        capabilities=client_capabilities("emacs@v29.1"), root_uri=tmp_path.as_uri()))
    lsp_client.position_encoding = result.capabilities.position_encoding
    yield lsp_client
    await lsp_client.shutdown_session()


SPACED = 'A[i] = const([1, 2])\nB = "😀"; C[i] = A[i] + Nope[i]\nexport C\n'


async def test_a_file_whose_uri_is_percent_encoded_is_an_open_document(eglot, tmp_path):
    """A path with a space or a letter past ASCII, which every client sends
    percent-encoded (`my%20dir/%C3%BCn%C3%AF.fuse`): pygls keeps its documents by
    the URI unquoted, the server looked them up as sent, and so took every such
    document for one that is not open: its file on disk was analysed instead of
    the editor's text (in Neovim 0.11, the diagnostics of an edited buffer stayed
    those of the saved file), or, with no file, no diagnostics were pushed (an error
    with a traceback in the log instead) and hover, definition and symbols answered
    nothing; workspace symbols named it by an unquoted URI, `my dir/ünï.fuse`,
    which is not a URI."""
    folder = tmp_path / "my dir"
    folder.mkdir()
    path = folder / "ünï.fuse"
    path.write_text("# saved before the edits\n", encoding="utf-8")  # (the editor's text wins)
    uri = path.as_uri()
    assert "%20" in uri and "%C3%BC" in uri
    eglot.text_document_did_open(types.DidOpenTextDocumentParams(text_document=types.
                                 TextDocumentItem(uri=uri, language_id="fuse", version=1,
                                                  text=SPACED)))
    diagnostics = await wait_for_push(eglot, uri, 1)
    [undefined] = [d for d in diagnostics if d.code == "undefined-tensor"]
    # (eglot's encoding is UTF-32: the emoji is one code unit)
    assert eglot.position_encoding == types.PositionEncodingKind.Utf32
    column = len('B = "😀"; C[i] = A[i] + ')
    assert (undefined.range.start.line, undefined.range.start.character) == (1, column)
    found = await eglot.text_document_hover_async(types.HoverParams(
        text_document=types.TextDocumentIdentifier(uri=uri),
        position=types.Position(line=1, character=column - 6)))
    assert found is not None and "A[i:2]" in found.contents.value
    symbols = await eglot.workspace_symbol_async(types.WorkspaceSymbolParams(query="C"))
    assert uri in {s.location.uri for s in symbols if s.name == "C"}
    assert errors_logged(eglot) == []


def errors_logged(client: LanguageClient) -> list[str]:
    return [m.message for m in client.log_messages if m.type == types.MessageType.Error]


def test_a_raw_percent_encoded_uri_gets_its_diagnostics_and_answers(raw, tmp_path):
    """The same, said by a hand-written client: a document never saved, whose
    folder does not exist either."""
    raw.start({})
    uri = (tmp_path / "not here" / "n°1.fuse").as_uri()
    opened(raw, uri, TEXT + "Z[i] = Nope[i]\n")
    assert hover(raw, 2, uri) is not None
    definition = raw.request(3, "textDocument/definition", {
        "textDocument": {"uri": uri}, "position": {"line": 1, "character": 7}})["result"]
    assert [d["uri"] for d in definition] == [uri]
    pushed = raw.request(4, "textDocument/diagnostic", {"textDocument": {"uri": uri}})
    assert any(d["code"] == "undefined-tensor" for d in pushed["result"]["items"])
    assert raw.errors_shown() == []


def test_a_file_uri_naming_localhost_is_a_local_file(raw, tmp_path):
    """`file://localhost/p` is the local file `/p` (RFC 8089); pygls made the
    network share `//localhost/p` of it, where the document's imports were looked
    for ("cannot import `lib.fuse`: it does not exist (looked for //localhost/...)")."""
    raw.start({})
    (tmp_path / "lib.fuse").write_text("X[i] = const([1.0])\n", encoding="utf-8")
    uri = "file://localhost" + tmp_path.as_uri()[len("file://"):] + "/main.fuse"
    opened(raw, uri, 'import "lib.fuse" as l\nY[i] = l::X[i]\nexport Y\n')
    pulled = raw.request(2, "textDocument/diagnostic", {"textDocument": {"uri": uri}})
    assert pulled["result"]["items"] == []


# ------------------------------------------------ the session's lifecycle


def test_exit_without_shutdown_ends_the_server_with_status_1(raw):
    """LSP: `exit` exits with 1 when no `shutdown` came before it.  pygls's
    sys.exit(1) was taken by its reading loop for the end of the session: 0."""
    raw.start({})
    raw.notify("exit")
    assert raw.process.wait(WAIT_S) == 1


def test_a_second_initialize_is_refused_and_the_documents_stay_open(raw):
    """`initialize` may be sent once: a second one was answered as the first, pygls
    making a new workspace that held none of the open documents (hover and rename
    then answered nothing for them)."""
    raw.start({})
    opened(raw, "untitled:1")
    answer = raw.request(2, "initialize", {"processId": None, "rootUri": None,
                                           "capabilities": {}})
    assert answer["error"]["code"] == -32600 and "initialized already" in \
        answer["error"]["message"]
    assert hover(raw, 3, "untitled:1") is not None


def test_shutdown_while_a_run_goes_on_shuts_the_server_down(raw):
    """An editor closed (or its server restarted) during a run: pygls cancelled the
    requests going on while looping over their table, which the cancelled run left
    at once; `shutdown` was answered InternalError ("dictionary changed size during
    iteration"), and the `exit` after it ended the server with status 1."""
    raw.start({})
    opened(raw, "untitled:long", LONG)
    raw.send({"jsonrpc": "2.0", "id": 2, "method": "workspace/executeCommand",
              "params": {"command": "fuse.run", "arguments": ["untitled:long"]}})
    assert raw.request(3, "shutdown") == {"jsonrpc": "2.0", "id": 3, "result": None}
    ran = raw.answer(2)  # answered (cancelled), not left without an answer
    assert ran.get("error", {}).get("code") == -32800 or "result" in ran, ran
    raw.notify("exit")
    assert raw.process.wait(WAIT_S) == 0


@pytest.mark.parametrize("end", ["exit", "end of input"])
def test_a_server_ended_during_a_run_stops_the_run(raw, end):
    """A client that ends the session without `shutdown` (`exit` alone, or its
    end: a crash, a killed editor) while a run computes: the run went on to its end
    or its time limit (`runTimeLimit`, up to a day), and the process with it, after
    the session had ended.  The run is cancelled as the server ends."""
    raw.start({"window": {"workDoneProgress": True}},
              initializationOptions={"runTimeLimit": 86_400})
    opened(raw, "untitled:long", LONG)
    raw.send({"jsonrpc": "2.0", "id": 2, "method": "workspace/executeCommand",
              "params": {"command": "fuse.run", "arguments": ["untitled:long"]}})
    while not raw.server_requests("window/workDoneProgress/create"):
        raw.seen.append(raw.messages.get(timeout=WAIT_S))
    create = raw.server_requests("window/workDoneProgress/create")[0]
    raw.send({"jsonrpc": "2.0", "id": create["id"], "result": None})
    while True:  # until the run computes (its progress says so)
        message = raw.messages.get(timeout=WAIT_S)
        if message.get("method") == "$/progress" and \
                message["params"]["value"].get("message", "").startswith("running on"):
            break
    if end == "exit":
        raw.notify("exit")
    else:
        raw.process.stdin.close()
    assert raw.process.wait(WAIT_S) == (1 if end == "exit" else 0)


def test_a_change_or_save_of_a_document_never_opened_shows_no_error(raw):
    """A client's didChange of a document it never opened made pygls's KeyError an
    error shown to the user ("Error in server: KeyError"); its didSave, an error
    with a traceback in the log.  Both are logged in the server's own log only."""
    raw.start({})
    raw.notify("textDocument/didChange", {"textDocument": {"uri": "untitled:never",
                                                           "version": 2},
                                          "contentChanges": [{"text": TEXT}]})
    raw.notify("textDocument/didSave", {"textDocument": {"uri": "untitled:never"}})
    opened(raw, "untitled:1")
    assert hover(raw, 2, "untitled:1") is not None
    assert hover(raw, 3, "untitled:never") is None
    assert raw.errors_shown() == []


# ------------------------------------------------ a client that says nothing


def test_a_client_with_no_capabilities_gets_answers_it_can_read(raw):
    """A client that announces no capability at all (a hand-written one) reads
    only what LSP gives such a client: SymbolInformation for document symbols (it
    got DocumentSymbol, which it never said it takes), Command for code actions (it
    got CodeAction literals), and the server asks it nothing (no configuration, no
    registration, no progress token), through a run and settings changes."""
    raw.start({})
    opened(raw, "untitled:1", TEXT + "W = Nope\n")
    symbols = raw.request(2, "textDocument/documentSymbol",
                          {"textDocument": {"uri": "untitled:1"}})["result"]
    assert symbols and all("location" in s and "children" not in s for s in symbols)
    assert {s["name"] for s in symbols} >= {"X", "Y"}
    actions = raw.request(3, "textDocument/codeAction", {
        "textDocument": {"uri": "untitled:1"},
        "range": {"start": {"line": 3, "character": 0}, "end": {"line": 3, "character": 8}},
        "context": {"diagnostics": []}})["result"]
    assert actions and all(isinstance(a["command"], str) and "kind" not in a
                           and "edit" not in a for a in actions)
    raw.notify("workspace/didChangeConfiguration", {"settings": None})
    raw.notify("$/setTrace", {"value": "verbose"})
    raw.notify("$/cancelRequest", {"id": 3})  # (answered already)
    ran = raw.request(4, "workspace/executeCommand", {"command": "fuse.run",
                                                      "arguments": ["untitled:1"]})
    assert "result" in ran, ran
    assert hover(raw, 5, "untitled:1") is not None
    assert raw.server_requests() == []
    assert raw.errors_shown() == []


# ------------------------------------------------ watched files


WATCHING = {"workspace": {"didChangeWatchedFiles": {"dynamicRegistration": True}}}


def _registration(raw: Session) -> dict:
    """The server's client/registerCapability request, once it came."""
    while not raw.server_requests("client/registerCapability"):
        raw.seen.append(raw.messages.get(timeout=WAIT_S))
    return raw.server_requests("client/registerCapability")[0]


def test_a_client_that_can_watch_files_is_asked_to_watch_the_fuse_files(raw, tmp_path):
    """Neovim, Helix, Zed and Emacs's clients send `workspace/didChangeWatchedFiles`
    only for the globs a server registered; the server registered none, so a
    library changed on disk (by git, by another editor) stayed unseen by its
    importers' diagnostics until their next edit."""
    raw.start(WATCHING, rootUri=tmp_path.as_uri())
    asked = _registration(raw)
    [registration] = asked["params"]["registrations"]
    assert registration["method"] == "workspace/didChangeWatchedFiles"
    assert [w["globPattern"] for w in registration["registerOptions"]["watchers"]] == \
        ["**/*.fuse"]
    raw.send({"jsonrpc": "2.0", "id": asked["id"], "result": None})
    # and the events it then sends are followed: a library appears on disk
    main = tmp_path / "main.fuse"
    text = 'import "lib.fuse" as l\nY[i] = l::X[i]\nexport Y\n'
    main.write_text(text, encoding="utf-8")
    opened(raw, main.as_uri(), text)
    first = _push(raw, main.as_uri(), lambda d: any(x["code"] == "import-not-found" for x in d))
    assert first
    (tmp_path / "lib.fuse").write_text("X[i] = const([1.0])\n", encoding="utf-8")
    raw.notify("workspace/didChangeWatchedFiles", {"changes": [
        {"uri": (tmp_path / "lib.fuse").as_uri(), "type": 1}]})
    _push(raw, main.as_uri(), lambda d: not any(x["severity"] == 1 for x in d))


def _push(raw: Session, uri: str, wanted) -> list[dict]:
    """The diagnostics of the first push of `uri` that `wanted` takes."""
    while True:
        message = raw.messages.get(timeout=WAIT_S)
        raw.seen.append(message)
        if message.get("method") == "textDocument/publishDiagnostics" and \
                message["params"]["uri"] == uri and wanted(message["params"]["diagnostics"]):
            return message["params"]["diagnostics"]


def test_a_client_that_refuses_the_registration_is_served_as_before(raw):
    raw.start(WATCHING)
    asked = _registration(raw)
    raw.send({"jsonrpc": "2.0", "id": asked["id"],
              "error": {"code": -32601, "message": "no such method"}})
    opened(raw, "untitled:1")
    assert hover(raw, 2, "untitled:1") is not None
    assert raw.errors_shown() == [], json.dumps(raw.seen)[:2000]


def test_a_client_that_refuses_the_server_s_requests_sees_no_error(raw):
    """A client may answer the server's requests with an error: settings
    (`workspace/configuration`) and a run's progress token
    (`window/workDoneProgress/create`) refused put an error with the server's
    traceback in the client's log; the server goes on without them (one warning)."""
    raw.start({"workspace": {"configuration": True}, "window": {"workDoneProgress": True}})
    refuse = {"code": -32603, "message": "not now"}
    while not raw.server_requests("workspace/configuration"):
        raw.seen.append(raw.messages.get(timeout=WAIT_S))
    raw.send({"jsonrpc": "2.0", "id": raw.server_requests()[0]["id"], "error": refuse})
    opened(raw, "untitled:1")
    raw.send({"jsonrpc": "2.0", "id": 2, "method": "workspace/executeCommand",
              "params": {"command": "fuse.run", "arguments": ["untitled:1"]}})
    while not raw.server_requests("window/workDoneProgress/create"):
        raw.seen.append(raw.messages.get(timeout=WAIT_S))
    create = raw.server_requests("window/workDoneProgress/create")[0]
    raw.send({"jsonrpc": "2.0", "id": create["id"], "error": refuse})
    assert raw.answer(2)["result"]["ok"] is True
    assert raw.errors_shown() == []
    warned = [m["params"]["message"] for m in raw.seen if m.get("method") == "window/logMessage"]
    assert any("refused workspace/configuration" in w for w in warned), warned


# ------------------------------------------------ the wire


def test_headers_as_a_hand_written_client_writes_them_are_read(raw):
    """LSP's headers are HTTP's: names case-insensitive, a Content-Type before the
    length.  pygls reads `Content-Length: N\\r\\n` exactly: `content-length: N`,
    `Content-Length:N` or lines ended by "\\n" alone were skipped, the request never
    answered (the client hung) and its body taken for the next message's headers."""
    def send(msg_id, headers: bytes) -> dict:
        body = json.dumps({"jsonrpc": "2.0", "id": msg_id, "method": "textDocument/hover",
                           "params": {"textDocument": {"uri": "untitled:1"},
                                      "position": AT_Y}}).encode()
        raw.process.stdin.write(headers % len(body) + body)
        raw.process.stdin.flush()
        return raw.answer(msg_id)

    raw.start({})
    opened(raw, "untitled:1")
    for msg_id, headers in enumerate([
            b"Content-Type: application/vscode-jsonrpc; charset=utf-8\r\n"
            b"Content-Length: %d\r\n\r\n",
            b"content-length: %d\r\n\r\n",
            b"Content-Length:%d\r\n\r\n",
            b"CONTENT-LENGTH : %d\n\n"], start=2):
        assert send(msg_id, headers)["result"] is not None, headers
