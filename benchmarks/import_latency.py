"""Imports at scale: a program importing a 10,000-line file (issue 33, item 4).

Figures, printed:
- `fuse check` of the importing program, whole process, against `fuse check` of
  the 10,000-line file alone, in the same run (median of `--runs` each,
  interleaved), and their ratio: what importing costs beyond checking the file;
- over stdio with the real language server (benchmarks/lsp_speed.py's driver):
  the first diagnostics of the importer (the imported file read and parsed),
  hover on an imported name (`big::N...`: median and p95), and the diagnostics
  after an edit of the importer (median of `--changes`), beside the same edit
  figure for the 10,000-line file opened alone.  An edit of the importer does
  not parse the imported file again (check/imports.py keeps it by path,
  modification time and size), so it costs the checking of the joined program.

    python benchmarks/import_latency.py [--runs 3] [--hovers 100] [--changes 10]
"""
from __future__ import annotations

import argparse
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
from gen_program import generate  # noqa: E402
from lsp_speed import change_time, ms, open_doc, start  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent


def check_seconds(path: Path) -> float:
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    t = time.perf_counter()
    done = subprocess.run([sys.executable, "-m", "fuse_lang.cli", "check", str(path)],
                          capture_output=True, text=True, env=env, timeout=600)
    seconds = time.perf_counter() - t
    assert "error" not in done.stdout.split("checked:")[-1], done.stdout[-2000:]
    return seconds


def importer(big: str) -> str:
    last = re.search(r"^export (N\d+),", big, re.M)
    assert last is not None
    return (f'import "lib/big.fuse" as big\n'
            f'Y[p,e] = big::{last.group(1)}[p,e] + 1\n'
            f'Z[e] = big::M0[e] * 2\n'
            f'export Y, Z\n')


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--hovers", type=int, default=100)
    parser.add_argument("--changes", type=int, default=10)
    args = parser.parse_args()
    subprocess.run([sys.executable, "-m", "compileall", "-q", str(ROOT / "fuse_lang"),
                    str(ROOT / "fuse_lsp")], check=True)
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        (root / "lib").mkdir()
        big = generate(10_000, root / "lib" / "data")
        lib = root / "lib" / "big.fuse"
        lib.write_text(big, encoding="utf-8")
        main_text = importer(big)
        main_path = root / "main.fuse"
        main_path.write_text(main_text, encoding="utf-8")

        alone, joined = [], []
        for _ in range(args.runs):
            alone.append(check_seconds(lib))
            joined.append(check_seconds(main_path))
        a, j = statistics.median(alone), statistics.median(joined)
        print(f"lines of the imported file: {len(big.splitlines())}")
        print(f"fuse check, the 10,000-line file alone:   {ms(a)}")
        print(f"fuse check, the program importing it:     {ms(j)}")
        print(f"ratio (importer / file alone):            {j / a:8.2f}")

        client = start(root)
        t = time.perf_counter()
        uri = open_doc(client, main_path, main_text)
        client.wait_diagnostics(uri, 1)
        first = time.perf_counter() - t
        line, column = 1, main_text.splitlines()[1].index("big::") + 6
        hovers = []
        for _ in range(args.hovers):
            t = time.perf_counter()
            answer = client.request("textDocument/hover", {
                "textDocument": {"uri": uri}, "position": {"line": line, "character": column}})
            hovers.append(time.perf_counter() - t)
            assert answer.get("result"), answer
        hovers.sort()
        changes = []
        version = 1
        for n in range(args.changes):
            version += 1
            edited = main_text.replace("+ 1\n", f"+ {n + 2}\n")
            changes.append(change_time(client, uri, version, edited))

        # the file alone: the importer closed first (else each edit of the file would
        # bring the importer's diagnostics again too, as it should)
        client.notify("textDocument/didClose", {"textDocument": {"uri": uri}})
        big_uri = open_doc(client, lib, big)
        client.wait_diagnostics(big_uri, 1)
        alone_changes = []
        for n in range(args.changes):
            edited = big.replace("+ 0.5)", f"+ 0.{(n % 9) + 1})", 1)
            alone_changes.append(change_time(client, big_uri, n + 2, edited))
        client.close()

        print(f"editor, first diagnostics of the importer (file read, parsed): {ms(first)}")
        print(f"editor, hover on big::N.. in the importer: median {ms(statistics.median(hovers))}"
              f", p95 {ms(hovers[int(0.95 * (len(hovers) - 1))])}")
        print(f"editor, diagnostics after an edit of the importer: median "
              f"{ms(statistics.median(changes))}")
        print(f"editor, diagnostics after an edit of the 10,000-line file alone: median "
              f"{ms(statistics.median(alone_changes))}")


if __name__ == "__main__":
    main()
