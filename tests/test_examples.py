"""The programs of LANGUAGE.md §11 (and a Datalog program) as files in examples/:
each checks clean through the CLI, and the engine reads the right shapes,
roles and evaluation order from them and their data files."""
from __future__ import annotations

import json
import math
import subprocess
import sys
from pathlib import Path

import pytest

import fuse_lang
from fuse_lang import Severity

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"
PROGRAMS = sorted(EXAMPLES.glob("*.fuse"))
EXPECTED = {"perceptron", "attention", "cnn", "mlp", "rnn", "embedding_reasoning", "datalog"}


def fuse(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "fuse_lang.cli", *args],
                          capture_output=True, text=True, timeout=60)


def analyze(name: str) -> fuse_lang.Analysis:
    path = EXAMPLES / f"{name}.fuse"
    return fuse_lang.analyze(path.read_text(encoding="utf-8"), str(path))


def plan_of(analysis: fuse_lang.Analysis, tensor: str):
    plans = [e for e in fuse_lang.plan_program(analysis).equations if e.tensor == tensor]
    assert plans, f"no equation for {tensor}"
    return plans


def test_every_program_of_the_contract_has_an_example():
    assert EXPECTED <= {p.stem for p in PROGRAMS}


@pytest.mark.parametrize("path", PROGRAMS, ids=[p.stem for p in PROGRAMS])
def test_example_checks_clean_through_the_cli(path):
    proc = fuse("check", "--format", "json", str(path))
    assert proc.returncode == 0, proc.stdout + proc.stderr
    diagnostics = json.loads(proc.stdout)["diagnostics"]
    bad = [d for d in diagnostics if d["severity"] in ("error", "warning")]
    assert bad == [], bad


@pytest.mark.parametrize("path", PROGRAMS, ids=[p.stem for p in PROGRAMS])
def test_example_exports_its_outputs(path):
    analysis = fuse_lang.analyze(path.read_text(encoding="utf-8"), str(path))
    assert analysis.exports, f"{path.name} exports nothing"
    assert set(analysis.exports) <= set(analysis.tensors)
    assert not [d for d in analysis.diagnostics if d.severity in (Severity.ERROR,
                                                                  Severity.WARNING)]


def test_all_examples_check_together_in_text_form():
    proc = fuse("check", *map(str, PROGRAMS))
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "error" not in proc.stdout.split("checked:")[-1]
    assert "warning" not in proc.stdout.split("checked:")[-1]


@pytest.mark.parametrize("path", PROGRAMS, ids=[p.stem for p in PROGRAMS])
def test_example_explains(path):
    proc = fuse("explain", "--format", "json", str(path))
    assert proc.returncode == 0, proc.stderr
    data = json.loads(proc.stdout)
    assert data["equations"]


# ------------------------------------------------------------------ shapes


def test_perceptron_shapes():
    tensors = analyze("perceptron").tensors
    assert tensors["W"].shape == (4,)
    assert tensors["X"].shape == (4,)
    assert tensors["Y"].shape == ()


def test_attention_shapes_match_the_data():
    np = pytest.importorskip("numpy")
    x = np.load(EXAMPLES / "data" / "attention_x.npy")
    wq = np.load(EXAMPLES / "data" / "attention_wq.npy")
    wv = np.load(EXAMPLES / "data" / "attention_wv.npy")
    n_pos, d = x.shape
    dk, dv = wq.shape[0], wv.shape[0]
    tensors = analyze("attention").tensors
    assert tensors["X"].shape == (n_pos, d)
    assert tensors["Query"].shape == (n_pos, dk)
    assert tensors["Key"].shape == (n_pos, dk)
    assert tensors["Val"].shape == (n_pos, dv)
    assert tensors["Comp"].shape == (n_pos, n_pos)
    assert tensors["Attn"].shape == (n_pos, dv)
    assert tensors["Dk"].shape == ()
    assert x.dtype == np.float32


def test_attention_comp_projects_dk_inside_softmax_and_joins_query_and_key():
    (comp,) = plan_of(analyze("attention"), "Comp")
    assert comp.output == ("p", "p'")
    assert comp.projected == (("dk", "sum", "argument of softmax"),)
    dk = next(i for i in comp.indices if i.name == "dk")
    assert dk.joined
    assert set(dk.factors) == {"Query", "Key"}
    assert "dk" in comp.joined
    (contraction,) = comp.contractions
    assert contraction.operands == ("Query", "Key")
    assert contraction.letters == "ab,cb->ac"


def test_cnn_pooling_has_ceil_half_extent():
    np = pytest.importorskip("numpy")
    image = np.load(EXAMPLES / "data" / "cnn_image.npy")
    filt = np.load(EXAMPLES / "data" / "cnn_filter.npy")
    height, width, channels = image.shape
    tensors = analyze("cnn").tensors
    assert tensors["Image"].shape == image.shape
    assert tensors["Filter"].shape == filt.shape
    assert tensors["Features"].shape == (height, width)
    assert tensors["Pooled"].shape == (math.ceil(height / 2), math.ceil(width / 2))
    assert height % 2 == 1  # the data makes ceil differ from floor


def test_cnn_features_project_the_filter_offsets_inside_relu():
    (features,) = plan_of(analyze("cnn"), "Features")
    assert {name for name, _, _ in features.projected} == {"dx", "dy", "ch"}
    assert {scope for _, _, scope in features.projected} == {"argument of relu"}


def test_mlp_reports_a_recurrence_over_an_offset():
    analysis = analyze("mlp")
    w = analysis.tensors["W"].shape
    assert analysis.tensors["X"].shape == (w[0], w[1])
    recursion = [d for d in analysis.diagnostics if d.code == "recursion"]
    assert len(recursion) == 1
    assert recursion[0].severity is Severity.INFORMATION
    assert "offset -1" in recursion[0].message and "`i`" in recursion[0].message
    assert "X" in analysis.recursive
    (x,) = plan_of(analysis, "X")
    assert x.recursive
    assert x.projected == (("k", "sum", "argument of sig"),)


def test_rnn_virtual_index_is_dropped_from_the_shape():
    analysis = analyze("rnn")
    tensors = analysis.tensors
    hidden = tensors["W"].shape[0]
    assert tensors["X"].shape == (hidden,)
    assert [a.virtual for a in tensors["X"].axes] == [False, True]
    assert tensors["X"].axes[1].extent == tensors["U"].shape[1]
    recursion = [d for d in analysis.diagnostics if d.code == "recursion"]
    assert recursion and "virtual" in recursion[0].message
    # j is summed within each additive term of sig's argument, once per step of t:
    # the run holds t (X[j,*t] is the state, U[j,t] one column of U)
    (x,) = plan_of(analysis, "X")
    assert [c.letters for c in x.contractions] == ["ab,b->a", "ab,b->a"]
    opt_einsum = pytest.importorskip("opt_einsum")
    steps = tensors["U"].shape[1]
    per_step = opt_einsum.contract_path("ab,b->a", (hidden, hidden), (hidden,),
                                        shapes=True)[1].opt_cost
    assert [c.flops for c in x.contractions] == [steps * per_step] * 2


def test_embedding_reasoning_reads_symbols_from_the_relation_file():
    np = pytest.importorskip("numpy")
    emb = np.load(EXAMPLES / "data" / "reasoning_emb.npy")
    rows = (EXAMPLES / "data" / "likes.tsv").read_text(encoding="utf-8").split()
    symbols = tuple(dict.fromkeys(rows))
    analysis = analyze("embedding_reasoning")
    tensors = analysis.tensors
    assert tensors["R"].boolean and tensors["R"].kind == "relation source"
    assert tensors["R"].shape == (len(symbols), len(symbols))
    assert tensors["Emb"].shape == emb.shape
    assert tensors["EmbR"].shape == (emb.shape[1], emb.shape[1])
    assert tensors["D"].shape == (len(symbols), len(symbols))
    assert tensors["T"].shape == ()
    domain = tensors["R"].axes[0].domain
    assert analysis.domain_symbols[domain] == symbols


def test_datalog_ancestor_is_a_recursive_group_after_parent():
    analysis = analyze("datalog")
    assert analysis.recursive == frozenset({"Ancestor"})
    recursion = [d for d in analysis.diagnostics if d.code == "recursion"]
    assert len(recursion) == 1
    assert recursion[0].severity is Severity.INFORMATION
    assert "Ancestor" in recursion[0].message
    flat = [name for group in analysis.order for name in group]
    assert flat.index("Parent") < flat.index("Ancestor")
    assert ("Ancestor",) in analysis.order
    tensors = analysis.tensors
    assert tensors["Parent"].boolean and tensors["Ancestor"].boolean
    assert tensors["Ancestor"].shape == (5, 5)
    plan = fuse_lang.plan_program(analysis)
    assert plan.recursive_groups == (("Ancestor",),)
    assert all(e.recursive for e in plan.equations if e.tensor == "Ancestor")


def test_make_data_is_deterministic(tmp_path):
    pytest.importorskip("numpy")
    import importlib.util

    spec = importlib.util.spec_from_file_location("make_data", EXAMPLES / "make_data.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    module.DATA = tmp_path
    module.main()
    written = sorted(p.name for p in tmp_path.iterdir())
    committed = sorted(p.name for p in (EXAMPLES / "data").iterdir())
    assert written == committed
    for name in written:
        assert (tmp_path / name).read_bytes() == (EXAMPLES / "data" / name).read_bytes(), name
    total = sum(p.stat().st_size for p in (EXAMPLES / "data").iterdir())
    assert total < 64 * 1024
