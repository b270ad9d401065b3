"""Sharded attention: Fuse on JAX with the positions `p` split over a mesh of
host devices against the same program on one device, in the same run.

The attention head of benchmarks/_common.py (with an output projection), P
positions, width D, float32.  Both runs are compiled by jax.jit
(`run_native`: inputs already on their devices, outputs left there).  The
script checks that the sharded outputs equal the one-device outputs (the
conformance tolerance), then prints the medians and the ratio sharded / one
device.  On host devices the "devices" are threads of one CPU: the figure says
what splitting costs or saves on this machine's cores, not on accelerators.

    python benchmarks/sharded_attention.py [--devices 8] [--positions 2048]
        [--width 256] [--repeats 15] [--small]

XLA_FLAGS=--xla_force_host_platform_device_count=N is set here, before jax is
first imported (JAX reads it once).
"""
from __future__ import annotations

import argparse
import os
import sys
import tempfile
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).parent))
from _common import attention_program, median_times, write_sources  # noqa: E402

TOLERANCE = dict(rtol=2e-4, atol=2e-5)  # tests/conftest.py: float32 on every backend


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--devices", type=int, default=8)
    parser.add_argument("--positions", type=int, default=2048)
    parser.add_argument("--width", type=int, default=256)
    parser.add_argument("--repeats", type=int, default=15)
    parser.add_argument("--small", action="store_true", help="a tiny run (the smoke test)")
    args = parser.parse_args()
    if args.small:
        args.positions, args.width, args.repeats = 64, 16, 3
    os.environ["XLA_FLAGS"] = (os.environ.get("XLA_FLAGS", "") +
                               f" --xla_force_host_platform_device_count={args.devices}")
    import jax  # noqa: E402 - after XLA_FLAGS

    import fuse_lang  # noqa: E402

    p, d = args.positions, args.width
    rng = np.random.default_rng(0)
    inputs = {"X": rng.standard_normal((p, d), dtype=np.float32)}
    for name in ("WQ", "WK", "WV", "WO"):
        inputs[name] = rng.standard_normal((d, d), dtype=np.float32) * np.float32(d ** -0.5)
    with tempfile.TemporaryDirectory() as folder:
        write_sources(Path(folder), {n.lower(): a for n, a in inputs.items()})
        text = attention_program(d)
        one = fuse_lang.compile(text, backend="jax", base_dir=folder)
        sharded = fuse_lang.compile(text, backend="jax", base_dir=folder,
                                    mesh={"data": args.devices}, shard={"p": "data"})
        placed_one = {n: jax.device_put(a) for n, a in inputs.items()}
        placed_sharded = {n: sharded.backend.place(n, a) for n, a in inputs.items()}

        def run_one():
            return jax.block_until_ready(one.run_native(placed_one))

        def run_sharded():
            return jax.block_until_ready(sharded.run_native(placed_sharded))

        expected, got = run_one()["Out"], run_sharded()["Out"]
        np.testing.assert_allclose(np.asarray(got), np.asarray(expected), **TOLERANCE)
        spec = got.sharding.spec
        assert spec and spec[0] == "data", f"the output is not split over the mesh: {spec}"
        times = median_times({"one device": run_one, "sharded": run_sharded}, args.repeats)
    print(f"sharded attention, P={p}, D={d}, {len(jax.devices())} host devices "
          f"({os.cpu_count()} cores): outputs equal (rtol {TOLERANCE['rtol']})")
    print(f"attention, shard p=data over {args.devices} devices  one device "
          f"{times['one device'] * 1e3:.2f} ms  sharded {times['sharded'] * 1e3:.2f} ms  "
          f"ratio {times['sharded'] / times['one device']:.2f} (sharded / one device)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
