"""`fuse-lsp` entry points: --check prints what the editor shows, --tcp serves."""
from __future__ import annotations

import json
import socket
import subprocess
import sys
import time

PROGRAM = "X[i] = const([1, 2])\nY[i] = Xq[i] + X[i]\nexport Y\n"


def run(*args, cwd=None):
    return subprocess.run([sys.executable, "-m", "fuse_lsp", *args], capture_output=True,
                          text=True, cwd=cwd, timeout=60)


def test_check_prints_the_same_json_as_fuse_check(tmp_path):
    path = tmp_path / "a.fuse"
    path.write_text(PROGRAM)
    lsp = run("--check", "--format", "json", str(path))
    cli = subprocess.run([sys.executable, "-m", "fuse_lang.cli", "check", "--format", "json",
                          str(path)], capture_output=True, text=True, timeout=60)
    assert lsp.returncode == cli.returncode == 1
    assert json.loads(lsp.stdout) == json.loads(cli.stdout)
    assert json.loads(lsp.stdout)["diagnostics"][0]["code"] == "undefined-tensor"


def test_check_exit_codes(tmp_path):
    good = tmp_path / "g.fuse"
    good.write_text("X[i] = const([1, 2])\nexport X\n")
    assert run("--check", str(good)).returncode == 0
    missing = run("--check", str(tmp_path / "nope.fuse"))
    assert missing.returncode == 2 and "Traceback" not in missing.stderr
    assert run("--check").returncode == 2
    assert run(str(good)).returncode == 2  # a path without --check
    assert run("--tcp", "nonsense").returncode == 2


def test_stdio_is_accepted_as_vscode_languageclient_appends_it():
    proc = subprocess.Popen([sys.executable, "-m", "fuse_lsp", "--stdio"], stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    body = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "initialize",
                       "params": {"processId": None, "rootUri": None, "capabilities": {}}})
    proc.stdin.write(f"Content-Length: {len(body)}\r\n\r\n{body}".encode())
    proc.stdin.flush()
    header = proc.stdout.readline()
    assert header.lower().startswith(b"content-length")
    proc.kill()


def _served_over_tcp(tries: int = 5) -> tuple[subprocess.Popen, socket.socket]:
    """`fuse-lsp --tcp` on a free port, and a connection to it.  A port free when
    probed may be taken by another process before the server binds it (the machine
    is shared): the server then exits, and the next try takes another port."""
    for _ in range(tries):
        with socket.socket() as probe:
            probe.bind(("127.0.0.1", 0))
            port = probe.getsockname()[1]
        proc = subprocess.Popen([sys.executable, "-m", "fuse_lsp", "--tcp",
                                 f"127.0.0.1:{port}"],
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        deadline = time.monotonic() + 60  # a bound for a server that never listens
        while proc.poll() is None:
            try:
                return proc, socket.create_connection(("127.0.0.1", port), timeout=60)
            except OSError:
                if time.monotonic() > deadline:
                    proc.kill()
                    raise
                time.sleep(0.1)
        err = proc.communicate()[1].decode(errors="replace")  # it exited: the port was taken?
    raise AssertionError(f"fuse-lsp --tcp exited {tries} times; last: {err[-2000:]}")


def _message_with_id(conn: socket.socket, wanted: int) -> dict:
    """The server's message with id `wanted`, read whole (its Content-Length bytes:
    a read may end anywhere inside a message)."""
    data = b""
    while True:
        while b"\r\n\r\n" not in data:
            chunk = conn.recv(65536)
            assert chunk, f"the connection closed: {data!r}"
            data += chunk
        header, data = data.split(b"\r\n\r\n", 1)
        length = int(next(line.split(b":")[1] for line in header.split(b"\r\n")
                          if line.lower().startswith(b"content-length")))
        while len(data) < length:
            chunk = conn.recv(65536)
            assert chunk, f"the connection closed inside a message: {data!r}"
            data += chunk
        message, data = json.loads(data[:length]), data[length:]
        if message.get("id") == wanted:
            return message


def test_tcp_serves_initialize():
    proc, conn = _served_over_tcp()
    try:
        with conn:
            body = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "initialize",
                               "params": {"processId": None, "rootUri": None,
                                          "capabilities": {}}})
            conn.sendall(f"Content-Length: {len(body)}\r\n\r\n{body}".encode())
            answer = _message_with_id(conn, 1)
            assert answer["result"]["capabilities"]["hoverProvider"] is True
    finally:
        proc.kill()
        proc.communicate()
