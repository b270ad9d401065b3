"""Issue 28, item 3: honest numbers.  Every JSON Fuse writes parses with a strict
parser (a NaN or an infinity is null; `fuse run`'s outputs count theirs in
`nonfinite`), and a NaN read into a Boolean tensor is refused in words, never
made false."""
from __future__ import annotations

import contextlib
import io
import json

import numpy as np
import pytest
import scipy.sparse as sp

import fuse_lang
from fuse_lang.cli.main import main
from fuse_lang.ide.run_summary import summarize_run


def strict(text: str):
    """json.loads that refuses NaN, Infinity and -Infinity (as JSON itself does)."""
    def refuse(constant: str):
        raise ValueError(f"not JSON: {constant}")
    return json.loads(text, parse_constant=refuse)


def cli(*argv: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        status = main(list(argv))
    return status, out.getvalue(), err.getvalue()


NONFINITE = """\
X = const([1.0, 0.0, -1.0, 2.0])
Y[i] = log(X[i])
Z[i] = X[i] / 0
export Y, Z
Y?
"""


def test_fuse_run_json_writes_null_and_counts_nonfinite_values(tmp_path):
    (tmp_path / "p.fuse").write_text(NONFINITE)
    status, out, _ = cli("run", "--format", "json", str(tmp_path / "p.fuse"))
    assert status == 0
    data = strict(out)
    y, z = data["outputs"]["Y"], data["outputs"]["Z"]
    assert y["values"] == [0.0, None, None, pytest.approx(0.6931, abs=1e-4)]
    assert y["nonfinite"] == {"nan": 1, "inf": 0, "-inf": 1}
    assert z["values"] == [None] * 4 and z["nonfinite"] == {"nan": 1, "inf": 2, "-inf": 1}
    (query,) = data["queries"]
    assert query["nonfinite"] == {"nan": 1, "inf": 0, "-inf": 1}


def test_finite_outputs_carry_no_nonfinite_key(tmp_path):
    (tmp_path / "p.fuse").write_text("X = const([1.0, 2.0])\nexport X\n")
    data = strict(cli("run", "--format", "json", str(tmp_path / "p.fuse"))[1])
    assert "nonfinite" not in data["outputs"]["X"]


def test_a_sparse_output_counts_its_stored_nonfinite_values(tmp_path):
    sp.save_npz(tmp_path / "m.npz", sp.csr_array(np.array([[0.0, np.inf], [np.nan, 0.0]])),
                compressed=False)
    (tmp_path / "p.fuse").write_text('M[i,j] = "m.npz"\nexport M\n')
    status, out, _ = cli("run", "--format", "json", "--representation", "M=sparse",
                         str(tmp_path / "p.fuse"))
    data = strict(out)
    m = data["outputs"]["M"]
    assert m["representation"] == "sparse"
    assert m["nonfinite"] == {"nan": 1, "inf": 1, "-inf": 0}
    assert sorted(m["nonzeros"], key=str) == sorted([[0, 1, None], [1, 0, None]], key=str)


def test_explain_json_and_the_editor_summary_are_strict(tmp_path):
    (tmp_path / "p.fuse").write_text(NONFINITE)
    status, out, _ = cli("explain", "--format", "json", str(tmp_path / "p.fuse"))
    assert status == 0
    strict(out)
    program = fuse_lang.compile(NONFINITE)
    summary = summarize_run(program.execute(), analysis=program.analysis).to_json()
    strict(json.dumps(summary, allow_nan=False))


def test_a_json_sink_writes_null_for_nonfinite_values(tmp_path):
    (tmp_path / "p.fuse").write_text(NONFINITE + '"y.json" = Y[i]\n"y.jsonl" = Y[i]\n')
    status, _, _ = cli("run", str(tmp_path / "p.fuse"))
    assert status == 0
    assert strict((tmp_path / "y.json").read_text())[1:3] == [None, None]
    assert [strict(line) for line in (tmp_path / "y.jsonl").read_text().split()][1] is None


# ------------------------------------------------------- NaN in Boolean sources

def boolean_run(tmp_path, source: str, **compile_options):
    return fuse_lang.compile(f'R(x,y) = "{source}"\nexport R\n', base_dir=tmp_path,
                             **compile_options)


@pytest.mark.parametrize("representation", ["dense", "sparse"])
def test_nan_in_a_boolean_npy_source_is_refused_naming_the_file(tmp_path, representation):
    np.save(tmp_path / "r.npy", np.array([[1.0, 0.0], [np.nan, 1.0]]))
    program = boolean_run(tmp_path, "r.npy", representation={"R": representation})
    with pytest.raises(fuse_lang.FuseError, match=r"r.npy holds NaN at \(1, 0\) \(1 value in "
                       r"all\), read into the Boolean tensor `R`"):
        program.run()


@pytest.mark.parametrize("representation", ["dense", "sparse"])
def test_nan_in_a_boolean_sparse_archive_is_refused(tmp_path, representation):
    sp.save_npz(tmp_path / "r.npz", sp.csr_array(np.array([[1.0, np.nan], [0.0, np.nan]])),
                compressed=False)
    program = boolean_run(tmp_path, "r.npz", representation={"R": representation})
    with pytest.raises(fuse_lang.FuseError, match=r"r.npz holds NaN \(2 values in all\)"):
        program.run()


def test_nan_in_a_boolean_input_is_refused(tmp_path):
    np.save(tmp_path / "r.npy", np.eye(2))
    program = boolean_run(tmp_path, "r.npy")
    assert program.run()["R"].tolist() == [[1.0, 0.0], [0.0, 1.0]]
    with pytest.raises(fuse_lang.FuseError, match=r"the input for `R` holds NaN at \(0, 1\)"):
        program.run({"R": np.array([[1.0, np.nan], [0.0, 1.0]])})


def test_a_three_axis_sparse_relation_input_runs_and_its_nan_is_refused(tmp_path):
    """A relation of three axes kept sparse, given as a SparseRelation (its stored
    values, no `tocoo`): it ran into an AttributeError ('bool' object has no
    attribute 'any') in the NaN check, which broke benchmarks/bench_complement.py."""
    from fuse_lang.run.sparse.nd import SparseRelation

    np.save(tmp_path / "r.npy", np.zeros((2, 2, 2)))
    program = fuse_lang.compile('R(x,y,z) = "r.npy"\nS(x,y,z) = R(x,y,z)\nexport S\n',
                                base_dir=tmp_path, representation={"R": "sparse", "S": "sparse"})
    coords = [np.array([0, 1]), np.array([1, 1]), np.array([0, 1])]
    given = SparseRelation.from_coords((2, 2, 2), coords, np.ones(2, np.float32))
    out = sp.coo_array(program.run({"R": given})["S"])
    assert sorted(zip(*(c.tolist() for c in out.coords))) == [(0, 1, 0), (1, 1, 1)]
    with_nan = SparseRelation((2, 2, 2), np.array([1, 7]), np.array([1.0, np.nan], np.float32))
    with pytest.raises(fuse_lang.FuseError, match=r"the input for `R` holds NaN \(1 value in "
                       r"all\), read into the Boolean tensor `R`"):
        program.run({"R": with_nan})


def test_the_command_line_says_it_without_a_traceback(tmp_path):
    np.save(tmp_path / "r.npy", np.array([[np.nan, 1.0], [0.0, 1.0]], dtype=np.float32))
    (tmp_path / "p.fuse").write_text('R(x,y) = "r.npy"\nexport R\n')
    status, _, err = cli("run", str(tmp_path / "p.fuse"))
    assert status == 1
    assert "r.npy holds NaN at (0, 0)" in err and "Traceback" not in err
