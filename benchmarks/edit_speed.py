"""How long the editor takes to re-check a 10,000-line file after one edit,
for a matrix of edits (issue 19, item 8: "any edit of a 10,000-line file
re-checked in < 500 ms whatever it breaks").

Edits near the top move every later statement (and deleting a statement
renumbers them); others break many statements at once.  Each edit is timed
two ways:

- *editor*: one incremental `Analyzer`, `analyze(before)` then the timed
  `analyze(after)` (median of `--runs`), in this process' CPU time (steadier
  than the clock on a loaded machine; `--clock wall` for elapsed time), each
  under the server's collector policy (`gc_frozen_after`, as fuse_lsp.state);
- *server*: the real `fuse-lsp` over stdio, from a full-text didChange to the
  publishDiagnostics of that version (debounce 0; before each timed change the
  document is set back to the intact text, untimed).

Each figure is printed in ms and as a ratio to baselines measured in the same
run (the machines here are shared and noisy): a cold one-off `analyze` of the
intact text for the editor, and the same server's re-check after an edit at
the end that breaks nothing for the server.

    python benchmarks/edit_speed.py [--runs 5] [--lines 10000] [--no-server] [--clock cpu|wall]
"""
from __future__ import annotations

import argparse
import gc
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Callable

sys.path.insert(0, str(Path(__file__).parent))
from gen_program import generate  # noqa: E402
from lsp_speed import change_time, open_doc, start  # noqa: E402

TARGET_MS = 500
clock = time.process_time  # the editor figures' (see --clock)


def _lines(text: str) -> list[str]:
    return text.splitlines(keepends=True)


def _middle(text: str, change: Callable[[str], str]) -> str:
    """`text` with `change` applied to its middle line."""
    lines = _lines(text)
    mid = len(lines) // 2
    return "".join(lines[:mid]) + change(lines[mid]) + "".join(lines[mid + 1:])


def _without(text: str, start: str) -> str:
    return "".join(line for line in _lines(text) if not line.startswith(start))


# name -> the edited text, from the intact one.  The generated program starts
# with three source lines (X, W, Edge) that every block reads.
EDITS: dict[str, Callable[[str], str]] = {
    "edit at the end (harmless)": lambda t: t.replace("export ", "export M1, ", 1),
    "comment line inserted at top": lambda t: "# a note\n" + t,
    "first line deleted": lambda t: "".join(_lines(t)[1:]),
    "character typed at top": lambda t: "Z" + t,
    "unclosed ( inserted at top": lambda t: "(\n" + t,
    "unclosed [ inserted at top": lambda t: "Q[p = \n" + t,
    "source line W deleted": lambda t: _without(t, "W[d,e] ="),
    "source X renamed": lambda t: t.replace("X[p,d] =", "Xs[p,d] =", 1),
    "line inserted in the middle": lambda t: _middle(t, lambda line: "# mid\n" + line),
    "character typed in the middle": lambda t: _middle(t, lambda line: "Z" + line),
    "edit in the middle (harmless)": lambda t: _middle(t, lambda line: line.rstrip("\n")
                                                       + "  # seen\n"),
}
BASELINE_EDIT = "edit at the end (harmless)"


def editor_seconds(before: str, after: str, base_dir: Path, runs: int) -> float:
    """Median time of an incremental Analyzer's re-check of `after`, after `before`."""
    from fuse_lang.check import Analyzer
    from fuse_lang.speed.gc_pause import gc_frozen_after

    times = []
    for _ in range(runs):
        analyzer = Analyzer()
        with gc_frozen_after():
            analyzer.analyze(before, None, base_dir)
        start_at = clock()
        with gc_frozen_after():
            analyzer.analyze(after, None, base_dir)
        times.append(clock() - start_at)
        gc.unfreeze()  # (as the server does when the document is closed)
    return statistics.median(times)


def cold_seconds(text: str, base_dir: Path, runs: int) -> float:
    from fuse_lang.check import analyze

    analyze(text, None, base_dir)  # warm: the grammar's tables are loaded once
    times = []
    for _ in range(runs):
        start_at = clock()
        analyze(text, None, base_dir)
        times.append(clock() - start_at)
    return statistics.median(times)


def server_seconds(intact: str, edited: dict[str, str], folder: Path,
                   runs: int) -> dict[str, float]:
    """Median seconds from a didChange to its diagnostics, per edit, one server."""
    client = start(folder)
    try:
        uri = open_doc(client, folder / "edited.fuse", intact)
        client.wait_diagnostics(uri, 1)
        version = 1
        samples: dict[str, list[float]] = {name: [] for name in edited}
        for _ in range(runs):
            for name, after in edited.items():  # interleaved: noise hits each alike
                version += 1
                change_time(client, uri, version, intact)  # back to the intact text
                version += 1
                samples[name].append(change_time(client, uri, version, after))
        return {name: statistics.median(times) for name, times in samples.items()}
    finally:
        client.close()


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--lines", type=int, default=10_000)
    parser.add_argument("--no-server", action="store_true", help="the editor figures only")
    parser.add_argument("--clock", choices=("cpu", "wall"), default="cpu",
                        help="the editor figures' clock (the server's are always wall)")
    args = parser.parse_args()
    global clock
    clock = time.process_time if args.clock == "cpu" else time.perf_counter
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        intact = generate(args.lines, folder / "data")
        edited = {name: make(intact) for name, make in EDITS.items()}
        cold = cold_seconds(intact, folder, args.runs)
        editor = {name: editor_seconds(intact, after, folder, args.runs)
                  for name, after in edited.items()}
        server = {} if args.no_server else server_seconds(intact, edited, folder, args.runs)
    lines = len(intact.splitlines())
    print(f"{lines:,} lines; editor ({args.clock} time) baseline: a cold analyze "
          f"{cold * 1000:.0f} ms; server (wall) baseline: {BASELINE_EDIT}; "
          f"target < {TARGET_MS} ms for every edit")
    for name in EDITS:
        took = editor[name]
        line = (f"  {name:32} editor {took * 1000:7.0f} ms {took / cold:5.2f}x cold"
                f"{'' if took * 1000 < TARGET_MS else '  OVER'}")
        if server:
            took = server[name]
            line += (f"   server {took * 1000:7.0f} ms {took / server[BASELINE_EDIT]:5.2f}x "
                     f"baseline{'' if took * 1000 < TARGET_MS else '  OVER'}")
        print(line)


if __name__ == "__main__":
    main()
