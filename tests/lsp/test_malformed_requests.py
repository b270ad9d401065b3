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

from .conftest import SERVER


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
        """The response to `msg_id` (other messages skipped); fails after 20 s."""
        while True:
            message = self.messages.get(timeout=20)
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
    assert raw.process.wait(20) == 0
