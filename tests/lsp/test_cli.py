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


def test_tcp_serves_initialize():
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    proc = subprocess.Popen([sys.executable, "-m", "fuse_lsp", "--tcp", f"127.0.0.1:{port}"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        deadline = time.time() + 30
        while True:
            try:
                conn = socket.create_connection(("127.0.0.1", port), timeout=5)
                break
            except OSError:
                if time.time() > deadline:
                    raise
                time.sleep(0.1)
        with conn:
            body = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "initialize",
                               "params": {"processId": None, "rootUri": None,
                                          "capabilities": {}}})
            conn.sendall(f"Content-Length: {len(body)}\r\n\r\n{body}".encode())
            data = b""
            while b"capabilities" not in data:
                chunk = conn.recv(65536)
                if not chunk:
                    break
                data += chunk
            assert b'"hoverProvider": true' in data or b'"hoverProvider":true' in data
    finally:
        proc.kill()
