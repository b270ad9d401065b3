"""Several JAX processes, one program (issue 32): `fuse_lang.compile(...,
distributed=True)` and `fuse run --distributed`, started for real as 2 and 4
processes on localhost, each with one CPU device, joined through JAX's
distributed runtime (cross-process collectives over gloo).

Every answer is compared with a single-process run; a process killed mid-run
makes the other stop within a bounded time, and no sink is left behind.
"""
from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import numpy as np
import pytest
from conftest import TOLERANCE

import fuse_lang
from fuse_lang.cli import main

ROOT = Path(__file__).resolve().parent.parent
TIMEOUT = 240  # a bound for a hung group, not a speed target
HEARTBEAT = 10  # seconds without a heartbeat before the group stops a dead process's peers

# a graph of 16 cities (16 divides over 2 and 4 processes): a chain, a back edge, two shortcuts
EDGES = [(f"C{i}", f"C{i + 1}") for i in range(15)] + [("C15", "C3"), ("C0", "C8"),
                                                      ("C5", "C12")]
CLOSURE = textwrap.dedent("""\
    Edge(x,y) = "edges.tsv"
    Reach(x,y) = Edge(x,y)
    Reach(x,z) = Reach(x,y) Edge(y,z)
    Cyclic(x) = Reach(x,x)
    Reach(C0, x)?
    Cyclic(x)?
    "out/reach.tsv" = Reach(x,y)
    export Reach, Cyclic
""")

MLP = textwrap.dedent("""\
    X[n,j] = "mlp_x.npy"
    T[n] = "mlp_t.npy"
    axis h = 8
    param W1[h,j] = normal(0.5), W2[h] = normal(0.5)
    H[n,h] = tanh(W1[h,j] X[n,j])
    Y[n] = W2[h] H[n,h]
    L avg= (Y[n] - T[n])^2
    train L
""")

# one process of the group: attention and a transformer block (their sources .npy
# files and a safetensors tensor, p split over the processes), the closure (x split), each compiled by
# jax.jit, and three training steps of an MLP (n split); as JSON
CHILD = textwrap.dedent("""
    import json, sys
    from pathlib import Path
    import fuse_lang

    folder = Path(sys.argv[1])
    group = fuse_lang.distributed.initialize()
    out = {"process": group.process_id, "processes": group.num_processes,
           "devices": group.global_devices}
    # X from a weights manifest of two shard files along p: each process opens only
    # the ones its rows are in
    attention = fuse_lang.compile((folder / "attention.fuse").read_text(), backend="jax",
                                  base_dir=folder, shard={"p": "data"}, distributed=True,
                                  weights=folder / "attention_weights.json")
    native = attention.run_native()
    out["shards_opened"] = attention.weights.host["X"].opened
    out["rows_here"] = {n: [s.data.shape[0] for s in v.addressable_shards]
                        for n, v in native.items()}
    out["attention"] = {n: v.tolist() for n, v in attention.run().items()}
    block = fuse_lang.compile((folder / "transformer.fuse").read_text(), backend="jax",
                              base_dir=folder, shard={"p": "data"}, distributed=True)
    out["transformer"] = {n: v.tolist() for n, v in block.run().items()}
    mlp = fuse_lang.compile((folder / "mlp.fuse").read_text(), backend="jax", base_dir=folder,
                            shard={"n": "data"}, distributed=True)
    trained = mlp.train(optimizer="sgd", learning_rate=0.1, steps=3, seed=0)
    out["losses"] = trained.losses
    out["params"] = {n: v.tolist() for n, v in trained.params.items()}
    closure = fuse_lang.compile((folder / "closure.fuse").read_text(), backend="jax",
                                base_dir=folder, shard={"x": "data"}, distributed=True)
    result = closure.execute()
    out["queries"] = [q.tuples for q in result.queries]
    out["closure"] = {n: v.tolist() for n, v in result.outputs.items()}
    out["sinks"] = result.sinks
    print(json.dumps(out))
""")

# one process that runs the closure again and again (no sink) and then once with
# its sink: killed in between, its peers must stop and the sink must not exist
LOOPING = textwrap.dedent("""
    import sys, time
    from pathlib import Path
    import fuse_lang

    folder = Path(sys.argv[1])
    fuse_lang.distributed.initialize()
    closure = fuse_lang.compile((folder / "closure.fuse").read_text(), backend="jax",
                                base_dir=folder, shard={"x": "data"}, distributed=True)
    started = time.monotonic()
    k = 0
    while time.monotonic() - started < 90:
        closure.execute(write_sinks=False)
        k += 1
        print("round", k, flush=True)
    closure.execute()
""")


_RESERVED: list[socket.socket] = []  # the ports of the groups started, held until the end


@pytest.fixture(scope="module", autouse=True)
def _ports_let_go():
    yield
    while _RESERVED:
        _RESERVED.pop().close()


def free_port() -> int:
    """A port for a group's coordinator, kept bound here (SO_REUSEPORT, not listening)
    while the group runs: no other process can take it between this choice and the
    coordinator's bind, nor can the next group be given it (a port closed here at
    once was free for anyone; the coordinator's gRPC server binds with SO_REUSEPORT,
    so it shares the port with this socket, which takes no connections)."""
    held = socket.socket()
    held.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEPORT, 1)
    held.bind(("127.0.0.1", 0))
    _RESERVED.append(held)
    return held.getsockname()[1]


def group_env(port: int, count: int, rank: int) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k != "XLA_FLAGS"}  # one CPU device each
    env.update({"JAX_COORDINATOR_ADDRESS": f"127.0.0.1:{port}",
                "JAX_NUM_PROCESSES": str(count), "JAX_PROCESS_ID": str(rank),
                "FUSE_HEARTBEAT_TIMEOUT": str(HEARTBEAT), "JAX_PLATFORMS": "cpu",
                "PYTHONPATH": os.pathsep.join(p for p in (str(ROOT), env.get("PYTHONPATH"))
                                              if p)})
    return env


def start_group(args: list[str], count: int, cwd: Path) -> list[subprocess.Popen]:
    port = free_port()
    return [subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                             env=group_env(port, count, rank), cwd=cwd)
            for rank in range(count)]


def finish(procs: list[subprocess.Popen]) -> list[subprocess.CompletedProcess]:
    done = []
    deadline = time.monotonic() + TIMEOUT
    for proc in procs:
        try:
            out, err = proc.communicate(timeout=max(1.0, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            for other in procs:
                other.kill()
            out, err = proc.communicate()
        done.append(subprocess.CompletedProcess(proc.args, proc.returncode, out, err))
    return done


def make_folder(folder: Path) -> Path:
    """attention.fuse (P = 16 positions, .npy sources), transformer.fuse (its input
    from a safetensors file), mlp.fuse and closure.fuse, with their data."""
    rng = np.random.default_rng(0)
    for name, shape in {"x": (16, 16), "wq": (8, 16), "wk": (8, 16), "wv": (4, 16)}.items():
        np.save(folder / f"attention_{name}.npy", rng.standard_normal(shape))
    x = np.load(folder / "attention_x.npy")  # also as two shards along p, in a manifest
    np.save(folder / "attention_x0.npy", x[:8])
    np.save(folder / "attention_x1.npy", x[8:])
    (folder / "attention_weights.json").write_text(json.dumps({"tensors": {"X": {
        "shards": ["attention_x0.npy", "attention_x1.npy"], "axis": "p", "shape": [16, 16]}}}))
    text = (ROOT / "examples/attention.fuse").read_text().replace("data/attention_", "attention_")
    (folder / "attention.fuse").write_text(text)
    # a transformer block (examples/transformer.fuse) over P = 12 positions
    for path in sorted((ROOT / "examples/data").glob("transformer_*.npy")):
        np.save(folder / path.name, np.load(path))
    # its input a tensor of a safetensors file (memory-mapped over the group, as .npy)
    from safetensors.numpy import save_file

    save_file({"x": rng.standard_normal((12, 8)), "unused": np.zeros(3)},
              str(folder / "transformer_in.safetensors"))
    text = (ROOT / "examples/transformer.fuse").read_text()
    (folder / "transformer.fuse").write_text(
        text.replace("data/transformer_x.npy", "transformer_in.safetensors:x")
        .replace("data/transformer_", "transformer_").replace("causal_mask(6)",
                                                               "causal_mask(12)"))
    # an MLP whose training step is sharded along its examples n
    np.save(folder / "mlp_x.npy", rng.standard_normal((16, 4)))
    np.save(folder / "mlp_t.npy", rng.standard_normal(16))
    (folder / "mlp.fuse").write_text(MLP)
    (folder / "edges.tsv").write_text("".join(f"{a}\t{b}\n" for a, b in EDGES))
    (folder / "closure.fuse").write_text(CLOSURE)
    return folder


def single_process(folder: Path) -> dict:
    """The same programs run in this one process (the reference engine)."""
    reference = folder / "reference"
    reference.mkdir()
    for name in ("closure.fuse", "edges.tsv"):
        (reference / name).write_text((folder / name).read_text())
    attention = fuse_lang.compile((folder / "attention.fuse").read_text(), base_dir=folder)
    closure = fuse_lang.compile(CLOSURE, base_dir=reference).execute()
    block = fuse_lang.compile((folder / "transformer.fuse").read_text(), base_dir=folder)
    # training needs torch or jax: jax, in this one process, on one device
    trained = fuse_lang.compile(MLP, backend="jax", base_dir=folder).train(
        optimizer="sgd", learning_rate=0.1, steps=3, seed=0)
    return {"attention": attention.run(), "transformer": block.run(), "queries": [q.tuples for q in closure.queries],
            "closure": closure.outputs,
            "losses": trained.losses, "params": trained.params, "sink": (reference / "out/reach.tsv").read_text()}


@pytest.fixture(scope="module")
def jax_here() -> None:
    pytest.importorskip("jax")


@pytest.fixture(scope="module")
def groups(tmp_path_factory, jax_here) -> dict:
    """A group of 2 and one of 4 processes, started together, and the reference."""
    runs = {}
    for count in (2, 4):
        folder = make_folder(tmp_path_factory.mktemp(f"group{count}"))
        runs[count] = (folder, start_group([sys.executable, "-c", CHILD, str(folder)], count,
                                           folder))
    done = {count: (folder, finish(procs)) for count, (folder, procs) in runs.items()}
    return {"runs": done, "reference": single_process(done[2][0])}


def answers(procs: list[subprocess.CompletedProcess]) -> list[dict]:
    for proc in procs:
        assert proc.returncode == 0, proc.stderr[-3000:]
    return [json.loads(proc.stdout.strip().splitlines()[-1]) for proc in procs]


@pytest.mark.parametrize("count", [2, 4])
def test_a_group_of_processes_gives_the_single_process_answers(groups, count):
    folder, procs = groups["runs"][count]
    reference = groups["reference"]
    for rank, out in enumerate(answers(procs)):
        assert (out["process"], out["processes"], out["devices"]) == (rank, count, count)
        for program in ("attention", "transformer"):
            assert sorted(out[program]) == sorted(reference[program])
            for name, value in reference[program].items():
                np.testing.assert_allclose(np.array(out[program][name]), value, **TOLERANCE)
        assert [[tuple(t) for t in q] for q in out["queries"]] == reference["queries"]
        for name, value in reference["closure"].items():
            assert np.array_equal(np.array(out["closure"][name]), value)
        # three training steps of the MLP, its examples split over the processes
        np.testing.assert_allclose(out["losses"], reference["losses"], **TOLERANCE)
        for name, value in reference["params"].items():
            np.testing.assert_allclose(np.array(out["params"][name]), value, **TOLERANCE)
        # each process holds its own rows of the p-sharded results: 16 / count of them
        assert out["rows_here"] == {"Attn": [16 // count], "Comp": [16 // count]}
        # and opened only the shard file of X its rows are in (rows 0-7, 8-15)
        assert out["shards_opened"] == [rank * 2 // count], out["shards_opened"]


@pytest.mark.parametrize("count", [2, 4])
def test_the_sink_is_written_once_whole(groups, count):
    folder, procs = groups["runs"][count]
    sink = folder / "out/reach.tsv"
    assert sink.read_text() == groups["reference"]["sink"]
    assert sorted(p.name for p in sink.parent.iterdir()) == ["reach.tsv"]  # no temporaries


def test_fuse_run_distributed_prints_once(tmp_path, jax_here):
    folder = make_folder(tmp_path)
    cli = [sys.executable, "-m", "fuse_lang.cli", "run", "closure.fuse", "--backend", "jax",
           "--distributed", "--shard", "x=data", "--format", "json"]
    first, second = finish(start_group(cli, 2, folder))
    assert first.returncode == 0, first.stderr[-3000:]
    assert second.returncode == 0, second.stderr[-3000:]
    assert second.stdout == ""  # process 1 computes, process 0 says
    shown = json.loads(first.stdout)
    (folder / "out/reach.tsv").unlink()
    alone = subprocess.run([sys.executable, "-m", "fuse_lang.cli", "run", "closure.fuse",
                            "--format", "json"], capture_output=True, text=True, cwd=folder,
                           env=group_env(0, 1, 0), timeout=TIMEOUT)
    assert alone.returncode == 0, alone.stderr
    assert shown["queries"] == json.loads(alone.stdout)["queries"]


def test_a_killed_process_stops_the_group_and_leaves_no_sink(tmp_path, jax_here):
    folder = make_folder(tmp_path)
    procs = start_group([sys.executable, "-u", "-c", LOOPING, str(folder)], 2, folder)
    survivor, victim = procs
    try:
        deadline = time.monotonic() + TIMEOUT
        while time.monotonic() < deadline:  # the group runs: kill process 1 mid-run
            line = victim.stdout.readline()
            assert line, victim.stderr.read()[-3000:]
            if line.startswith("round 2"):
                break
        victim.send_signal(signal.SIGKILL)
        killed = time.monotonic()
        _, err = survivor.communicate(timeout=HEARTBEAT + 60)
        stopped = time.monotonic() - killed
    finally:
        for proc in procs:
            proc.kill()
            proc.communicate()
    assert survivor.returncode != 0
    assert stopped < HEARTBEAT + 60
    assert "another task died" in err or "heartbeat" in err, err[-3000:]
    assert not (folder / "out").exists() or not any((folder / "out").iterdir())


def test_the_group_comes_from_the_environment():
    settings = fuse_lang.distributed.settings_from(
        {"JAX_COORDINATOR_ADDRESS": "10.0.0.1:1234", "JAX_NUM_PROCESSES": "4",
         "JAX_PROCESS_ID": "3"})
    assert settings == {"coordinator_address": "10.0.0.1:1234", "num_processes": 4,
                        "process_id": 3}
    assert fuse_lang.distributed.settings_from({}) == {}  # left to the launcher's variables
    with pytest.raises(fuse_lang.FuseError, match="JAX_NUM_PROCESSES='four'"):
        fuse_lang.distributed.settings_from({"JAX_NUM_PROCESSES": "four"})


def test_distributed_needs_the_jax_backend(capsys):
    assert main(["run", str(ROOT / "examples/datalog.fuse"), "--distributed"]) == 2
    assert "--distributed needs --backend jax" in capsys.readouterr().err
    with pytest.raises(fuse_lang.FuseError, match="needs the jax backend"):
        fuse_lang.compile("X[i] = 1.0\nexport X", backend="numpy", distributed=True)


def test_a_group_that_cannot_be_joined_is_said(jax_here):
    env = {k: v for k, v in os.environ.items() if not k.startswith(("JAX_", "SLURM_",
                                                                     "OMPI_", "PMI_"))}
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(ROOT), env.get("PYTHONPATH")) if p)
    proc = subprocess.run([sys.executable, "-m", "fuse_lang.cli", "run",
                           str(ROOT / "examples/datalog_file.fuse"), "--backend", "jax",
                           "--distributed"], capture_output=True, text=True, env=env,
                          timeout=TIMEOUT)
    assert proc.returncode == 1, proc.stderr
    assert "cannot join the process group" in proc.stderr
    assert "JAX_COORDINATOR_ADDRESS" in proc.stderr and "Traceback" not in proc.stderr
