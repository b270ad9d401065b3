"""Sharding over a device mesh (issue 15, item 3), through the public entry points:
`fuse_lang.compile(..., backend="jax", mesh=..., shard=...)`, `fuse run --shard`,
`fuse explain --shard`.

JAX reads XLA_FLAGS once, at its first import, and this test process may
already hold jax with one device: the runs on 8 host devices happen in child
processes that set XLA_FLAGS=--xla_force_host_platform_device_count=8 first.
Results must equal the single-device run within the conformance TOLERANCE.
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

import fuse_lang
from fuse_lang.cli import main
from fuse_lang.plan.render import render_plan_markdown
from fuse_lang.plan.sharding import plan_sharding

ROOT = Path(__file__).resolve().parent.parent
EXAMPLES = ROOT / "examples"
ATTENTION = EXAMPLES / "attention.fuse"
DATALOG = EXAMPLES / "datalog_file.fuse"
TIMEOUT = 300  # a bound for a hung child, not a speed target


def eight_devices_env() -> dict[str, str]:
    env = dict(os.environ)
    env["XLA_FLAGS"] = "--xla_force_host_platform_device_count=8"
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(ROOT), env.get("PYTHONPATH")) if p)
    return env


def start(args: list[str]) -> subprocess.Popen:
    return subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env=eight_devices_env(), cwd=ROOT)


def finish(proc: subprocess.Popen) -> subprocess.CompletedProcess:
    try:
        out, err = proc.communicate(timeout=TIMEOUT)
    except subprocess.TimeoutExpired:
        proc.kill()
        out, err = proc.communicate()
    return subprocess.CompletedProcess(proc.args, proc.returncode, out, err)


# Run in a child with 8 host devices: attention (P = 16, given as inputs) and a
# Datalog closure, each sharded (compiled by jax.jit and eager) against one device.
CHILD = textwrap.dedent("""
    import json, sys
    import numpy as np
    import jax
    import fuse_lang
    from pathlib import Path

    root = Path(sys.argv[1])
    out = {"devices": len(jax.devices())}
    rng = np.random.default_rng(0)
    inputs = {"X": rng.standard_normal((16, 16)), "WQ": rng.standard_normal((8, 16)),
              "WK": rng.standard_normal((8, 16)), "WV": rng.standard_normal((4, 16))}
    attention = (root / "examples/attention.fuse").read_text()
    base = str(root / "examples")
    one = fuse_lang.compile(attention, backend="jax", base_dir=base).run(inputs)
    out["one_device"] = {n: v.tolist() for n, v in one.items()}
    for compiled in (True, False):
        program = fuse_lang.compile(attention, backend="jax", base_dir=base,
                                    shard={"p": "data"}, compiled=compiled)
        native = program.run_native(inputs)
        out[f"specs_{compiled}"] = {n: [str(a) for a in v.sharding.spec]
                                    for n, v in native.items()}
        out[f"sharded_{compiled}"] = {n: v.tolist() for n, v in program.run(inputs).items()}
    # a jax Mesh object of two axes (made Explicit by jax.make_mesh: Fuse makes it Auto)
    mesh = jax.make_mesh((4, 2), ("data", "model"))
    program = fuse_lang.compile(attention, backend="jax", base_dir=base, mesh=mesh,
                                shard={"p": "data", "dk": "model"})
    out["mesh_2d"] = {n: v.tolist() for n, v in program.run(inputs).items()}
    try:
        fuse_lang.compile(attention, backend="jax", base_dir=base, shard={"p": "data"}).run()
    except fuse_lang.FuseError as err:
        out["uneven"] = str(err)
    datalog = (root / "examples/datalog_file.fuse").read_text()
    reference = fuse_lang.compile(datalog, base_dir=base).execute()
    out["datalog_reference"] = [q.tuples for q in reference.queries]
    for compiled in (True, False):
        result = fuse_lang.compile(datalog, backend="jax", base_dir=base, mesh={"data": 3},
                                   shard={"x": "data"}, compiled=compiled).execute()
        out[f"datalog_{compiled}"] = [q.tuples for q in result.queries]
        out[f"datalog_outputs_{compiled}"] = all(
            np.array_equal(result.outputs[n], reference.outputs[n]) for n in reference.outputs)
    print(json.dumps(out, default=list))
""")


@pytest.fixture(scope="module")
def children() -> dict[str, subprocess.CompletedProcess]:
    """Every child with 8 host devices, started together (each spends its time in
    importing jax and compiling)."""
    pytest.importorskip("jax")
    cli = [sys.executable, "-m", "fuse_lang.cli", "run", "--format", "json", str(ATTENTION)]
    running = {
        "engine": start([sys.executable, "-c", CHILD, str(ROOT)]),
        "cli": start(cli + ["--backend", "jax", "--shard", "p=data", "--mesh", "data=2"]),
        "cli numpy": start(cli),
        "cli uneven": start(cli + ["--backend", "jax", "--shard", "p=data"]),
    }
    return {name: finish(proc) for name, proc in running.items()}


def test_attention_sharded_over_8_host_devices_equals_one_device(children):
    proc = children["engine"]
    assert proc.returncode == 0, proc.stderr
    out = json.loads(proc.stdout.splitlines()[-1])
    assert out["devices"] == 8
    for run in ("sharded_True", "sharded_False", "mesh_2d"):
        for name, value in out["one_device"].items():
            np.testing.assert_allclose(out[run][name], value, **TOLERANCE, err_msg=run)
    # each result stays split over the mesh along p (its rows), compiled and eager
    for compiled in (True, False):
        specs = out[f"specs_{compiled}"]
        assert specs["Attn"][0] == "data" and specs["Comp"][0] == "data", specs


def test_datalog_sharded_equals_the_reference(children):
    out = json.loads(children["engine"].stdout.splitlines()[-1])
    for compiled in (True, False):
        assert out[f"datalog_{compiled}"] == out["datalog_reference"]
        assert out[f"datalog_outputs_{compiled}"]


def test_an_extent_the_mesh_axis_does_not_divide_is_refused(children):
    out = json.loads(children["engine"].stdout.splitlines()[-1])
    message = out["uneven"]
    assert "`X` has extent 6" in message and "(8 devices) does not divide" in message
    assert message.startswith("line 3:"), message
    proc = children["cli uneven"]
    assert proc.returncode == 1 and "Traceback" not in proc.stderr, proc.stderr
    assert "does not divide" in proc.stderr


def test_cli_run_sharded_equals_numpy(children):
    sharded, reference = children["cli"], children["cli numpy"]
    assert sharded.returncode == 0, sharded.stderr
    ours = json.loads(sharded.stdout)["outputs"]
    theirs = json.loads(reference.stdout)["outputs"]
    for name, value in theirs.items():
        np.testing.assert_allclose(ours[name]["values"], value["values"], **TOLERANCE)


# --------------------------------------------------------------- explain
def test_explain_shows_each_tensors_sharding_and_the_collectives(capsys):
    code = main(["explain", "--shard", "p=data", "--mesh", "data=2", str(ATTENTION)])
    text = capsys.readouterr().out
    assert code == 0
    assert text.startswith("Mesh: data=2; sharded: p->data")
    lines = {line.split()[0]: line for line in text.splitlines() if line.startswith("  ")
             and len(line.split()) >= 3}
    assert lines["X"].endswith("P('data', None)") and lines["WQ"].endswith("replicated")
    # the keys are split along p, but Comp keeps p' whole: an all-gather of Key;
    # Attn sums p' while p already splits it over data: an all-gather of Val
    assert "collective: all-gather over data of Key" in text
    assert "collective: all-gather over data of Val" in text
    assert "collective: none" in text


def test_explain_says_what_each_device_and_process_holds(capsys):
    code = main(["explain", "--shard", "p=data", "--mesh", "data=2", str(ATTENTION)])
    text = capsys.readouterr().out
    assert code == 0
    assert "each device (each process, one device each) holds X (3, 16), Query (3, 8)" in text
    assert main(["explain", "--format", "json", "--shard", "p=data", "--mesh", "data=2",
                 str(ATTENTION)]) == 0
    tensors = json.loads(capsys.readouterr().out)["sharding"]["tensors"]
    held = {t["tensor"]: t["per_device"] for t in tensors}
    assert held["X"] == [3, 16] and held["WQ"] == [8, 16] and held["Comp"] == [3, 6]


def test_a_sum_over_a_sharded_index_is_an_all_reduce():
    analysis = fuse_lang.analyze(ATTENTION.read_text(), str(ATTENTION))
    sharding = plan_sharding(analysis, {"d": "model"}, {"model": 4})
    by_tensor = {e.tensor: e.collectives for e in sharding.equations}
    (query,) = by_tensor["Query"]
    assert (query.kind, query.mesh_axis, query.index, query.tensors) == \
        ("all-reduce (sum)", "model", "d", ("Query",))
    assert by_tensor["Attn"] == ()
    assert sharding.spec_of("X") == (None, "model") and sharding.spec_of("Query") == (None, None)
    markdown = render_plan_markdown(fuse_lang.plan_program(analysis), sharding=sharding)
    assert "| `X` | `(6, 16)` | `P(None, 'model')` |" in markdown
    assert "collective: all-reduce (sum) over `model` of `Query`" in markdown


def test_explain_json_and_a_note_for_an_uneven_extent(capsys):
    code = main(["explain", "--format", "json", "--shard", "x=data", "--mesh", "data=2",
                 str(DATALOG)])
    data = json.loads(capsys.readouterr().out)
    assert code == 0
    sharding = data["sharding"]
    assert {t["tensor"]: t["spec"] for t in sharding["tensors"]}["Road"] == ["data", None]
    reach = [e for e in sharding["equations"] if e["text"].startswith("Reach(x,z)")][0]
    assert [(c["kind"], c["tensors"]) for c in reach["collectives"]] == \
        [("all-gather", ["Road"])]
    assert any("extent 9" in note and "does not divide" in note for note in sharding["notes"])
    main(["explain", str(DATALOG)])
    assert "Mesh:" not in capsys.readouterr().out  # without --shard: as before


# ---------------------------------------------------------------- errors
def test_shard_on_a_backend_other_than_jax_is_refused(capsys):
    with pytest.raises(fuse_lang.FuseError, match="needs the jax backend"):
        fuse_lang.compile(ATTENTION.read_text(), shard={"p": "data"})
    with pytest.raises(fuse_lang.FuseError, match="needs the jax backend"):
        fuse_lang.compile(ATTENTION.read_text(), backend="torch", mesh={"data": 1})
    assert main(["run", "--shard", "p=data", str(ATTENTION)]) == 2
    assert "need --backend jax" in capsys.readouterr().err


@pytest.mark.parametrize("shard, mesh, message", [
    ({"q": "data"}, {"data": 1}, "`q` names no tensor's axis"),
    ({"p": "model"}, {"data": 1}, "`model` (for index `p`) is not an axis of the mesh"),
    ({"p": "data", "d": "model"}, None, "give the mesh's shape"),
    ({"p": "data"}, {"data": 4096}, "needs 4096 devices"),
])
def test_unknown_names_and_impossible_meshes_are_refused(shard, mesh, message):
    pytest.importorskip("jax")
    with pytest.raises(fuse_lang.FuseError) as err:
        fuse_lang.compile(ATTENTION.read_text(), backend="jax", base_dir=EXAMPLES,
                          mesh=mesh, shard=shard)
    assert message in str(err.value)


@pytest.mark.parametrize("args, message", [
    (["explain", "--shard", "p"], "--shard takes INDEX=MESH_AXIS"),
    (["explain", "--shard", "p=data", "--mesh", "data=x"], "--mesh takes AXIS=N"),
    (["explain", "--shard", "q=data"], "`q` names no tensor's axis"),
    (["explain", "--shard", "p=data", "--mesh", "model=2"], "is not an axis of the mesh"),
])
def test_cli_usage_errors_exit_2(capsys, args, message):
    assert main(args + [str(ATTENTION)]) == 2
    assert message in capsys.readouterr().err
