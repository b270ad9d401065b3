"""The structured result of a run (fuse_lang.ide.run_summary): what an editor shows."""
from __future__ import annotations

import json
import re

import numpy as np
import pytest

import fuse_lang
from fuse_lang.ide.run_summary import summarize_array, summarize_relation, summarize_run

PROGRAM = """\
A[i,j] = const([[1, 2], [3, 4], [5, 6]])
B[j,k] = const([[1, 0, 2], [0, 1, 3]])
C[i,k] = A[i,j] B[j,k]
Parent(Alice, Bob)
Parent(Bob, Carol)
Ancestor(x,y) = Parent(x,y)
Ancestor(x,z) = Ancestor(x,y) Parent(y,z)
export C
Ancestor(Alice, x)?
Ancestor(Alice, Carol)?
Ancestor(x, y)?
"""


def run(text: str = PROGRAM, **kw):
    return summarize_run(fuse_lang.compile(text).execute(), program="p.fuse", **kw)


def test_array_statistics_are_over_the_finite_values():
    s = summarize_array(np.array([[1.0, np.nan], [np.inf, 3.0]], dtype=np.float32))
    assert s.shape == (2, 2) and s.dtype == "float32" and s.size == 4
    assert (s.min, s.max, s.mean, s.std) == (1.0, 3.0, 2.0, 1.0)
    assert s.nonfinite == 2
    assert s.preview[0] == 1.0 and np.isnan(s.preview[1]) and s.preview[2] == np.inf
    assert s.to_json()["preview"] == [1.0, "nan", "inf", 3.0]
    json.dumps(s.to_json(), allow_nan=False)


def test_statistics_of_values_near_the_largest_float_stay_finite():
    """Their sum and squares overflow float64: the mean and the std were inf (the
    hover said `std inf` for a result of +-1e308); dense and sparse alike."""
    import scipy.sparse as sparse

    values = np.array([[1e308, -1e308], [0.0, 1e308]])
    want_mean, want_std = 1e308 / 4, float(np.std(values / 1e308)) * 1e308
    for array in (values, sparse.coo_array(values)):
        s = summarize_array(array)
        assert (s.min, s.max) == (-1e308, 1e308)
        assert s.mean == pytest.approx(want_mean) and s.std == pytest.approx(want_std)


def test_preview_is_the_first_values_and_says_when_it_is_cut():
    s = summarize_array(np.arange(20).reshape(4, 5))
    assert s.preview == (0, 1, 2, 3, 4, 5, 6, 7) and s.truncated
    assert not summarize_array(np.arange(8)).truncated
    assert summarize_array(np.arange(20), preview=3).preview == (0, 1, 2)


def test_scalars_empty_arrays_and_all_nonfinite():
    scalar = summarize_array(np.float32(2.5))
    assert scalar.shape == () and scalar.preview == (2.5,) and scalar.std == 0.0
    empty = summarize_array(np.zeros((0, 3)))
    assert empty.size == 0 and empty.min is None and empty.preview == ()
    bad = summarize_array(np.array([np.nan, -np.inf]))
    assert bad.min is bad.max is bad.mean is bad.std is None and bad.nonfinite == 2
    assert summarize_array(np.array([True, False])).max == 1.0


def test_nonzeros_count_a_relations_facts_and_nan_is_not_zero():
    assert summarize_array(np.array([[True, False], [True, True]])).nonzeros == 3
    s = summarize_array(np.array([0.0, 2.5, np.nan, 0.0]))
    assert s.nonzeros == 2 and s.to_json()["nonzeros"] == 2
    assert summarize_array(np.zeros((0, 3))).nonzeros == 0


def test_a_run_summary_has_exports_and_queries():
    s = run()
    ((name, c),) = s.outputs
    assert name == "C" and c.shape == (3, 3)
    assert c.preview == (1, 2, 8, 3, 4, 18, 5, 6)
    assert (c.min, c.max) == (1, 28) and c.mean == pytest.approx(75 / 9)
    some, yes, pairs = s.queries
    assert some.text == "Ancestor(Alice, x)?" and some.boolean and some.free == ("x",)
    assert some.tuples == (("Bob",), ("Carol",)) and some.answer == "2 answers"
    assert yes.tuples == ((),) and yes.answer == "yes"
    assert pairs.free == ("x", "y") and len(pairs.tuples) == 3
    assert ("Alice", "Carol") in pairs.tuples


def test_a_numeric_query_has_no_tuples():
    s = run("X[i] = const([1, 2, 3])\nX?\nX[1]?\n")
    whole, one = s.queries
    assert not whole.boolean and whole.tuples is None and whole.answer == "(3,)"
    assert one.value.shape == () and one.value.preview == (2.0,)
    assert "tuples" not in whole.to_json()


def test_json_and_the_one_line_message():
    s = run(elapsed_s=0.0123)
    data = json.loads(json.dumps(s.to_json(), allow_nan=False))
    assert data["outputs"]["C"]["shape"] == [3, 3]
    assert data["queries"][0]["tuples"] == [["Bob"], ["Carol"]]
    assert data["elapsed_ms"] == pytest.approx(12.3)
    assert data["message"] == s.message() == (
        "Ran p.fuse on cpu (numpy): C (3, 3), Ancestor(Alice, x)? 2 answers, "
        "Ancestor(Alice, Carol)? yes, Ancestor(x, y)? 3 answers in 12 ms")


def test_a_long_message_names_a_few_results():
    text = "".join(f"T{k} = const({k})\n" for k in range(7)) + \
        "export " + ", ".join(f"T{k}" for k in range(7)) + "\n"
    message = run(text, elapsed_s=12.5).message()
    assert message == "Ran p.fuse on cpu (numpy): T0 (), T1 (), T2 (), T3 (), and 3 more in 12.5 s"


def test_written_sinks_are_counted_in_the_message(tmp_path):
    text = 'X[i] = const([1, 2])\n"x.npy" = X[i]\nexport X\n'
    result = fuse_lang.compile(text, base_dir=tmp_path).execute()
    s = summarize_run(result, program="s.fuse", backend="numpy", device="cpu", elapsed_s=0.002)
    assert s.sinks == (str(tmp_path / "x.npy"),) or s.sinks[0].endswith("x.npy")
    assert re.fullmatch(r"Ran s\.fuse on cpu \(numpy\): X \(2,\) in 2 ms; wrote 1 file",
                        s.message())


def test_a_relation_output_has_its_tuples_as_a_program_writes_them():
    text = ('Has(Alice, "ann", 7)\nHas(Bob, "x y", 3)\nHas(Bob, Carol, 2)\n'
            'Has(Bob, "say \\"hi\\"", 2)\nexport Has\n')
    program = fuse_lang.compile(text)
    s = summarize_run(program.execute(), program="p.fuse", analysis=program.analysis)
    data = json.loads(json.dumps(s.to_json(), allow_nan=False))["outputs"]["Has"]
    assert data["relation"] is True and data["count"] == 4
    assert data["tuples"][0] == ["Alice", "ann", 7]
    assert data["tuple_texts"] == ['(Alice, "ann", 7)', "(Bob, Carol, 2)",
                                   '(Bob, "say \\"hi\\"", 2)', '(Bob, "x y", 3)']
    assert s.message().startswith("Ran p.fuse on cpu (numpy): Has 4 tuples in ")


def test_a_big_relation_sends_its_first_tuples_and_its_count():
    s = summarize_relation(np.ones(150, dtype=bool), [None])
    data = s.to_json()
    assert data["count"] == 150 and len(data["tuples"]) == len(data["tuple_texts"]) == 100
    assert data["tuple_texts"][:2] == ["(0)", "(1)"]
    assert "tuple_texts" not in summarize_array(np.ones(3, dtype=bool)).to_json()
