"""The run layer's plan at its edges (an audit of issues 26 and 13 where they
meet, docs/execution.md "The run plan" and "Fields"): `fuse explain --format
json`'s "run" is the plan `fuse run` executes for every kind of program and
execution control; a compiled run's plan says what the compiled run does; a
blocked contraction is planned and guarded as the run splits it; Monte Carlo
estimates a scalar's sum; the Python API's names refuse what they cannot take
with a FuseError, never a traceback."""
from __future__ import annotations

import dataclasses
import inspect
import json

import numpy as np
import pytest

import fuse_lang
from fuse_lang import ExecutionConfig, FuseError
from fuse_lang.cli import main
from fuse_lang.run import program as program_module
from fuse_lang.run.fixpoint import closure as closure_module
from fuse_lang.run.run_plan import RunPlan

DENSE = "axis i = 3, j = 4, k = 5\nparam A[i,j], B[j,k], C[k]\nY[i] = A[i,j] B[j,k] C[k]\nexport Y\n"
CLOSURE = ("Edge(A, B)\nEdge(B, C)\nEdge(C, D)\nPath(x, y) = Edge(x, y)\n"
           "Path(x, z) = Path(x, y) Edge(y, z)\nexport Path\n")
NONLINEAR = "Edge(A, B)\nEdge(B, C)\nT(x, y) = Edge(x, y)\nT(x, z) = T(x, y) T(y, z)\nexport T\n"
NUMERIC = "axis i = 3\nparam W[i]\nX[i] = W[i]\nX[i] = 0.5 X[i]\nexport X\n"
# numeric recursion through offsets: a recurrence over t reading t-1
OFFSETS = ("axis t = 6, i = 3\nparam W[i,j], X[t,j]\nH[0,i] = 0\n"
           "H[t,i] = tanh(W[i,j] H[t-1,j] + X[t,i])\nexport H\n")
SPARSE = ('Edge(x, y) = "edges.tsv"\nPath(x, y) = Edge(x, y)\n'
          "Path(x, z) = Path(x, y) Edge(y, z)\nPath(N1, x)?\n")
FUNCTION = ("fn sq(v[i]) -> y[i] { y[i] = v[i] v[i] }\nX[i] = const([1.0, 2.0, 3.0])\n"
            "Y[i] = sq(X[i])\nexport Y\n")
LET = "X[i] = const([1.0, 2.0, 3.0])\n{ let h[i] = 2 X[i]; Y[i] = h[i] + 1 }\nexport Y\n"
IMPORT = ('import "lib/graph.fuse" as graph\nFlight(Paris, Lyon)\nFlight(Lyon, Oslo)\n'
          "Reach(x,y) = graph::reach(Flight(x,y))\nFromHub(x,y) = graph::Hub(x) Reach(x,y)\n"
          "export FromHub\n")
LIBRARY = "fn reach(e(x,y)) -> p(x,y) {\n  p(x,y) = e(x,y)\n  p(x,z) = p(x,y) e(y,z)\n}\nHub(Paris)\n"
SINK = 'X[i] = const([1.0, 2.0, 3.0])\nY[i] = X[i] X[i]\n"out.npy" = Y[i]\nexport Y\n'
QUERY = ("Edge(A, B)\nEdge(B, C)\nPath(x, y) = Edge(x, y)\nPath(x, z) = Path(x, y) Edge(y, z)\n"
         "Path(A, x)?\n")
SOURCE = 'A[i,j] = "a.npy"\nY[i] = A[i,j]\nUnused[i] = A[i,j] A[i,j]\nexport Y\n'

PROGRAMS = {"dense einsum": DENSE, "Datalog closure": CLOSURE, "non-linear Datalog": NONLINEAR,
            "numeric recursion": NUMERIC, "recursion through offsets": OFFSETS,
            "sparse relation file": SPARSE, "fn": FUNCTION, "let block": LET,
            "import": IMPORT, "sink": SINK, "query": QUERY, "source file": SOURCE}


def _folder(tmp_path):
    (tmp_path / "lib").mkdir()
    (tmp_path / "lib" / "graph.fuse").write_text(LIBRARY)
    (tmp_path / "edges.tsv").write_text("".join(f"N{k}\tN{k + 1}\n" for k in range(300)))
    np.save(tmp_path / "a.npy", np.arange(12, dtype=np.float32).reshape(3, 4))
    return tmp_path


def _explained(path, flags, capsys) -> dict:
    assert main(["explain", "--format", "json", str(path), *flags]) == 0
    return json.loads(capsys.readouterr().out)


def _executed(path, flags, capsys, monkeypatch) -> list[RunPlan]:
    """The plans `fuse run` executed (each run's `RunResult.plan`)."""
    plans: list[RunPlan] = []
    real = program_module.CompiledProgram.execute

    def spy(self, *args, **kwargs):
        result = real(self, *args, **kwargs)
        plans.append(result.plan)
        return result

    monkeypatch.setattr(program_module.CompiledProgram, "execute", spy)
    assert main(["run", str(path), *flags]) == 0, capsys.readouterr().err
    capsys.readouterr()
    return plans


@pytest.mark.parametrize("flags", [[], ["--fixpoint", "naive"], ["--mode", "demand"],
                                   ["--block-size", "2"]], ids=" ".join)
@pytest.mark.parametrize("kind", list(PROGRAMS))
def test_explains_run_section_is_the_plan_fuse_run_executes(tmp_path, capsys, monkeypatch,
                                                           kind, flags):
    path = _folder(tmp_path) / "p.fuse"
    path.write_text(PROGRAMS[kind])
    explained = _explained(path, flags, capsys)["run"]
    (plan,) = _executed(path, flags, capsys, monkeypatch)
    assert plan.to_json() == explained
    assert [n for g in explained["groups"] for n in g["tensors"]], "something runs"
    if kind == "sparse relation file":
        assert "Edge" in explained["sparse"]
    if flags == ["--mode", "demand"] and kind in ("sparse relation file", "query"):
        assert any(g["tensors"] == ["Path_bf"] for g in explained["groups"])
    if flags == ["--fixpoint", "naive"]:
        assert {g.get("strategy") for g in explained["groups"]} <= {None, "naive"}


def test_the_controls_change_the_run_plan_as_documented(tmp_path, capsys):
    path = tmp_path / "closure.fuse"
    path.write_text(CLOSURE)
    plain = _explained(path, [], capsys)
    assert plain["run"]["groups"][1]["strategy"] == "closure"
    naive = _explained(path, ["--fixpoint", "naive"], capsys)
    assert naive["run"]["groups"][1]["strategy"] == "naive"
    # what does not change what runs leaves the plan's decisions as they were
    for flags in (["--threads", "2"], ["--max-iterations", "50"], ["--tolerance", "0.1"]):
        assert _explained(path, flags, capsys)["run"] == plain["run"], flags
    plan = fuse_lang.compile(CLOSURE, config=ExecutionConfig(max_iterations=50, tolerance=0.1,
                                                             threads=2)).run_plan()
    assert (plan.max_iterations, plan.tolerance, plan.config.threads) == (50, 0.1, 2)


# ------------------------------------------------------------ refusals of the flags
REFUSED = [
    (["--samples", "5"], "samples is for projection='monte_carlo'"),
    (["--seed", "1"], "seed is for projection='monte_carlo'"),
    (["--estimate", "Y"], "estimate is for projection='monte_carlo'"),
    (["--importance", "Y=C"], "importance is for projection='monte_carlo'"),
    (["--projection", "monte_carlo"], "needs samples"),
    (["--projection", "monte_carlo", "--samples", "0"], "samples must be a whole number"),
    (["--block-size", "0"], "block_size must be a whole number of at least 1, not 0"),
    (["--max-iterations", "-1"], "max_iterations must be a whole number of at least 1"),
    (["--tolerance", "nan"], "tolerance must be a finite number of at least 0, not nan"),
    (["--threads", "0"], "threads must be a whole number of at least 1, not 0"),
    (["--projection", "monte_carlo", "--samples", "1", "--seed", "-1"],
     "seed must be a whole number of at least 0"),
    (["--projection", "monte_carlo", "--samples", "1", "--estimate", "Nope"],
     "estimate names `Nope`"),
    (["--projection", "monte_carlo", "--samples", "1", "--importance", "Nope=C"],
     "importance names `Nope`, which is not a tensor of this program"),
]


@pytest.mark.parametrize(("flags", "words"), REFUSED, ids=[" ".join(f) for f, _ in REFUSED])
def test_a_refused_control_is_said_in_words_by_explain_and_run(tmp_path, capsys, flags, words):
    """docs/execution.md: `fuse run` exits 1 with the message; `fuse explain` exits 2."""
    path = tmp_path / "dense.fuse"
    path.write_text(DENSE)
    for command, status in (("explain", 2), ("run", 1)):
        assert main([command, str(path), *flags]) == status, command
        err = capsys.readouterr().err
        assert words in err and "Traceback" not in err and "internal error" not in err


# ------------------------------------------------------------ torch and jax
LONG_CHAIN = "".join(f"Edge(N{k}, N{k + 1})\n" for k in range(40)) + \
    "Path(x, y) = Edge(x, y)\nPath(x, z) = Path(x, y) Edge(y, z)\nexport Path\n"

RUNS = [("numpy", False), ("torch", False), ("torch", True), ("jax", False), ("jax", True)]


@pytest.mark.parametrize(("backend", "compiled"), RUNS, ids=[f"{b}-{'compiled' if c else 'eager'}"
                                                           for b, c in RUNS])
def test_a_linear_closure_is_planned_as_the_run_computes_it(monkeypatch, backend, compiled):
    """The graph search finishes a deep linear closure only in an eager run; a
    compiled run keeps its rounds, and its plan (what explain renders) says so:
    it said `closure` for rounds the compiled run took without any search."""
    if backend != "numpy":
        pytest.importorskip(backend)
    searches = []
    real = closure_module._search
    monkeypatch.setattr(closure_module, "_search",
                        lambda *a, **k: searches.append(1) or real(*a, **k))
    program = fuse_lang.compile(LONG_CHAIN, backend=backend, compiled=compiled)
    explained = fuse_lang.explain(program)
    result = program.execute()
    assert result.plan is explained.run_plan
    (group,) = [g for g in result.plan.schedule(True).groups if g.how == "fixpoint"]
    assert group.strategy == ("semi_naive" if compiled else "closure")
    assert bool(searches) is (not compiled)
    assert result.plan.to_json()["compiled"] is compiled
    assert ("then one graph search" in explained.text()) is (not compiled)
    assert int(np.asarray(result.outputs["Path"]).sum()) == 40 * 41 // 2
    assert result.rounds == {("Path",): 40}


@pytest.mark.parametrize("backend", ["torch", "jax"])
def test_explain_of_a_framework_program_is_its_runs_plan(backend):
    pytest.importorskip(backend)
    for text in (DENSE, NUMERIC, QUERY):
        for config in (ExecutionConfig(), ExecutionConfig(mode="demand")):
            program = fuse_lang.compile(text, backend=backend, config=config)
            explained = fuse_lang.explain(program)
            assert program.execute().plan is explained.run_plan  # (params: their starts)
            assert explained.run_plan.to_json()["backend"] == backend
            compiled = ", compiled" if program.compiled else ""
            assert f"run plan ({backend}{compiled}):" in explained.text()
            given = {"W": np.ones(3)} if "W" in text else {}
            assert program.execute(given).plan is program.run_plan(given)


# ------------------------------------------------------------ blocked contraction
MAX_JOIN = "axis i = 40, j = 50, k = 60\nparam A[i,j], B[j,k]\nM[i] max= A[i,j] B[j,k]\nexport M\n"


@pytest.mark.parametrize(("block_size", "blocks", "peak"),
                         [(1, 40, 3000), (100, 40, 3000), (5000, 24, 6000)])
def test_a_blocked_join_is_planned_as_the_run_splits_it(tmp_path, capsys, block_size, blocks,
                                                       peak):
    """The run splits along the longest kept index (i, 40 values), never into more
    blocks than it has values: explain said `1200 blocks; peak 100 elements` for
    block_size 100 and the memory estimate counted 100 elements, while each block
    held 50 x 60."""
    path = tmp_path / "join.fuse"
    path.write_text(MAX_JOIN)
    data = _explained(path, ["--block-size", str(block_size)], capsys)
    (blocked,) = data["execution"]["blocked"]
    assert (blocked["intermediate"], blocked["blocks"], blocked["peak"]) == (120000, blocks, peak)
    assert data["run"]["memory"]["largest intermediate"] == peak * 4  # float32


def test_the_memory_guard_counts_a_blocked_joins_real_peak():
    rng = np.random.default_rng(0)
    inputs = {"A": rng.normal(size=(40, 50)), "B": rng.normal(size=(50, 60))}
    config = ExecutionConfig(block_size=1)
    memory = fuse_lang.compile(MAX_JOIN, config=config).run_plan().schedule(True).memory
    assert memory.peak == (3000 * 4, "M")
    # a limit that block_size elements would fit but the 3000-element blocks do not
    with pytest.raises(FuseError, match=r"plus 12\.0 kB while computing M"):
        fuse_lang.compile(MAX_JOIN, config=config,
                          memory_limit=memory.total + 100).execute(inputs)
    got = fuse_lang.compile(MAX_JOIN, config=config,
                            memory_limit=memory.total + 3000 * 4).run(inputs)["M"]
    expected = (inputs["A"][:, :, None] * inputs["B"][None]).max(axis=(1, 2))
    np.testing.assert_allclose(got, expected, rtol=1e-5)


# ------------------------------------------------------------ Monte Carlo of a scalar
DOT = "param A[j], B[j]\naxis j = 4000\nS = A[j] B[j]\nexport S\n"


def test_monte_carlo_estimates_a_scalars_sum():
    """`S = A[j] B[j]` is one product of references summing an index: it was
    refused by `--estimate S` and summed exactly otherwise."""
    rng = np.random.default_rng(0)
    inputs = {"A": rng.normal(size=4000), "B": rng.normal(size=4000) + 1}
    exact = inputs["A"] @ inputs["B"]
    within = 0
    for seed in range(40):
        config = ExecutionConfig(projection="monte_carlo", samples=400, seed=seed,
                                 estimate=("S",))
        result = fuse_lang.compile(DOT, precision="fp64", config=config).execute(inputs)
        estimate = result.estimates["S"]
        assert (estimate["index"], estimate["samples"], estimate["extent"]) == ("j", 400, 4000)
        assert float(result.outputs["S"]) != pytest.approx(exact)  # drawn, not summed
        within += abs(float(result.outputs["S"]) - exact) < 4 * estimate["max_standard_error"]
    assert within >= 38  # 4 standard errors: all but a rare one


@pytest.mark.parametrize("backend", ["torch", "jax"])
def test_a_scalars_estimate_is_the_same_on_every_backend(backend):
    pytest.importorskip(backend)
    rng = np.random.default_rng(1)
    inputs = {"A": rng.normal(size=4000), "B": rng.normal(size=4000)}
    config = ExecutionConfig(projection="monte_carlo", samples=100, seed=7)
    ours = fuse_lang.compile(DOT, precision="fp64", config=config).execute(inputs)
    theirs = fuse_lang.compile(DOT, backend=backend, compiled=False, precision="fp64",
                               config=config).execute(inputs)
    np.testing.assert_allclose(np.asarray(theirs.outputs["S"]), ours.outputs["S"], rtol=1e-9)
    assert theirs.estimates["S"]["max_standard_error"] == \
        pytest.approx(ours.estimates["S"]["max_standard_error"])


def test_explain_and_run_name_the_same_estimated_tensors(tmp_path, capsys):
    rng = np.random.default_rng(2)
    np.save(tmp_path / "a.npy", rng.normal(size=(3, 400)).astype(np.float32))
    np.save(tmp_path / "b.npy", rng.normal(size=400).astype(np.float32))
    path = tmp_path / "mc.fuse"
    path.write_text('A[i,j] = "a.npy"\nB[j] = "b.npy"\nY[i] = A[i,j] B[j]\n'
                    "M[i] max= A[i,j] B[j]\nS = B[j] B[j]\nexport Y, M, S\n")
    flags = ["--projection", "monte_carlo", "--samples", "10", "--seed", "4"]
    explained = _explained(path, flags, capsys)["execution"]["sampled"]
    assert main(["run", "--format", "json", str(path), *flags]) == 0
    ran = json.loads(capsys.readouterr().out)["estimates"]
    assert sorted(s["tensor"] for s in explained) == sorted(ran) == ["S", "Y"]


# ------------------------------------------------------------ the Python API
def test_the_documented_names_have_their_documented_shapes():
    fields = {f.name: f for f in dataclasses.fields(ExecutionConfig)}
    assert {"mode", "fixpoint", "max_iterations", "tolerance", "block_size", "projection",
            "samples", "seed", "importance", "estimate", "trace", "backend", "device",
            "precision", "cache_dir", "threads"} == set(fields)
    defaults = ExecutionConfig()
    assert (defaults.mode, defaults.fixpoint, defaults.max_iterations, defaults.tolerance,
            defaults.block_size, defaults.projection, defaults.trace, defaults.backend,
            defaults.device, defaults.precision) == (
        "forward", "semi_naive", None, 1e-6, None, "exact", False, "numpy", "cpu", "fp32")
    assert "config" in inspect.signature(fuse_lang.compile).parameters
    program = fuse_lang.compile(CLOSURE)
    plan = program.run_plan()
    assert isinstance(plan, RunPlan) and program.run_plan({}) is plan
    result = program.execute()
    assert result.plan is plan and result.rounds == {("Path",): 3}  # a 3-edge chain
    assert result.trace is None and result.backend is None
    assert set(plan.to_json()) == {"signature", "backend", "compiled", "sparse", "constants",
                                   "groups", "memory"}
    assert set(plan.to_json()["memory"]) == {"tensors", "largest intermediate", "params",
                                             "inputs", "activations"}
    assert program.memory_needed() == plan.schedule(True).memory.total + \
        plan.schedule(True).memory.peak[0]
    explained = fuse_lang.explain(program)
    assert explained.run_plan is plan and explained.plan is plan.contractions
    assert "run plan (numpy):" in explained.text() and str(explained) == explained.text()


@pytest.mark.parametrize("inputs", [[1, 2], "W", 3])
def test_inputs_that_are_not_a_mapping_are_refused_in_words(inputs):
    # a list raised AttributeError ('list' object has no attribute 'items')
    program = fuse_lang.compile(NUMERIC)
    for call in (program.execute, program.run, program.run_plan):
        with pytest.raises(FuseError, match="a run's inputs are a mapping of source or param "
                                            "names to arrays"):
            call(inputs)


def test_a_variant_refuses_what_it_cannot_run():
    program = fuse_lang.compile(CLOSURE)
    # a backend's name was kept as the backend: the run failed with AttributeError
    with pytest.raises(FuseError, match="takes a backend object, not 'torch'"):
        program.variant(backend="torch")
    # a compiled numpy run failed at run time with NotImplementedError
    with pytest.raises(FuseError, match="the numpy backend runs eagerly only"):
        program.variant(compiled=True)
    with pytest.raises(FuseError, match="compiled is True, False or None"):
        program.variant(compiled="yes")
    assert program.variant().execute().outputs["Path"].sum() == 6


def test_compiled_that_is_not_a_bool_is_refused():
    with pytest.raises(FuseError, match="compiled is True, False or None"):
        fuse_lang.compile(DENSE, compiled="yes")


@pytest.mark.parametrize("targets", ["Y", [3], 5])
def test_targets_that_are_not_a_list_of_names_are_refused(targets):
    # a string was taken letter by letter ("`Y` is not ..." for "Y2"), and [3]
    # raised AttributeError ('int' object has no attribute 'strip')
    with pytest.raises(FuseError, match="targets is a list of tensor names or query texts"):
        fuse_lang.compile(LET, targets=targets)
    assert fuse_lang.compile(LET, targets=("Y",)).run()["Y"].tolist() == [3.0, 5.0, 7.0]
