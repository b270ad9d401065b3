"""The scale audit: docs/scale.md ("Sharding over a device mesh", "What `fuse explain
--shard` shows") and docs/limits.md held against the implementation, through
`fuse run`, `fuse explain` and `fuse_lang.compile`.

Sharded runs happen in one child process with 4 host devices (JAX reads
XLA_FLAGS once, at its first import; this process may already hold jax with one
device): relational and integer programs must equal the NumPy run exactly, a
training run's losses within the conformance tolerance, and a refused run
leaves its sinks as they were.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest
from conftest import TOLERANCE
from test_distributed import MLP  # (the MLP its three-Adam-steps test trains)

import fuse_lang
from fuse_lang.cli import main

ROOT = Path(__file__).resolve().parent.parent
ATTENTION = ROOT / "examples" / "attention.fuse"
DATALOG = ROOT / "examples" / "datalog.fuse"
TIMEOUT = 300  # a bound for a hung child, not a speed target


# ------------------------------------------------------------- --shard and --mesh
@pytest.mark.parametrize("command", [["run", "--backend", "jax"], ["explain"]])
@pytest.mark.parametrize("mesh", ["data=²", "data=٣", "data=0", "data=-2"])
def test_a_mesh_size_is_ascii_digits_or_a_usage_error(capsys, command, mesh):
    # '²' passed str.isdigit and int() then raised: a traceback
    assert main(command + ["--shard", "p=data", "--mesh", mesh, str(ATTENTION)]) == 2
    err = capsys.readouterr().err
    assert f"--mesh takes AXIS=N,... with N devices along each axis (data=8), not {mesh!r}" \
        in err
    assert "Traceback" not in err


@pytest.mark.parametrize("command", [["run", "--backend", "jax"], ["explain"]])
@pytest.mark.parametrize("args, message", [
    (["--shard", "p=data", "--mesh", "data=2,data=3"],
     "--mesh gives the axis `data` twice: each mesh axis has one size"),
    (["--shard", "p=data", "--shard", "p=model", "--mesh", "data=1,model=1"],
     "--shard gives the index `p` twice (p=data and p=model): an index is split over one "
     "mesh axis"),
    (["--shard", "p=data,p=model", "--mesh", "data=1,model=1"], "--shard gives the index `p` twice"),
])
def test_a_mesh_axis_or_an_index_given_twice_is_a_usage_error(capsys, command, args, message):
    # the later one silently replaced the earlier
    assert main(command + args + [str(ATTENTION)]) == 2
    assert message in capsys.readouterr().err


@pytest.mark.parametrize("command, document", [
    (["run", "--backend", "jax"], {"outputs": {}, "queries": [], "sinks": []}),
    (["explain"], {}),
])
@pytest.mark.parametrize("args, message", [
    (["--shard", "p"], "fuse: --shard takes INDEX=MESH_AXIS (p=data), not 'p'"),
    (["--shard", "p=data", "--mesh", "data=x"],
     "fuse: --mesh takes AXIS=N,... with N devices along each axis (data=8), not 'data=x'"),
])
def test_a_malformed_shard_or_mesh_still_writes_one_json_document(capsys, command, document,
                                                                   args, message):
    # docs/cli.md: --format json writes one document even when the command fails;
    # fuse run wrote none for these (they are read before the run starts)
    assert main(command + ["--format", "json"] + args + [str(ATTENTION)]) == 2
    assert json.loads(capsys.readouterr().out) == {**document, "error": message,
                                                   "diagnostics": []}


@pytest.mark.parametrize("backend, why", [
    ("numpy", "the numpy backend runs on one device"),
    ("auto", "--backend auto picks its backend by cost alone"),  # not "the auto backend"
])
def test_shard_without_the_jax_backend_is_a_usage_error(capsys, backend, why):
    assert main(["run", "--backend", backend, "--shard", "p=data", str(ATTENTION)]) == 2
    assert capsys.readouterr().err == f"fuse: --shard and --mesh need --backend jax ({why})\n"


def test_the_same_index_and_axis_repeated_is_one_split(capsys):
    assert main(["explain", "--shard", "p=data", "--shard", "p=data", "--mesh", "data=2",
                 str(ATTENTION)]) == 0
    assert capsys.readouterr().out.startswith("Mesh: data=2; sharded: p->data\n")


@pytest.mark.parametrize("shard, mesh, message", [
    ("p=data", None, "shard= maps index names to mesh axes ({'p': 'data'}), not a str"),
    ({"p": None}, None, "shard= maps index names to mesh axis names, both text "
                        "({'p': 'data'}), not 'p': None"),
    ({"p": 3}, None, "not 'p': 3"),
    ({3: "data"}, None, "not 3: 'data'"),
    ({"p": "data"}, {"data": "2"}, "mesh= maps axis names to positive numbers of devices "
                                   "({'data': 4}), not 'data': '2'"),
    ({"p": "data"}, {"data": 2.0}, "not 'data': 2.0"),
    ({"p": "data"}, {"data": True}, "not 'data': True"),
])
def test_compile_refuses_a_shard_or_mesh_of_the_wrong_types(shard, mesh, message):
    pytest.importorskip("jax")
    # a str shard was a ValueError from dict(), {'data': '2'} a TypeError in the plan,
    # {'p': None} jax's own ValueError
    with pytest.raises(fuse_lang.FuseError) as err:
        fuse_lang.compile(ATTENTION.read_text(), backend="jax", base_dir=ATTENTION.parent,
                          shard=shard, mesh=mesh)
    assert message in str(err.value)


@pytest.mark.parametrize("representation", ["E=sparse", ["E"]])
def test_compile_refuses_a_representation_that_is_not_a_mapping(representation):
    # a str was a ValueError from dict()
    with pytest.raises(fuse_lang.FuseError) as err:
        fuse_lang.compile(DATALOG.read_text(), representation=representation)
    assert str(err.value) == ("representation= maps tensor names to 'dense' or 'sparse' "
                              f"({{'Edge': 'sparse'}}), not a {type(representation).__name__}")


TARGETED = """\
Parent(A0, A1)
Parent(A1, A2)
Anc(x,y) = Parent(x,y)
Anc(x,z) = Anc(x,y) Parent(y,z)
Other(k,m) = Parent(k,m)
export Anc, Other
"""


def test_a_shard_index_outside_a_targets_cone_is_still_a_name_of_the_program(capsys, tmp_path):
    pytest.importorskip("jax")
    program = tmp_path / "targeted.fuse"
    program.write_text(TARGETED)
    # `k` names Other's axis: explain takes it, and so does a --target run that does
    # not compute Other (it said "`k` names no tensor's axis in this program")
    assert main(["explain", "--shard", "k=data", "--mesh", "data=1", str(program)]) == 0
    capsys.readouterr()
    args = ["run", "--backend", "jax", "--mesh", "data=1", "--target", "Anc", str(program)]
    assert main(args[:1] + ["--shard", "k=data"] + args[1:]) == 0
    assert capsys.readouterr().out == "Anc  3 tuples\n  (A0, A1)\n  (A0, A2)\n  (A1, A2)\n"
    assert main(args[:1] + ["--shard", "q=data"] + args[1:]) == 1
    assert "`q` names no tensor's axis in this program (sharding follows the index names " \
           "of each tensor's first definition: x, y, k, m)" in capsys.readouterr().err


# ------------------------------------------------------------- fuse explain --shard
def test_explain_a_replicated_result_is_computed_whole(capsys):
    assert main(["explain", "--shard", "d=data", "--mesh", "data=4", str(ATTENTION)]) == 0
    text = capsys.readouterr().out
    # Query sums d, split over data: an all-reduce; Comp and Attn read only replicated
    # tensors: each device computes all of them (not "its own block")
    assert "collective: all-reduce (sum) over data of Query" in text
    comp = text.split("line 13: Comp")[1].split("line 14:")[0]
    assert "collective: none (the result is replicated: each device computes all of it)" in comp
    assert main(["explain", "--shard", "p=data", "--mesh", "data=2", str(ATTENTION)]) == 0
    query = capsys.readouterr().out.split("line 9: Query")[1].split("line 10:")[0]
    assert "collective: none (each device computes its own block)" in query


def test_explain_notes_two_mesh_axes_without_their_sizes(capsys):
    # `fuse run` refuses this shard map without --mesh; explain said nothing of it
    assert main(["explain", "--format", "json", "--shard", "p=data,d=model",
                 str(ATTENTION)]) == 0
    notes = json.loads(capsys.readouterr().out)["sharding"]["notes"]
    assert notes == ["the shard map uses the mesh axes data, model: a run needs the mesh's "
                     "shape (--mesh data=N,model=N, or mesh= in the API), and refuses the "
                     "shard map without it"]
    assert main(["explain", "--shard", "p=data,d=model", "--mesh", "data=2,model=2",
                 str(ATTENTION)]) == 0
    assert "a run needs the mesh's shape" not in capsys.readouterr().out


def test_explain_says_a_sharded_run_keeps_its_relations_dense(capsys, tmp_path):
    n = 300  # 90,000 cells, 300 facts: planned sparse
    (tmp_path / "edge.tsv").write_text("".join(f"{i}\t{(i + 1) % n}\n" for i in range(n)))
    program = tmp_path / "closure.fuse"
    program.write_text('E(x,y) = "edge.tsv"\nR(x,y) = E(x,y)\nR(x,z) = R(x,y) E(y,z)\n'
                       "export R\n")
    assert main(["explain", "--shard", "x=data", "--mesh", "data=4", str(program)]) == 0
    text = capsys.readouterr().out
    assert "  E: sparse, ~300 of 90,000" in text
    assert "a compiled or sharded run keeps every tensor dense" in text
    # the run plan printed is numpy's; the sharded run is not that one
    assert "run plan (numpy):" in text
    assert "(a run with --shard is on jax over the mesh: compiled unless --no-compile, " \
           "every tensor dense)" in text
    assert main(["explain", str(program)]) == 0
    assert "a run with --shard" not in capsys.readouterr().out


# --------------------------------------------------- sharded runs on 4 host devices
CHILD = textwrap.dedent("""
    import json, sys
    from pathlib import Path
    import numpy as np
    import jax
    import fuse_lang

    folder = Path(sys.argv[1])
    out = {"devices": len(jax.devices())}

    def same(ref, got):
        ref = {k: np.asarray(v.toarray() if hasattr(v, "toarray") else v)
               for k, v in ref.items()}
        return sorted(ref) == sorted(got) and all(
            ref[k].shape == np.shape(got[k]) and np.array_equal(ref[k], np.asarray(got[k]))
            for k in ref)

    # relations over symbols: closure, diagonal, negation, counts, max=, queries
    relational = (folder / "relational.fuse").read_text()
    ref = fuse_lang.compile(relational, base_dir=folder).execute()
    for shard, mesh in (({"x": "data"}, None), ({"y": "data"}, {"data": 2})):
        for compiled in (True, False):
            got = fuse_lang.compile(relational, backend="jax", base_dir=folder, shard=shard,
                                    mesh=mesh, compiled=compiled).execute()
            key = f"relational {sorted(shard.items())} {compiled}"
            out[key] = same(ref.outputs, got.outputs) and \\
                [q.tuples for q in got.queries] == [q.tuples for q in ref.queries]
    # integers: sums, max=, min= over both axes of a 2 x 2 mesh
    numbers = (folder / "numbers.fuse").read_text()
    ref = fuse_lang.compile(numbers, base_dir=folder).run()
    for compiled in (True, False):
        got = fuse_lang.compile(numbers, backend="jax", base_dir=folder, compiled=compiled,
                                shard={"i": "data", "j": "model"},
                                mesh={"data": 2, "model": 2}).run()
        out[f"numbers {compiled}"] = same(ref, got)
    # three Adam steps of an MLP, its examples n split over the mesh
    mlp = (folder / "mlp.fuse").read_text()
    kw = dict(optimizer="adam", learning_rate=0.1, steps=3, seed=0)
    one = fuse_lang.compile(mlp, backend="jax", base_dir=folder).train(**kw)
    split = fuse_lang.compile(mlp, backend="jax", base_dir=folder, shard={"n": "data"}).train(**kw)
    out["losses"] = [one.losses, split.losses]
    # an extent the mesh axis does not divide, met at a computed tensor: refused, and
    # no sink written (an earlier file stays as it was)
    (folder / "pooled.npy").write_text("earlier")
    try:
        fuse_lang.compile((folder / "uneven.fuse").read_text(), backend="jax",
                          base_dir=folder, shard={"x": "data"}).execute()
    except fuse_lang.FuseError as err:
        out["uneven"] = str(err)
    out["sinks"] = [(folder / "whole.npy").exists(), (folder / "pooled.npy").read_text()]
    print(json.dumps(out))
""")

RELATIONAL = """\
E(x,y) = "edges.tsv"
R(x,y) = E(x,y)
R(x,z) = R(x,y) E(y,z)
Cyc(x) = R(x,x)
OneWay(x,y) = E(x,y) not R(y,x)
Out[x] = R(x,y)
Most[x] max= Out[y] R(x,y)
R(C0, y)?
Cyc(x)?
export R, Cyc, OneWay, Out, Most
"""

NUMBERS = """\
A[i,j] = "a.npy"
B[j] = "b.npy"
C[i] = A[i,j] B[j]
M[i] max= A[i,j]
N[j] min= A[i,j]
S = A[i,j] A[i,j]
export C, M, N, S
"""


UNEVEN = """\
F[x] = "f.npy"
"whole.npy" = F[x]
P[x/2] max= F[x]
"pooled.npy" = P[x]
export P
"""


@pytest.fixture(scope="module")
def child(tmp_path_factory) -> dict:
    pytest.importorskip("jax")
    folder = tmp_path_factory.mktemp("scale_audit")
    cities = [f"C{i}" for i in range(8)]
    edges = [(cities[i], cities[i + 1]) for i in range(7)] + [("C2", "C5"), ("C6", "C1")]
    (folder / "edges.tsv").write_text("".join(f"{a}\t{b}\n" for a, b in edges))
    rng = np.random.default_rng(0)
    np.save(folder / "a.npy", rng.integers(-9, 9, (8, 4)))
    np.save(folder / "b.npy", rng.integers(-9, 9, 4))
    np.save(folder / "mlp_x.npy", rng.standard_normal((16, 4)))
    np.save(folder / "mlp_t.npy", rng.standard_normal(16))
    np.save(folder / "f.npy", np.arange(12.0))  # 12 rows split 4 ways; pooled, 6 are not
    for name, text in (("relational", RELATIONAL), ("numbers", NUMBERS), ("mlp", MLP),
                       ("uneven", UNEVEN)):
        (folder / f"{name}.fuse").write_text(text)
    env = dict(os.environ)
    env["XLA_FLAGS"] = "--xla_force_host_platform_device_count=4"
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(ROOT), env.get("PYTHONPATH")) if p)
    proc = subprocess.run([sys.executable, "-c", CHILD, str(folder)], capture_output=True,
                          text=True, env=env, cwd=ROOT, timeout=TIMEOUT)
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout.splitlines()[-1])


def test_relations_and_integers_sharded_equal_the_numpy_run_exactly(child):
    assert child["devices"] == 4
    runs = {k: v for k, v in child.items() if k.startswith(("relational", "numbers"))}
    assert len(runs) == 6 and all(runs.values()), runs


def test_training_with_its_examples_split_equals_one_device(child):
    one, split = child["losses"]
    assert len(one) == 3
    np.testing.assert_allclose(split, one, **TOLERANCE)


def test_an_uneven_computed_tensor_is_refused_and_no_sink_is_written(child):
    assert child["uneven"] == (
        "line 3: `P[x/2] max= F[x]`: `P` has extent 6 along the axis sharded over `data`, "
        "which that mesh axis (4 devices) does not divide: JAX shards evenly only (pad the "
        "data, or use a mesh axis whose size divides 6)")
    assert child["sinks"] == [False, "earlier"]
