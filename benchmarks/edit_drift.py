"""A long campaign of random incremental edits against the real server over
stdio, checking that its diagnostics never drift from a fresh analysis of the
same text (issue 28, item 1: "no drift, by construction and by test").

The edits are those of `tests/lsp/test_edit_drift.py` (`tests/lsp/random_edits.py`):
valid ranges and ranges past a line's end, past the document's end or between
a surrogate pair's halves (LSP: taken as the line's end, the document's end),
CRLF and lone CR endings, emoji in comments and strings, deletions across
lines, statements that define and undefine names, lines repeated.  Each run
opens one document and sends `--edits` changes; its diagnostics are compared
(codes, ranges, messages) with `fuse_lang.analyze` of the text the edits
leave, computed here apart from the server:

- `--mode push` (default): a client without pull diagnostics, debounce
  `--debounce` ms, random pauses between edits (so the server analyses some
  versions and skips others, as it does under typing); the diagnostics
  published for the last version are compared, and those of every version
  published on the way that could be checked.
- `--mode pull`: the diagnostics pulled after every few edits.

    python benchmarks/edit_drift.py --edits 5000 [--runs 5] [--mode push|pull]
        [--encoding utf-16|utf-8] [--blocks 1] [--valid-only] [--seed 0]

It prints, per run, the edits sent, the versions compared and whether any
drifted, then how many runs drifted; the exit status is 1 when one did.
"""
from __future__ import annotations

import argparse
import json
import queue
import random
import subprocess
import sys
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))
sys.path.insert(0, str(ROOT))
from lsp import lsp_text, random_edits  # noqa: E402

from fuse_lang import analyze  # noqa: E402


class Client:
    """JSON-RPC over the server's stdin/stdout; a thread reads what it says (so
    that neither side blocks on a full pipe while edits stream in)."""

    def __init__(self) -> None:
        self.proc = subprocess.Popen([sys.executable, "-m", "fuse_lsp", "--stdio"],
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     stderr=subprocess.DEVNULL, cwd=ROOT)
        self.next_id = 0
        self.incoming: queue.Queue[dict] = queue.Queue()
        self.published: dict[int, list[dict]] = {}  # version -> its diagnostics
        self.errors: list[str] = []
        threading.Thread(target=self._read_all, daemon=True).start()

    def _read_all(self) -> None:
        out = self.proc.stdout
        assert out is not None
        while True:
            length = 0
            while True:
                line = out.readline()
                if not line:
                    return
                if line == b"\r\n":
                    break
                if line.lower().startswith(b"content-length:"):
                    length = int(line.split(b":")[1])
            self.incoming.put(json.loads(out.read(length)))

    def send(self, message: dict) -> None:
        body = json.dumps(message).encode()
        assert self.proc.stdin is not None
        self.proc.stdin.write(f"Content-Length: {len(body)}\r\n\r\n".encode() + body)
        self.proc.stdin.flush()

    def notify(self, method: str, params: dict) -> None:
        self.send({"jsonrpc": "2.0", "method": method, "params": params})

    def request(self, method: str, params: dict) -> dict:
        self.next_id += 1
        self.send({"jsonrpc": "2.0", "id": self.next_id, "method": method, "params": params})
        while True:
            message = self._next(60)
            if message.get("id") == self.next_id and "method" not in message:
                return message

    def _next(self, timeout: float) -> dict:
        message = self.incoming.get(timeout=timeout)
        method = message.get("method")
        if method is not None and "id" in message:  # a request of the server's
            self.send({"jsonrpc": "2.0", "id": message["id"], "result": None})
        elif method == "textDocument/publishDiagnostics":
            self.published[message["params"].get("version")] = message["params"]["diagnostics"]
        elif method == "window/logMessage" and message["params"]["type"] == 1:
            self.errors.append(message["params"]["message"])
        return message

    def wait_published(self, version: int, timeout: float = 60) -> list[dict]:
        deadline = time.monotonic() + timeout
        while version not in self.published:
            self._next(max(0.01, deadline - time.monotonic()))
        return self.published[version]

    def drain(self) -> None:
        while True:
            try:
                self._next(0)
            except queue.Empty:
                return

    def close(self) -> None:
        try:
            self.request("shutdown", {})
            self.notify("exit", {})
            self.proc.wait(timeout=10)
        except Exception:  # noqa: BLE001
            self.proc.kill()


def fresh(text: str, path: str, encoding: str) -> list[tuple]:
    def at(offset: int) -> tuple[int, int]:
        position = lsp_text.position(text, offset, encoding)
        return position.line, position.character

    return sorted((d.code, *at(d.span.start), *at(d.span.end), d.message)
                  for d in analyze(text, path).diagnostics)


def served(items: list[dict]) -> list[tuple]:
    return sorted((d["code"], d["range"]["start"]["line"], d["range"]["start"]["character"],
                   d["range"]["end"]["line"], d["range"]["end"]["character"], d["message"])
                  for d in items)


def _change(edit: random_edits.Edit) -> dict:
    if edit.start is None or edit.end is None:
        return {"text": edit.text}
    return {"range": {"start": {"line": edit.start[0], "character": edit.start[1]},
                      "end": {"line": edit.end[0], "character": edit.end[1]}},
            "text": edit.text}


def run(args: argparse.Namespace, seed: int) -> tuple[int, int, bool]:
    """One run: (edits sent, versions compared, whether any drifted)."""
    rng = random.Random(seed)
    client = Client()
    capabilities: dict = {"general": {"positionEncodings": [args.encoding]},
                          "textDocument": {"publishDiagnostics": {"versionSupport": True}}}
    if args.mode == "pull":
        capabilities["textDocument"]["diagnostic"] = {"dynamicRegistration": False}
    client.request("initialize", {"processId": None, "rootUri": random_edits.EXAMPLES.as_uri(),
                                  "capabilities": capabilities,
                                  "initializationOptions": {"debounceMs": args.debounce}})
    client.notify("initialized", {})
    text = "".join(random_edits.base_text(rng) for _ in range(args.blocks))
    path = random_edits.EXAMPLES / f"drift-{seed}.fuse"  # never written: the server has the text
    uri = path.as_uri()
    client.notify("textDocument/didOpen", {"textDocument": {
        "uri": uri, "languageId": "fuse", "version": 1, "text": text}})
    texts = {1: text}
    compared, drifted = 0, False
    for step in range(args.edits):
        edit = random_edits.random_edit(rng, text, args.encoding, not args.valid_only)
        version = step + 2
        client.notify("textDocument/didChange", {"textDocument": {"uri": uri, "version": version},
                                                 "contentChanges": [_change(edit)]})
        text = texts[version] = random_edits.apply(text, edit, args.encoding)
        if args.mode == "pull":
            if rng.random() < 0.4 or step == args.edits - 1:
                report = client.request("textDocument/diagnostic",
                                        {"textDocument": {"uri": uri}})["result"]
                compared += 1
                if served(report["items"]) != fresh(text, str(path), args.encoding):
                    drifted = True
                    _keep(args, seed, version, text)
                    break
        elif rng.random() < 0.3:
            time.sleep(rng.random() * (args.debounce + 20) / 1000)
        if step % 50 == 0:
            client.drain()
    if args.mode == "push" and not drifted:
        client.wait_published(args.edits + 1)
        for version, items in sorted(client.published.items()):
            if version in texts:
                compared += 1
                if served(items) != fresh(texts[version], str(path), args.encoding):
                    drifted = True
                    _keep(args, seed, version, texts[version])
                    break
    for error in client.errors:
        print(error, file=sys.stderr)
    client.close()
    return args.edits, compared, drifted or bool(client.errors)


def _keep(args: argparse.Namespace, seed: int, version: int, text: str) -> None:
    if args.keep:
        target = Path(args.keep) / f"drift-{seed}-v{version}.fuse"
        target.write_text(text, encoding="utf-8", newline="")
        print(f"  drifted at version {version}: its text in {target}")
    else:
        print(f"  drifted at version {version}")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--edits", type=int, default=2000, help="edits per run")
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--seed", type=int, default=0, help="the first run's seed")
    parser.add_argument("--mode", choices=("push", "pull"), default="push")
    parser.add_argument("--encoding", choices=("utf-16", "utf-8"), default="utf-16")
    parser.add_argument("--debounce", type=int, default=20, help="the server's debounceMs")
    parser.add_argument("--blocks", type=int, default=1,
                        help="examples the document starts with, one after another")
    parser.add_argument("--valid-only", action="store_true",
                        help="only positions inside the document")
    parser.add_argument("--keep", help="a folder to write a drifted version's text to")
    args = parser.parse_args()
    drifted = 0
    started = time.perf_counter()
    for seed in range(args.seed, args.seed + args.runs):
        began = time.perf_counter()
        edits, compared, drift = run(args, seed)
        drifted += drift
        print(f"run {seed}: {edits} edits, {compared} versions compared, "
              f"{'DRIFTED' if drift else 'no drift'} ({time.perf_counter() - began:.1f} s)")
    print(f"{drifted} of {args.runs} runs drifted ({args.mode}, {args.encoding}, "
          f"{'valid positions only' if args.valid_only else 'positions out of range too'}; "
          f"{time.perf_counter() - started:.1f} s)")
    return 1 if drifted else 0


if __name__ == "__main__":
    sys.exit(main())
