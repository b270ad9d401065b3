"""The editor's re-check of a 10,000-line file of one repeated statement after an
edit that breaks every statement (issue 19, item 8: "deleting one `param` line
from a 4,000-equation file" took `fuse check` from 0.2 s to 14.7 s and the editor
5.8 s per keystroke at 2,000 lines).  Every statement reads `W`, and multiplies
by the scalar `S` read bare; the edits delete or rename one of them.

Each edit is timed as in edit_speed.py (the editor: one incremental Analyzer, CPU
time; the server: the real `fuse-lsp` over stdio, a didChange to its
diagnostics) and printed as a ratio to an edit of the same file that breaks
nothing, measured in the same run (the machines here are shared and noisy).

    python benchmarks/uniform_edit_speed.py [--runs 5] [--lines 10000] [--no-server]
"""
from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
from edit_speed import TARGET_MS, editor_seconds, server_seconds  # noqa: E402

BASELINE = "comment added at the end (harmless)"


def program(lines: int) -> str:
    return "axis i = 4\nparam W[i]\nS = const(2)\n" + "".join(
        f"Y{k}[i] = W[i] * S\n" for k in range(lines - 3))


EDITS = {
    BASELINE: lambda t: t + "# the end\n",
    "param W deleted": lambda t: t.replace("param W[i]\n", "", 1),
    "param W renamed": lambda t: t.replace("param W[i]", "param Wt[i]", 1),
    "scalar S (read bare) deleted": lambda t: t.replace("S = const(2)\n", "", 1),
    "comment line inserted at top": lambda t: "# a note\n" + t,
}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--lines", type=int, default=10_000)
    parser.add_argument("--no-server", action="store_true")
    args = parser.parse_args()
    intact = program(args.lines)
    edited = {name: make(intact) for name, make in EDITS.items()}
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        editor = {name: editor_seconds(intact, after, folder, args.runs)
                  for name, after in edited.items()}
        server = {} if args.no_server else server_seconds(intact, edited, folder, args.runs)
    print(f"{len(intact.splitlines()):,} lines of `Y[i] = W[i] * S`; baseline: {BASELINE}; "
          f"target < {TARGET_MS} ms for every edit")
    for name in EDITS:
        line = f"  {name:36} editor {editor[name] * 1000:6.0f} ms " \
               f"{editor[name] / editor[BASELINE]:5.2f}x baseline"
        if server:
            line += f"   server {server[name] * 1000:6.0f} ms " \
                    f"{server[name] / server[BASELINE]:5.2f}x baseline"
        if max(editor[name], server.get(name, 0)) * 1000 >= TARGET_MS:
            line += "  OVER"
        print(line)


if __name__ == "__main__":
    main()
