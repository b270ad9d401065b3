"""How long a cancelled run takes to end, with the product in blocks and as one.

One contraction `C[i,k] = A[i,j] B[j,k]` on the NumPy engine, sized to take a
few seconds (--size).  The run goes in a thread, cancelled (the editor's
CancelToken) after a fraction of its own duration; measured: the time from
the cancel to the run's end.  "before": the product as one matmul (blocks
switched off from outside, as before run.limits); "after": in blocks, checking
the token between them.  Prints both and the ratio before/after, and each as
a fraction of the run's own duration.

    python benchmarks/cancel_latency.py [--size 4000] [--cancel-at 0.2]
"""
from __future__ import annotations

import argparse
import sys
import tempfile
import threading
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).parent))
from _common import write_sources  # noqa: E402

import fuse_lang  # noqa: E402
from fuse_lang.ide.cancellation import Cancelled, CancelToken, cancellable  # noqa: E402
from fuse_lang.run.backends import pairwise  # noqa: E402

PROGRAM = 'A[i,j] = "a.npy"\nB[j,k] = "b.npy"\nC[i,k] = A[i,j] B[j,k]\nexport C\n'


def cancel_latency(folder: Path, inputs: dict, delay: float) -> float:
    """Seconds from the cancel to the run's end."""
    program = cancellable(fuse_lang.compile(PROGRAM, base_dir=folder), token := CancelToken())
    ended: list[float] = []

    def run() -> None:
        try:
            program.run(inputs)
        except Cancelled:
            pass
        ended.append(time.perf_counter())

    worker = threading.Thread(target=run)
    worker.start()
    time.sleep(delay)
    cancelled = time.perf_counter()
    token.cancel()
    worker.join()
    return ended[0] - cancelled


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--size", type=int, default=4000, help="n of the n x n product")
    parser.add_argument("--cancel-at", type=float, default=0.2,
                        help="when to cancel, as a fraction of the run's duration")
    args = parser.parse_args()
    rng = np.random.default_rng(0)
    inputs = {name: rng.random((args.size, args.size), dtype=np.float32) for name in "AB"}
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        write_sources(folder, {"a": inputs["A"], "b": inputs["B"]})
        program = fuse_lang.compile(PROGRAM, base_dir=folder)
        started = time.perf_counter()
        program.run(inputs)
        duration = time.perf_counter() - started
        started = time.perf_counter()
        program.run(inputs, time_limit=3600)  # bounded: in blocks
        tiled = time.perf_counter() - started
        delay = duration * args.cancel_at
        after = cancel_latency(folder, inputs, delay)
        blocks = pairwise.BLOCK_MACS
        pairwise.BLOCK_MACS = 1 << 62  # the product as one matmul: as before
        try:
            before = cancel_latency(folder, inputs, delay)
        finally:
            pairwise.BLOCK_MACS = blocks
    print(f"product {args.size}x{args.size}: a run takes {duration:.2f} s as one matmul, "
          f"{tiled:.2f} s in blocks (ratio {tiled / duration:.2f}); cancelled after {delay:.2f} s")
    print(f"cancel to end  one matmul {before * 1000:.0f} ms ({before / duration:.2f} of the run)"
          f"  in blocks {after * 1000:.0f} ms ({after / duration:.3f} of the run)  "
          f"ratio {before / max(after, 1e-6):.1f}x")


if __name__ == "__main__":
    main()
