"""The language server's speed, driving the real server over stdio.

Figures (issue: language server): on a 1,000-line program, hover p95 under
10 ms; diagnostics published under 50 ms after a didChange (the debounce set
to 0); semantic tokens under 50 ms; on a 10,000-line program diagnostics
under 500 ms after a change; cold start to the first diagnostics under 1.5 s.
Changes edit one statement; each change figure is the median of `--changes`
edits.  Semantic tokens are timed on the document's first request and, as an
editor asks again after each edit, after every change (median).  A last,
informative figure times edits that move every later statement (a line
inserted at the top), which the server's caches help least.
Times are measured by the client, so they include the pipe (an upper bound
on the server's own time); the baseline printed beside them is the same
client's round trip for a request the server answers at once (shutdown-free
`$/` ping: an unknown-method request), measured in the same run.

    python benchmarks/lsp_speed.py [--hovers 200]
"""
from __future__ import annotations

import argparse
import json
import random
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
from gen_program import generate  # noqa: E402


class Client:
    """A minimal JSON-RPC client over the server's stdin/stdout."""

    def __init__(self) -> None:
        self.proc = subprocess.Popen([sys.executable, "-m", "fuse_lsp", "--stdio"],
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     stderr=subprocess.DEVNULL)
        self.next_id = 0
        self.notifications: list[dict] = []

    def send(self, message: dict) -> None:
        body = json.dumps(message).encode()
        assert self.proc.stdin is not None
        self.proc.stdin.write(f"Content-Length: {len(body)}\r\n\r\n".encode() + body)
        self.proc.stdin.flush()

    def read(self) -> dict:
        assert self.proc.stdout is not None
        length = 0
        while True:
            line = self.proc.stdout.readline()
            if line in (b"\r\n", b""):
                break
            if line.lower().startswith(b"content-length:"):
                length = int(line.split(b":")[1])
        return json.loads(self.proc.stdout.read(length))

    def request(self, method: str, params: dict) -> dict:
        self.next_id += 1
        self.send({"jsonrpc": "2.0", "id": self.next_id, "method": method, "params": params})
        while True:
            message = self.read()
            if message.get("id") == self.next_id and "method" not in message:
                return message
            if "method" in message and "id" in message:  # a request from the server
                self.send({"jsonrpc": "2.0", "id": message["id"], "result": None})
            elif "method" in message:
                self.notifications.append(message)

    def notify(self, method: str, params: dict) -> None:
        self.send({"jsonrpc": "2.0", "method": method, "params": params})

    def wait_diagnostics(self, uri: str, version: int) -> dict:
        for i, message in enumerate(self.notifications):
            if message["method"] == "textDocument/publishDiagnostics" and \
                    message["params"]["uri"] == uri and message["params"].get("version") == version:
                del self.notifications[: i + 1]
                return message
        while True:
            message = self.read()
            if "method" in message and "id" in message:
                self.send({"jsonrpc": "2.0", "id": message["id"], "result": None})
                continue
            if message.get("method") == "textDocument/publishDiagnostics" and \
                    message["params"]["uri"] == uri and message["params"].get("version") == version:
                return message

    def close(self) -> None:
        try:
            self.request("shutdown", {})
            self.notify("exit", {})
            self.proc.wait(timeout=10)
        except Exception:  # noqa: BLE001
            self.proc.kill()


def start(root: Path) -> Client:
    client = Client()
    client.request("initialize", {
        "processId": None, "rootUri": root.as_uri(),
        "capabilities": {"textDocument": {"hover": {"contentFormat": ["markdown"]},
                                          "publishDiagnostics": {"versionSupport": True}}},
        "initializationOptions": {"debounceMs": 0},
    })
    client.notify("initialized", {})
    return client


def open_doc(client: Client, path: Path, text: str) -> str:
    uri = path.as_uri()
    client.notify("textDocument/didOpen", {"textDocument": {
        "uri": uri, "languageId": "fuse", "version": 1, "text": text}})
    return uri


def change_time(client: Client, uri: str, version: int, text: str) -> float:
    """Seconds from sending a full-text didChange to its diagnostics arriving."""
    t = time.perf_counter()
    client.notify("textDocument/didChange", {
        "textDocument": {"uri": uri, "version": version}, "contentChanges": [{"text": text}]})
    client.wait_diagnostics(uri, version)
    return time.perf_counter() - t


def ms(seconds: float) -> str:
    return f"{seconds * 1000:8.1f} ms"


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--hovers", type=int, default=200)
    parser.add_argument("--changes", type=int, default=10)
    args = parser.parse_args()
    rng = random.Random(0)
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        small = generate(30, root / "data")
        medium = generate(1_000, root / "data")
        large = generate(10_000, root / "data")

        started = time.perf_counter()
        client = start(root)
        uri = open_doc(client, root / "small.fuse", small)
        client.wait_diagnostics(uri, 1)
        cold = time.perf_counter() - started

        # baseline: a request the server rejects at once (method not found)
        pings = []
        for _ in range(50):
            t = time.perf_counter()
            client.request("fuse/ping", {})
            pings.append(time.perf_counter() - t)
        ping = statistics.median(pings)

        uri = open_doc(client, root / "medium.fuse", medium)
        client.wait_diagnostics(uri, 1)
        lines = medium.splitlines()
        hovers = []
        for _ in range(args.hovers):
            line = rng.randrange(len(lines))
            column = rng.randrange(max(1, len(lines[line])))
            t = time.perf_counter()
            client.request("textDocument/hover", {"textDocument": {"uri": uri},
                                                  "position": {"line": line,
                                                               "character": column}})
            hovers.append(time.perf_counter() - t)
        hovers.sort()
        p95 = hovers[int(0.95 * (len(hovers) - 1))]

        # the first request for the document's tokens: nothing of them is cached yet
        t = time.perf_counter()
        tokens = client.request("textDocument/semanticTokens/full", {"textDocument": {"uri": uri}})
        semantic_first = time.perf_counter() - t
        has_tokens = "error" not in tokens

        # an edit inside one statement (as the figures are defined), then the
        # tokens an editor asks for after it
        changes, semantics = [], []
        version = 1
        for _ in range(args.changes):
            version += 1
            edited = medium.replace("+ 0.5)", f"+ 0.{version % 10})", 1)
            changes.append(change_time(client, uri, version, edited))
            if has_tokens:
                t = time.perf_counter()
                client.request("textDocument/semanticTokens/full", {"textDocument": {"uri": uri}})
                semantics.append(time.perf_counter() - t)
        change = statistics.median(changes)
        semantic = statistics.median(semantics) if semantics else 0.0

        # a keystroke near the top: every later statement moves (not a target)
        typing = []
        for n in range(args.changes):
            version += 1
            typing.append(change_time(client, uri, version, "#" * (n + 1) + "\n" + medium))
        typed = statistics.median(typing)

        uri = open_doc(client, root / "large.fuse", large)
        client.wait_diagnostics(uri, 1)
        large_changes = []
        for version in range(2, 2 + max(3, args.changes // 2)):
            edited = large.replace("+ 0.5)", f"+ 0.{version % 10})", 1)
            large_changes.append(change_time(client, uri, version, edited))
        large_change = statistics.median(large_changes)
        client.close()

    print(f"round trip of a rejected request (baseline) {ms(ping)}")
    print(f"cold start to first diagnostics          {ms(cold)}   target < 1500 ms")
    print(f"hover p95, 1,000 lines                   {ms(p95)}   {p95 / ping:6.1f}x baseline"
          f"   target < 10 ms")
    print(f"diagnostics after didChange, 1,000 lines {ms(change)}   {change / ping:6.1f}x baseline"
          f"   target < 50 ms")
    if has_tokens:
        print(f"semantic tokens, 1,000 lines, first      {ms(semantic_first)}   "
              f"{semantic_first / ping:6.1f}x baseline   target < 50 ms")
        print(f"semantic tokens, 1,000 lines, after edit {ms(semantic)}   "
              f"{semantic / ping:6.1f}x baseline   target < 50 ms")
    else:
        print("semantic tokens                          (not offered by the server)")
    print(f"diagnostics after didChange, 10,000 lines{ms(large_change)}   target < 500 ms")
    print(f"diagnostics after a keystroke that moves every later statement, 1,000 lines"
          f" {ms(typed)}   (no target)")


if __name__ == "__main__":
    main()
