"""Every request gets an answer, whatever it holds and whenever it comes: the
proper JSON-RPC error for params that do not fit, a message that is not JSON (or
too deep to read), a request before `initialize` or after `shutdown`.  Spoken
raw over stdio: a typed client cannot send these."""
from __future__ import annotations

import json
import queue
import subprocess
import threading

import pytest

from .conftest import SERVER, WAIT_S


class RawClient:
    def __init__(self) -> None:
        self.process = subprocess.Popen(SERVER, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                        stderr=subprocess.DEVNULL)
        self.messages: queue.Queue = queue.Queue()
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        stream = self.process.stdout
        while True:
            length = 0
            while (header := stream.readline()) not in (b"\r\n", b""):
                if header.lower().startswith(b"content-length:"):
                    length = int(header.split(b":")[1])
            if not header:
                return
            self.messages.put(json.loads(stream.read(length)))

    def send(self, message: dict | None = None, body: bytes | None = None) -> None:
        body = json.dumps(message).encode() if body is None else body
        self.process.stdin.write(b"Content-Length: %d\r\n\r\n" % len(body) + body)
        self.process.stdin.flush()

    def answer(self, msg_id) -> dict:
        """The response to `msg_id` (other messages skipped); fails after WAIT_S (the
        first answer waits for the server's start: seconds on a loaded machine)."""
        while True:
            message = self.messages.get(timeout=WAIT_S)
            if "method" not in message and message.get("id") == msg_id:
                return message

    def close(self) -> None:
        self.process.kill()
        self.process.wait(10)


@pytest.fixture
def raw():
    client = RawClient()
    yield client
    client.close()


def _request(msg_id, method: str, params=None) -> dict:
    message = {"jsonrpc": "2.0", "id": msg_id, "method": method}
    if params is not None:
        message["params"] = params
    return message


def _initialize(raw: RawClient) -> None:
    raw.send(_request(1, "initialize", {"capabilities": {}}))
    assert "result" in raw.answer(1)
    raw.send({"jsonrpc": "2.0", "method": "initialized", "params": {}})


HOVER_AT = {"textDocument": {"uri": "file:///nowhere/a.fuse"}, "position": {"line": 0,
                                                                           "character": 0}}


def test_a_request_before_initialize_is_refused_clearly(raw):
    raw.send(_request(7, "workspace/executeCommand",
                      {"command": "fuse.run", "arguments": ["file:///nowhere/a.fuse"]}))
    error = raw.answer(7)["error"]
    assert error["code"] == -32002 and "not initialized" in error["message"]
    assert "AttributeError" not in json.dumps(error)
    _initialize(raw)  # and the session starts normally after


BAD_PARAMS = [
    "a string",
    None,  # missing
    {**HOVER_AT, "position": {"line": -1, "character": 0}},
    {**HOVER_AT, "position": {"line": 0, "character": "x"}},
    {**HOVER_AT, "position": "somewhere"},
]


def test_params_that_do_not_fit_get_invalid_params(raw):
    _initialize(raw)
    for msg_id, params in enumerate(BAD_PARAMS, start=10):
        raw.send(_request(msg_id, "textDocument/hover", params))
        assert raw.answer(msg_id)["error"]["code"] == -32602, params
    raw.send(_request(3, "textDocument/hover", HOVER_AT))  # still serving
    assert raw.answer(3)["result"] is None


def test_json_too_deep_or_broken_gets_a_parse_error(raw):
    _initialize(raw)
    deep = b'{"jsonrpc": "2.0", "id": 4, "method": "textDocument/hover", "params": ' \
        + b"[" * 100_000 + b"]" * 100_000 + b"}"
    raw.send(body=deep)
    assert raw.answer(None)["error"]["code"] == -32700
    raw.send(body=b'{"jsonrpc": "2.0", "id": 5, "meth')
    assert raw.answer(None)["error"]["code"] == -32700
    raw.send(_request(6, "textDocument/hover", HOVER_AT))
    assert raw.answer(6)["result"] is None


def test_requests_after_shutdown_get_invalid_request(raw):
    _initialize(raw)
    raw.send(_request(2, "shutdown"))
    assert raw.answer(2)["result"] is None
    raw.send(_request(3, "textDocument/hover", HOVER_AT))
    assert raw.answer(3)["error"]["code"] == -32600
    raw.send({"jsonrpc": "2.0", "method": "exit"})
    assert raw.process.wait(WAIT_S) == 0


def _answers_until(raw: RawClient, msg_id) -> list[dict]:
    """Every response received until the one to `msg_id` (that one excluded)."""
    answers = []
    while True:
        message = raw.messages.get(timeout=WAIT_S)
        if "method" in message:
            continue  # the server's own requests and notifications
        if message.get("id") == msg_id and "error" not in message:
            return answers
        answers.append(message)


WRONG = {"jsonrpc": "2.0"}
# (what is sent: a message or raw bytes, the id of its answer, the answer's code)
MALFORMED = [
    (_request(101, "textDocument/hover", {"textDocument": 3, "position": [0, 0]}), 101, -32602),
    (_request(102, "textDocument/hover", [HOVER_AT]), 102, -32602),  # params not an object
    (_request(103, "textDocument/hover", 42), 103, -32602),
    (_request(104, "textDocument/completion"), 104, -32602),  # params missing
    (_request(105, "textDocument/completion", {**HOVER_AT, "position": {"line": "0",
                                                                         "character": 0}}),
     105, -32602),  # a string is not taken for a number
    (_request(125, "textDocument/hover", {**HOVER_AT, "position": {"line": True,
                                                                    "character": 0}}),
     125, -32602),
    (_request(106, "textDocument/definition", {"textDocument": {"uri": 7},
                                               "position": HOVER_AT["position"]}), 106, -32602),
    # (a number is not taken for a uri)
    (_request(107, "textDocument/definition", {"position": HOVER_AT["position"]}), 107, -32602),
    (_request(108, "fuse/xyz", {"a": 1}), 108, -32601),
    (_request(109, "fuse/xyz"), 109, -32601),  # no params: the method is what is wrong
    (_request(110, "fuse/xyz", "not an object"), 110, -32601),
    (_request(111, "textDocument/foo", HOVER_AT), 111, -32601),
    (_request(112, "textDocument/implementation", "x"), 112, -32601),  # LSP's, not served
    (_request("s-113", "$/fuse", {}), "s-113", -32601),
    ({"id": 114, "method": "textDocument/hover", "params": HOVER_AT}, 114, -32600),
    ({**WRONG, "jsonrpc": "1.0", "id": 115, "method": "textDocument/hover", "params": HOVER_AT},
     115, -32600),
    ({**WRONG, "id": 116, "method": 5, "params": HOVER_AT}, 116, -32600),
    ({**WRONG, "id": 117}, 117, -32600),  # neither a request nor a response
    ({**WRONG, "id": True, "method": "textDocument/hover", "params": HOVER_AT}, None, -32600),
    ({**WRONG, "id": {"n": 1}, "method": "textDocument/hover", "params": HOVER_AT}, None, -32600),
    ({**WRONG, "id": 1.5, "method": "textDocument/hover", "params": HOVER_AT}, None, -32600),
    (b'[{"jsonrpc": "2.0", "id": 120, "method": "textDocument/hover"}]', None, -32600),
    (b"42", None, -32600),
    (b'"textDocument/hover"', None, -32600),
    (b'{"jsonrpc": "2.0", "id": 123, "method": "textDocument/hover", "params": {,}}',
     None, -32700),
    (b'{"jsonrpc": "2.0", "id": 124, "method": "textDocument/hover", "params": \xff}',
     None, -32700),
]


def test_each_malformed_request_gets_exactly_one_answer_with_its_code(raw):
    _initialize(raw)
    for sentinel, (sent, msg_id, code) in enumerate(MALFORMED, start=1000):
        raw.send(body=sent) if isinstance(sent, bytes) else raw.send(sent)
        raw.send(_request(sentinel, "textDocument/hover", HOVER_AT))
        answers = _answers_until(raw, sentinel)
        assert len(answers) == 1, (sent, answers)
        assert "error" in answers[0] and "id" in answers[0], (sent, answers)
        assert answers[0]["id"] == msg_id and answers[0]["error"]["code"] == code, (sent, answers)
        assert "result" not in answers[0] and answers[0]["error"]["message"]
    raw.send(_request(2000, "textDocument/hover", HOVER_AT))  # still serving
    assert raw.answer(2000)["result"] is None


def test_malformed_notifications_are_logged_not_answered(raw):
    _initialize(raw)
    for sent in [
        {**WRONG, "method": "textDocument/didOpen", "params": {"textDocument": 5}},
        {**WRONG, "method": "textDocument/didChange"},
        {**WRONG, "method": "fuse/xyz", "params": {}},
        {"method": "textDocument/didSave", "params": {}},
        {**WRONG, "method": 5},
        {**WRONG, "id": True, "result": None},  # a response no one asked for
    ]:
        raw.send(sent)
    raw.send(_request(3000, "textDocument/hover", HOVER_AT))
    assert _answers_until(raw, 3000) == []


def test_the_answers_keep_before_initialize_and_after_shutdown(raw):
    raw.send(_request(1, "textDocument/hover", "x"))  # not initialized: said before params
    assert raw.answer(1)["error"]["code"] == -32002
    raw.send(_request(2, "fuse/xyz"))
    assert raw.answer(2)["error"]["code"] == -32002
    _initialize(raw)
    raw.send(_request(3, "shutdown"))
    assert raw.answer(3)["result"] is None
    raw.send(_request(4, "fuse/xyz"))
    assert raw.answer(4)["error"]["code"] == -32600
    raw.send({"jsonrpc": "2.0", "method": "exit"})
    assert raw.process.wait(WAIT_S) == 0
