"""The NumPy engine at run time, against hand-written NumPy/Python:
recursion (LANGUAGE.md §7), facts, symbols and domains (§8), files (§9), and
the API's refusals (errors, unknown inputs, memory guard)."""
from __future__ import annotations

import itertools
import json
import os
import warnings
from pathlib import Path

import numpy as np
import pytest

import fuse_lang
from fuse_lang import FuseError, compile
from fuse_lang.run.fixpoint import loop as fixpoint


def sig(x):
    return 1.0 / (1.0 + np.exp(-x))


def closure(pairs):
    """Transitive closure of a set of (a, b) pairs, the slow obvious way."""
    out = set(pairs)
    while True:
        new = {(a, d) for (a, b), (c, d) in itertools.product(out, out) if b == c} - out
        if not new:
            return out
        out |= new


def tuples_of(matrix, symbols, columns=None):
    columns = symbols if columns is None else columns
    return {(symbols[i], columns[j]) for i, j in zip(*np.nonzero(np.asarray(matrix) > 0))}


def domain_of(program, tensor, axis=0):
    return program.analysis.tensors[tensor].axes[axis].domain


def symbols_of(program, tensor, axis=0):
    return tuple(program.analysis.domain_symbols[domain_of(program, tensor, axis)])


ANCESTOR_RULES = """\
Ancestor(x,y) = Parent(x,y)
Ancestor(x,z) = Ancestor(x,y) Parent(y,z)
"""

# ------------------------------------------------------------------ recursion


def test_transitive_closure_over_facts_matches_a_hand_written_closure():
    parents = [("Alice", "Bob"), ("Bob", "Carol"), ("Carol", "Dave"), ("Bob", "Eve"),
               ("Eve", "Fay"), ("Gus", "Alice")]
    text = "".join(f"Parent({a}, {b})\n" for a, b in parents) + ANCESTOR_RULES + "export Ancestor\n"
    program = compile(text)
    out = program.run()["Ancestor"]
    symbols = symbols_of(program, "Ancestor")
    assert symbols == ("Alice", "Bob", "Carol", "Dave", "Eve", "Fay", "Gus")
    assert out.shape == (7, 7)
    assert set(np.unique(out)) <= {0.0, 1.0}
    assert tuples_of(out, symbols) == closure(parents)


def test_transitive_closure_over_a_tsv_relation_file(tmp_path):
    rng = np.random.default_rng(7)
    names = [f"P{k}" for k in range(12)]
    pairs = sorted({(names[a], names[b]) for a, b in rng.integers(0, 12, size=(20, 2)) if a != b})
    (tmp_path / "parent.tsv").write_text("".join(f"{a}\t{b}\n" for a, b in pairs))
    program = compile('Parent(x,y) = "parent.tsv"\n' + ANCESTOR_RULES + "export Ancestor\n",
                      base_dir=tmp_path)
    out = program.run()["Ancestor"]
    symbols = symbols_of(program, "Ancestor")
    assert set(symbols) == {s for pair in pairs for s in pair}
    assert tuples_of(out, symbols) == closure(pairs)


def test_closure_with_a_cycle_terminates():
    program = compile("Edge(A, B)\nEdge(B, C)\nEdge(C, A)\n"
                      "Path(x,y) = Edge(x,y)\nPath(x,z) = Path(x,y) Edge(y,z)\nexport Path\n")
    out = program.run()["Path"]
    np.testing.assert_array_equal(out, np.ones((3, 3)))


def test_mutually_recursive_boolean_group():
    edges = [("A", "B"), ("B", "C"), ("C", "D"), ("D", "E"), ("B", "F")]
    text = "".join(f"Edge({a}, {b})\n" for a, b in edges) + """\
Odd(x, y) = Edge(x, y)
Odd(x, y) = Edge(x, z) Even(z, y)
Even(x, y) = Edge(x, z) Odd(z, y)
export Even, Odd
"""
    program = compile(text)
    out = program.run()
    symbols = symbols_of(program, "Odd")
    assert symbols_of(program, "Even") == symbols
    # hand-written: walks of odd / even length >= 1
    succ = {}
    for a, b in edges:
        succ.setdefault(a, set()).add(b)
    odd, even = set(), set()
    frontier = {(a, b) for a, b in edges}
    length = 1
    while frontier:
        (odd if length % 2 else even).update(frontier)
        frontier = {(a, c) for a, b in frontier for c in succ.get(b, ())}
        length += 1
    assert tuples_of(out["Odd"], symbols) == odd
    assert tuples_of(out["Even"], symbols) == even


def test_numeric_recursion_converges_to_the_solved_linear_system(tmp_path):
    rng = np.random.default_rng(0)
    W = rng.uniform(0.0, 0.25, size=(5, 5))
    B = rng.normal(size=5)
    np.save(tmp_path / "w.npy", W)
    np.save(tmp_path / "b.npy", B)
    program = compile('W[i,j] = "w.npy"\nB[i] = "b.npy"\nX[i] = 0.5 W[i,j] X[j] + B[i]\n'
                      "export X\n", base_dir=tmp_path, precision="fp64", tolerance=1e-10)
    X = program.run()["X"]
    expected = np.linalg.solve(np.eye(5) - 0.5 * W, B)
    np.testing.assert_allclose(X, expected, rtol=0, atol=1e-8)
    # fp32 default: still within the (default) tolerance of the answer
    X32 = compile(program.analysis.text, base_dir=tmp_path).run()["X"]
    assert X32.dtype == np.float32
    np.testing.assert_allclose(X32, expected, atol=1e-5)


def test_numeric_mutually_recursive_group(tmp_path):
    rng = np.random.default_rng(1)
    A = rng.uniform(0.0, 0.2, size=(4, 4))
    b = rng.normal(size=4)
    np.save(tmp_path / "a.npy", A)
    np.save(tmp_path / "b.npy", b)
    out = compile('A[i,j] = "a.npy"\nB[i] = "b.npy"\nX[i] = A[i,j] Y[j] + B[i]\n'
                  "Y[i] = 0.5 X[i]\nexport X, Y\n", base_dir=tmp_path, precision="fp64").run()
    x = np.linalg.solve(np.eye(4) - 0.5 * A, b)
    np.testing.assert_allclose(out["X"], x, atol=1e-6)
    np.testing.assert_allclose(out["Y"], 0.5 * x, atol=1e-6)


def test_non_convergence_is_an_error_naming_the_tensor_and_the_last_change(tmp_path):
    np.save(tmp_path / "w.npy", 2.0 * np.eye(3))
    np.save(tmp_path / "b.npy", np.ones(3))
    program = compile('W[i,j] = "w.npy"\nB[i] = "b.npy"\nGrow[i] = W[i,j] Grow[j] + B[i]\n'
                      "export Grow\n", base_dir=tmp_path, max_iterations=20)
    with pytest.raises(FuseError) as info:
        program.run()
    message = str(info.value)
    assert "Grow" in message
    assert "20" in message  # the iteration limit
    assert "last change" in message
    assert "line 3" in message


def test_an_oscillating_group_is_reported_not_truncated():
    program = compile("axis i = 2\nOne[i] = 1\nX[i] = One[i] - X[i]\nexport X\n",
                      max_iterations=50)
    with pytest.raises(FuseError) as info:
        program.run()
    assert "X" in str(info.value) and "last change was 1" in str(info.value)


def test_mutually_recursive_non_convergence_names_every_tensor():
    program = compile("axis i = 2\nOne[i] = 1\nX[i] = 2 Y[i] + One[i]\nY[i] = X[i]\n"
                      "export X\n", max_iterations=30)
    with pytest.raises(FuseError) as info:
        program.run()
    message = str(info.value)
    assert "X" in message and "Y" in message and "last change" in message


def test_divergence_to_infinity_is_reported_early_without_numpy_warnings():
    program = compile("axis i = 2\nOne[i] = 1\nGrow[i] = 2 Grow[i] + One[i]\nexport Grow\n")
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # an overflow RuntimeWarning would fail the test
        with pytest.raises(FuseError) as info:
            program.run()
    message = str(info.value)
    assert "Grow" in message and "no longer finite" in message and "last change" in message
    assert "1000 iterations" not in message  # stopped when the values overflowed


@pytest.mark.reference_only  # counts the engine's own semi-naive calls
def test_boolean_join_rules_run_semi_naively(monkeypatch):
    calls = []
    original = fixpoint.SemiNaive.start

    def spy(self):
        calls.append(tuple(self.group))
        return original(self)

    monkeypatch.setattr(fixpoint.SemiNaive, "start", spy)
    edges = [("A", "B"), ("B", "C"), ("C", "D"), ("D", "B")]
    text = "".join(f"Edge({a}, {b})\n" for a, b in edges)
    program = compile(text + "Path(x,y) = Edge(x,y)\nPath(x,z) = Path(x,y) Edge(y,z)\n"
                      "export Path\n")
    out = program.run()["Path"]
    assert calls == [("Path",)]
    assert tuples_of(out, symbols_of(program, "Path")) == closure(edges)
    # a Boolean rule with a builtin is not a plain join: re-evaluated whole, same answer
    calls.clear()
    program = compile(text + "Reach(x,y) = step(Edge(x,y) + Reach(x,z) Edge(z,y))\n"
                      "export Reach\n")
    out = program.run()["Reach"]
    assert calls == []
    assert tuples_of(out, symbols_of(program, "Reach")) == closure(edges)


def test_recurrence_over_an_offset_index_is_computed_in_order(tmp_path):
    rng = np.random.default_rng(3)
    W = rng.normal(size=(6, 4, 4))
    np.save(tmp_path / "w.npy", W)
    out = compile('W[i,j,k] = "w.npy"\nX[i,j] = sig(W[i,j,k] X[i-1,k])\nexport X\n',
                  base_dir=tmp_path, precision="fp64").run()["X"]
    expected = np.zeros((6, 4))
    previous = np.zeros(4)  # X[-1, k] reads outside the axis: 0
    for i in range(6):
        previous = sig(W[i] @ previous)
        expected[i] = previous
    np.testing.assert_allclose(out, expected, atol=1e-12)


def test_recurrence_over_a_virtual_index_keeps_the_last_state(tmp_path):
    rng = np.random.default_rng(4)
    W, V, U = rng.normal(size=(3, 3)), rng.normal(size=(3, 3)), rng.normal(size=(3, 5))
    for name, value in (("w", W), ("v", V), ("u", U)):
        np.save(tmp_path / f"{name}.npy", value)
    out = compile('W[i,j] = "w.npy"\nV[i,j] = "v.npy"\nU[j,t] = "u.npy"\n'
                  "X[i,*t+1] = sig(W[i,j] X[j,*t] + V[i,j] U[j,t])\nexport X\n",
                  base_dir=tmp_path, precision="fp64").run()["X"]
    h = np.zeros(3)
    for t in range(5):
        h = sig(W @ h + V @ U[:, t])
    assert out.shape == (3,)
    np.testing.assert_allclose(out, h, atol=1e-12)


def test_query_is_answered_with_tuples_by_name():
    program = compile("Parent(Alice, Bob)\nParent(Bob, Carol)\nParent(Carol, Dave)\n"
                      "Parent(Eve, Alice)\n" + ANCESTOR_RULES +
                      "Ancestor(Alice, x)?\nAncestor(x, Carol)?\nAncestor(Alice, Dave)?\n"
                      "Ancestor(Dave, Alice)?\n")
    result = program.execute()
    assert result.outputs == {}  # a program with queries and no export returns no outputs
    down, up, yes, no = result.queries
    assert down.text == "Ancestor(Alice, x)?" and down.tensor == "Ancestor"
    assert down.free == ("x",)
    assert set(down.tuples) == {("Bob",), ("Carol",), ("Dave",)}
    assert down.value.shape == (5,)
    assert set(up.tuples) == {("Alice",), ("Bob",), ("Eve",)}
    assert yes.free == () and yes.tuples == [()] and float(yes.value) == 1.0
    assert no.free == () and no.tuples == [] and float(no.value) == 0.0


def test_query_with_a_repeated_variable_is_the_diagonal():
    result = compile("Edge(A, B)\nEdge(B, A)\nEdge(B, C)\nPath(x,y) = Edge(x,y)\n"
                     "Path(x,z) = Path(x,y) Edge(y,z)\nPath(x, x)?\n").execute()
    (answer,) = result.queries
    assert answer.free == ("x",)
    np.testing.assert_array_equal(answer.value, [1, 1, 0])
    assert answer.tuples == [("A",), ("B",)]


def test_query_with_a_position_outside_the_axis_answers_no():
    result = compile("Edge(A, B)\nEdge(B, C)\nEdge(A, 7)?\nEdge(Zed, x)?\n").execute()
    outside, unknown = result.queries
    assert outside.tuples == [] and float(outside.value) == 0.0
    assert unknown.tuples == []


def test_numeric_query_selects_constants():
    result = compile("A[i,j] = const([[1, 2], [3, 4]])\nA[1, j]?\nA?\n").execute()
    row, whole = result.queries
    np.testing.assert_array_equal(row.value, [3, 4])
    assert row.free == ("j",) and row.tuples is None
    np.testing.assert_array_equal(whole.value, [[1, 2], [3, 4]])


def test_backward_chaining_skips_an_unneeded_tensor_with_unknown_extent():
    text = "A[i] = const([1, 2, 3])\nY[i] = 2 A[i]\nZ[i,k] = A[i]\n"
    # Z's axis k has no extent: an error of the program (unsized-tensor), which
    # compile refuses; past_errors runs what does not need Z (as `fuse run` does)
    with pytest.raises(FuseError, match=r"line 3, column 1: `Z`'s axis `k` .*\[unsized-tensor\]"):
        compile(text + "export Y\n")
    result = compile(text + "export Y\n", past_errors=True).execute()
    assert list(result.outputs) == ["Y"]
    np.testing.assert_array_equal(result.outputs["Y"], [2, 4, 6])
    assert [(n.what, n.line) for n in result.not_run] == [("Z", 3)]
    assert result.not_run[0].reason.endswith("[unsized-tensor]")
    # a query or a sink on Y alone is enough, too
    assert compile(text + "Y?\n", past_errors=True).execute().queries[0].value.tolist() == \
        [2, 4, 6]
    # with no export, query or sink every leaf is an output, so Z is needed:
    # a clear error naming the statement and the missing extent
    with pytest.raises(FuseError) as info:
        compile(text).run()
    assert "line 3" in str(info.value) and "Z" in str(info.value) and "k" in str(info.value)


def test_backward_chaining_skips_an_unneeded_divergent_recursion():
    text = "A[i] = const([1, 2])\nX[i] = 2 X[i] + A[i]\nY[i] = 2 A[i]\n"
    program = compile(text + "export Y\n", max_iterations=30)
    np.testing.assert_array_equal(program.run()["Y"], [2, 4])
    with pytest.raises(FuseError, match="did not converge"):
        compile(text + "export X\n", max_iterations=30).run()


# ------------------------------------------------------- facts, symbols, domains


def test_symbols_are_numbered_facts_first_then_relation_files(tmp_path):
    (tmp_path / "likes.tsv").write_text("Carol\tDan\nDan\tAlice\nEve\tBob\n")
    program = compile('Parent(Alice, Bob)\nParent(Bob, Carol)\nLikes(x,y) = "likes.tsv"\n'
                      "Knows(x,y) = Parent(x,y)\nKnows(x,y) = Likes(x,y)\n"
                      "Knows(x,z) = Knows(x,y) Knows(y,z)\nexport Knows\n", base_dir=tmp_path)
    # one domain for every position of Parent, Likes and Knows
    domains = {domain_of(program, t, a) for t in ("Parent", "Likes", "Knows") for a in (0, 1)}
    assert len(domains) == 1
    symbols = symbols_of(program, "Knows")
    assert symbols == ("Alice", "Bob", "Carol", "Dan", "Eve")
    out = program.run()["Knows"]
    edges = [("Alice", "Bob"), ("Bob", "Carol"), ("Carol", "Dan"), ("Dan", "Alice"),
             ("Eve", "Bob")]
    assert tuples_of(out, symbols) == closure(edges)
    # the numbering is the positions: Alice is row 0, Eve row 4
    assert out[4].tolist() == [1, 1, 1, 1, 0]


def test_relation_file_symbols_are_numbered_in_row_order(tmp_path):
    (tmp_path / "edge.tsv").write_text("Carol\tFred\nEve\tBob\n")
    program = compile('Edge(x,y) = "edge.tsv"\nPath(x,y) = Edge(x,y)\n'
                      "Path(x,z) = Path(x,y) Edge(y,z)\nexport Path\n", base_dir=tmp_path)
    assert symbols_of(program, "Path") == ("Carol", "Fred", "Eve", "Bob")


def test_facts_and_a_relation_file_of_one_tensor_are_united(tmp_path):
    (tmp_path / "parent.tsv").write_text("Alice\tBob\nBob\tCarol\n")
    program = compile('Parent(Zed, Alice)\nParent(x,y) = "parent.tsv"\n' + ANCESTOR_RULES +
                      "Ancestor(Zed, x)?\nexport Parent\n", base_dir=tmp_path)
    result = program.execute()
    symbols = symbols_of(program, "Parent")
    assert symbols[0] == "Zed"
    assert tuples_of(result.outputs["Parent"], symbols) == {
        ("Zed", "Alice"), ("Alice", "Bob"), ("Bob", "Carol")}
    assert set(result.queries[0].tuples) == {("Alice",), ("Bob",), ("Carol",)}


def test_boolean_sinks_write_tuples_of_symbol_names_and_read_back(tmp_path):
    text = ("Parent(Alice, Bob)\nParent(Bob, Carol)\nParent(Carol, Dave)\n" + ANCESTOR_RULES +
            '"out/anc.tsv" = Ancestor(x,y)\n"out/anc.csv" = Ancestor(x,y)\n')
    result = compile(text, base_dir=tmp_path).execute()
    assert sorted(Path(p).name for p in result.sinks) == ["anc.csv", "anc.tsv"]
    expected = closure([("Alice", "Bob"), ("Bob", "Carol"), ("Carol", "Dave")])
    tsv = [tuple(line.split("\t")) for line in (tmp_path / "out/anc.tsv").read_text().splitlines()]
    csv = [tuple(line.split(",")) for line in (tmp_path / "out/anc.csv").read_text().splitlines()]
    assert set(tsv) == expected and len(tsv) == len(expected)
    assert set(csv) == expected
    # the written file is a relation source again
    program = compile('Anc(x,y) = "out/anc.tsv"\nexport Anc\n', base_dir=tmp_path)
    again = program.run()["Anc"]
    assert tuples_of(again, symbols_of(program, "Anc", 0), symbols_of(program, "Anc", 1)) == \
        expected


# ------------------------------------------------------------------ sources

M = np.arange(6.0).reshape(2, 3) - 1.5


def _write_dense_sources(folder: Path) -> list[str]:
    np.save(folder / "m.npy", M)
    np.savez(folder / "named.npz", Other=np.zeros(4), A=M)
    np.savez(folder / "only.npz", anything=M)
    (folder / "m.csv").write_text("\n".join(",".join(repr(float(v)) for v in row) for row in M) + "\n")
    (folder / "m.tsv").write_text("\n".join("\t".join(repr(float(v)) for v in row) for row in M) + "\n")
    (folder / "m.json").write_text(json.dumps(M.tolist()))
    (folder / "named.json").write_text(json.dumps({"Other": [1, 2], "A": M.tolist()}))
    (folder / "m.jsonl").write_text("".join(json.dumps(row) + "\n" for row in M.tolist()))
    return ["m.npy", "named.npz", "only.npz", "m.csv", "m.tsv", "m.json", "named.json",
            "m.jsonl"]


def test_every_dense_source_format(tmp_path):
    for name in _write_dense_sources(tmp_path):
        out = compile(f'A[i,j] = "{name}"\nS[i] = A[i,j]\nexport A, S\n',
                      base_dir=tmp_path).run()
        np.testing.assert_array_equal(out["A"], M, err_msg=name)
        np.testing.assert_allclose(out["S"], M.sum(axis=1), err_msg=name)


def test_npz_with_several_arrays_and_none_named_like_the_tensor_is_an_error(tmp_path):
    np.savez(tmp_path / "two.npz", P=M, Q=M)
    with pytest.raises(FuseError) as info:
        compile('A[i,j] = "two.npz"\nexport A\n', base_dir=tmp_path)
    assert "two.npz" in str(info.value)
    assert info.value.diagnostics


def test_boolean_relation_sources_in_every_tuple_format(tmp_path):
    rows = [("Alice", "Bob"), ("Bob", "Carol"), ("Carol", "Alice")]
    (tmp_path / "r.tsv").write_text("".join(f"{a}\t{b}\n" for a, b in rows))
    (tmp_path / "r.csv").write_text("".join(f"{a},{b}\n" for a, b in rows))
    (tmp_path / "r.json").write_text(json.dumps([list(r) for r in rows]))
    (tmp_path / "r.jsonl").write_text("".join(json.dumps(list(r)) + "\n" for r in rows))
    for name in ("r.tsv", "r.csv", "r.json", "r.jsonl"):
        program = compile(f'R(x,y) = "{name}"\nexport R\n', base_dir=tmp_path)
        out = program.run()["R"]
        rows_named = {(symbols_of(program, "R", 0)[i], symbols_of(program, "R", 1)[j])
                      for i, j in zip(*np.nonzero(out))}
        assert rows_named == set(rows), name


def test_integer_tuples_are_values(tmp_path):
    # each column holds its values, numbered in increasing order: x's 0, 1, 3 are
    # positions 0, 1, 2 (LANGUAGE.md §14: the extent is the count, not the largest + 1)
    (tmp_path / "e.csv").write_text("0,2\n1,0\n3,1\n")
    program = compile('E(x,y) = "e.csv"\nexport E\n', base_dir=tmp_path)
    out = program.run()["E"]
    assert symbols_of(program, "E", 0) == (0, 1, 3) and symbols_of(program, "E", 1) == (0, 1, 2)
    expected = np.zeros((3, 3))
    expected[[0, 1, 2], [2, 0, 1]] = 1
    np.testing.assert_array_equal(out, expected)


def test_txt_token_file_is_a_position_by_token_matrix(tmp_path):
    tokens = "the cat sat on the mat".split()
    (tmp_path / "tokens.txt").write_text(" ".join(tokens) + "\n")
    program = compile('T(p,w) = "tokens.txt"\nCount[w] = T(p,w)\nexport T, Count\n',
                      base_dir=tmp_path)
    out = program.run()
    vocabulary = symbols_of(program, "T", 1)
    assert vocabulary == ("the", "cat", "sat", "on", "mat")
    expected = np.zeros((6, 5))
    for position, token in enumerate(tokens):
        expected[position, vocabulary.index(token)] = 1
    np.testing.assert_array_equal(out["T"], expected)
    np.testing.assert_array_equal(out["Count"], [2, 1, 1, 1, 1])


def test_source_paths_are_relative_to_the_program_folder(tmp_path, monkeypatch):
    folder = tmp_path / "prog"
    (folder / "data").mkdir(parents=True)
    np.save(folder / "data" / "x.npy", np.array([1.0, 2.0]))
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)
    result = compile('X[i] = "data/x.npy"\nY[i] = 3 X[i]\n"out/y.npy" = Y[i]\nexport Y\n',
                     base_dir=folder).execute()
    np.testing.assert_array_equal(result.outputs["Y"], [3, 6])
    assert (folder / "out" / "y.npy").exists()
    assert not (elsewhere / "out").exists()


# ------------------------------------------------------------------ sinks


def test_boolean_sink_with_a_constant_writes_the_free_axis_names(tmp_path):
    # R's two axes are different domains: y must be written with the second's names
    compile('R(Alice, Bob)\nR(Bob, Carol)\nR(Bob, Alice)\n"kids.tsv" = R(Bob, y)\n'
            '"parents.tsv" = R(x, Bob)\n"swapped.tsv" = R(y, x)\n', base_dir=tmp_path).run()
    assert sorted((tmp_path / "kids.tsv").read_text().split()) == ["Alice", "Carol"]
    assert (tmp_path / "parents.tsv").read_text().split() == ["Alice"]
    rows = {tuple(line.split("\t")) for line in
            (tmp_path / "swapped.tsv").read_text().splitlines()}
    assert rows == {("Alice", "Bob"), ("Bob", "Carol"), ("Bob", "Alice")}


def test_every_sink_format(tmp_path):
    A = np.array([[1.5, -2.0], [3.25, 4.0]])
    text = "A[i,j] = const([[1.5, -2], [3.25, 4]])\n" + "".join(
        f'"out/a.{ext}" = A[i,j]\n' for ext in ("npy", "npz", "csv", "tsv", "json", "jsonl")) + \
        '"out/twice.npy" = 2 A[i,j]\n'
    result = compile(text, base_dir=tmp_path).execute()
    assert len(result.sinks) == 7
    out = tmp_path / "out"
    np.testing.assert_array_equal(np.load(out / "a.npy"), A)
    with np.load(out / "a.npz") as archive:
        assert archive.files == ["A"]
        np.testing.assert_array_equal(archive["A"], A)
    np.testing.assert_array_equal(np.loadtxt(out / "a.csv", delimiter=","), A)
    np.testing.assert_array_equal(np.loadtxt(out / "a.tsv", delimiter="\t"), A)
    np.testing.assert_array_equal(json.loads((out / "a.json").read_text()), A)
    np.testing.assert_array_equal(
        [json.loads(line) for line in (out / "a.jsonl").read_text().splitlines()], A)
    np.testing.assert_array_equal(np.load(out / "twice.npy"), 2 * A)
    # each written file reads back as a source of the same value
    for ext in ("npy", "npz", "csv", "tsv", "json", "jsonl"):
        back = compile(f'B[i,j] = "out/a.{ext}"\nexport B\n', base_dir=tmp_path).run()["B"]
        np.testing.assert_array_equal(back, A, err_msg=ext)


def test_a_vector_sink_reads_back_as_a_vector(tmp_path):
    """A 1-D sink to .csv/.tsv is one number a line: it was one row, which a
    source reads as a 1 x n matrix (arity-mismatch for `B[i]`)."""
    text = "A[i] = const([1.5, -2, 3])\n" + "".join(
        f'"out/a.{ext}" = A[i]\n' for ext in ("csv", "tsv", "json", "jsonl", "npy"))
    compile(text, base_dir=tmp_path).run()
    assert (tmp_path / "out" / "a.csv").read_text() == "1.5\n-2.0\n3.0\n"
    for ext in ("csv", "tsv", "json", "jsonl", "npy"):
        back = compile(f'B[i] = "out/a.{ext}"\nexport B\n', base_dir=tmp_path).run()["B"]
        np.testing.assert_array_equal(back, [1.5, -2, 3], err_msg=ext)


def test_boolean_sink_to_json_and_jsonl_uses_names(tmp_path):
    compile('Edge(A, B)\nEdge(B, C)\n"e.json" = Edge(x,y)\n"e.jsonl" = Edge(x,y)\n',
            base_dir=tmp_path).run()
    assert json.loads((tmp_path / "e.json").read_text()) == [["A", "B"], ["B", "C"]]
    assert [json.loads(x) for x in (tmp_path / "e.jsonl").read_text().splitlines()] == \
        [["A", "B"], ["B", "C"]]


def test_a_sink_that_cannot_be_written_is_a_clear_error_and_leaves_nothing(tmp_path):
    (tmp_path / "blocker").write_text("a file, not a folder")
    program = compile('A[i] = const([1, 2])\n"blocker/a.npy" = A[i]\n', base_dir=tmp_path)
    with pytest.raises(FuseError) as info:
        program.run()
    message = str(info.value)
    assert "line 2" in message and "blocker/a.npy" in message and "cannot be written" in message
    assert sorted(os.listdir(tmp_path)) == ["blocker"]
    assert (tmp_path / "blocker").read_text() == "a file, not a folder"


def test_a_failing_sink_write_keeps_the_old_file_whole(tmp_path, monkeypatch):
    """Atomic: a failure in the middle of writing leaves the old content and no temporary."""
    np.save(tmp_path / "y.npy", np.array([7.0, 7.0]))
    program = compile('A[i] = const([1, 2])\n"y.npy" = A[i]\n', base_dir=tmp_path)

    def broken_fsync(fd):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(fuse_lang.io.sinks.os, "fsync", broken_fsync)
    with pytest.raises(FuseError) as info:
        program.run()
    assert "No space left on device" in str(info.value)
    assert sorted(os.listdir(tmp_path)) == ["y.npy"]
    np.testing.assert_array_equal(np.load(tmp_path / "y.npy"), [7.0, 7.0])
    monkeypatch.undo()
    program.run()
    np.testing.assert_array_equal(np.load(tmp_path / "y.npy"), [1.0, 2.0])


def test_a_sink_outside_the_program_folder_is_refused_unless_allowed(tmp_path):
    folder = tmp_path / "prog"
    folder.mkdir()
    for target in ("../y.npy", str(tmp_path / "abs.npy"), "sub/../../y.npy"):
        text = f'A[i] = const([1, 2])\n"{target}" = A[i]\n'
        with pytest.raises(FuseError) as info:
            compile(text, base_dir=folder).run()
        assert "outside" in str(info.value) and "line 2" in str(info.value)
        assert not (tmp_path / "y.npy").exists() and not (tmp_path / "abs.npy").exists()
    result = compile('A[i] = const([1, 2])\n"../y.npy" = A[i]\n', base_dir=folder,
                     allow_outside_sinks=True).execute()
    assert Path(result.sinks[0]) == (tmp_path / "y.npy").resolve()
    np.testing.assert_array_equal(np.load(tmp_path / "y.npy"), [1, 2])


def test_run_without_writing_sinks(tmp_path):
    result = compile('A[i] = const([1, 2])\n"a.npy" = A[i]\nexport A\n',
                     base_dir=tmp_path).execute(write_sinks=False)
    assert result.sinks == [] and not (tmp_path / "a.npy").exists()


# ------------------------------------------------------------------ inputs


MATVEC = 'W[i,j] = "w.npy"\nX[j] = "x.npy"\nY[i] = W[i,j] X[j]\nS = Y[i]\nexport Y, S\n'


def _matvec(tmp_path):
    np.save(tmp_path / "w.npy", np.eye(3))
    np.save(tmp_path / "x.npy", np.ones(3))
    return compile(MATVEC, base_dir=tmp_path)


def test_runtime_inputs_override_a_source_file(tmp_path):
    program = _matvec(tmp_path)
    np.testing.assert_array_equal(program.run()["Y"], [1, 1, 1])
    out = program.run({"X": np.array([1.0, 2.0, 3.0])})
    np.testing.assert_array_equal(out["Y"], [1, 2, 3])
    assert float(out["S"]) == 6.0


def test_no_stale_results_between_runs(tmp_path):
    program = _matvec(tmp_path)
    first = program.run({"X": np.array([1.0, 2.0, 3.0])})
    second = program.run({"X": np.array([4.0, 5.0, 6.0])})
    np.testing.assert_array_equal(first["Y"], [1, 2, 3])
    np.testing.assert_array_equal(second["Y"], [4, 5, 6])
    np.testing.assert_array_equal(program.run()["Y"], [1, 1, 1])  # back to the file
    # and the file is read again at each run
    np.save(tmp_path / "x.npy", np.array([0.0, 1.0, 0.0]))
    np.testing.assert_array_equal(program.run()["Y"], [0, 1, 0])


def test_inputs_of_a_new_shape_re_plan_the_same_compiled_program(tmp_path):
    program = _matvec(tmp_path)
    rng = np.random.default_rng(5)
    W, X = rng.normal(size=(2, 4)), rng.normal(size=4)
    out = program.run({"W": W, "X": X})
    assert out["Y"].shape == (2,)
    np.testing.assert_allclose(out["Y"], W @ X, rtol=1e-5)
    np.testing.assert_allclose(out["S"], (W @ X).sum(), rtol=1e-5)
    W2, X2 = rng.normal(size=(5, 6)), rng.normal(size=6)
    out2 = program.run({"W": W2, "X": X2})
    np.testing.assert_allclose(out2["Y"], W2 @ X2, rtol=1e-5)
    out3 = program.run({"W": W, "X": X})  # the cached plan for the first shapes
    np.testing.assert_allclose(out3["Y"], W @ X, rtol=1e-5)
    np.testing.assert_array_equal(program.run()["Y"], [1, 1, 1])


def test_an_input_whose_shape_conflicts_with_a_file_is_refused(tmp_path):
    program = _matvec(tmp_path)
    with pytest.raises(FuseError) as info:
        program.run({"X": np.ones(4)})
    assert "X" in str(info.value) and "4" in str(info.value) and "3" in str(info.value)


def test_an_input_for_a_name_that_is_not_a_source_is_refused(tmp_path):
    program = _matvec(tmp_path)
    for name in ("Y", "Nope"):
        with pytest.raises(FuseError) as info:
            program.run({name: np.ones(3)})
        message = str(info.value)
        assert f"`{name}`" in message and "W" in message and "X" in message


def test_inputs_for_a_relation_source_and_for_a_param(tmp_path):
    (tmp_path / "e.csv").write_text("0,1\n1,2\n")
    program = compile('E(x,y) = "e.csv"\nPath(x,y) = E(x,y)\nPath(x,z) = Path(x,y) E(y,z)\n'
                      "export Path\n", base_dir=tmp_path)
    chain = np.zeros((4, 4))
    chain[[0, 1, 2], [1, 2, 3]] = 1
    out = program.run({"E": chain})["Path"]
    np.testing.assert_array_equal(out, np.triu(np.ones((4, 4)), 1))
    param = compile("param W[i,j]\naxis i = 2, j = 3\nY[i] = W[i,j]\nexport Y\n")
    first, second = param.run()["Y"], param.run()["Y"]
    np.testing.assert_array_equal(first, second)  # params start the same on every run
    given = np.arange(6.0).reshape(2, 3)
    np.testing.assert_array_equal(param.run({"W": given})["Y"], given.sum(axis=1))


# ------------------------------------------------------------------ API errors


def test_compile_raises_fuse_error_with_diagnostics():
    with pytest.raises(FuseError) as info:
        compile("Y[i] = Missing[i]\nZ[i] = W[i,j] +\nexport Y\n")
    err = info.value
    codes = {d.code for d in err.diagnostics}
    assert {"undefined-tensor", "syntax-error"} <= codes
    assert "line 1" in str(err) and "Missing" in str(err)
    assert err.__cause__ is None and err.__context__ is None  # not a wrapped internal error


def test_unknown_backend_is_a_fuse_error():
    with pytest.raises(FuseError, match="numpy"):
        compile("A = const(1)\n", backend="no-such-backend")


def test_memory_guard_refuses_before_running_and_names_the_figure(tmp_path):
    text = 'axis i = 1000, j = 1000\nA[i,j] = 1\n"a.npy" = A[i,j]\nexport A\n'
    program = compile(text, base_dir=tmp_path, memory_limit=1_000_000)
    with pytest.raises(FuseError) as info:
        program.run()
    message = str(info.value)
    assert "4.0 MB" in message  # 10^6 float32 elements
    assert "1.0 MB" in message  # the limit
    assert "A" in message and "nothing was run" in message
    assert not (tmp_path / "a.npy").exists()
    # under the limit it runs
    np.testing.assert_array_equal(
        compile(text, base_dir=tmp_path, memory_limit=10_000_000).run()["A"], np.ones((1000, 1000)))


def test_memory_guard_counts_only_the_needed_tensors():
    text = "axis i = 1000, j = 1000\nBig[i,j] = 1\nSmall[k] = const([1, 2])\nexport Small\n"
    out = compile(text, memory_limit=100_000).run()
    np.testing.assert_array_equal(out["Small"], [1, 2])


def test_outputs_with_no_export_are_the_leaves():
    out = compile("A[i] = const([1, 2])\nB[i] = 2 A[i]\nC[i] = A[i] + 1\n").run()
    assert set(out) == {"B", "C"}
    np.testing.assert_array_equal(out["B"], [2, 4])
    np.testing.assert_array_equal(out["C"], [2, 3])


def test_a_recurrence_with_a_first_step_at_a_constant_position(tmp_path):
    program = compile("axis t = 4\nB[s] = const([1, 2])\nA[0,s] = B[s]\n"
                      "A[t,s] += 2 A[t-1,s]\nexport A\n", base_dir=tmp_path)
    expected = np.array([[1, 2], [2, 4], [4, 8], [8, 16]], dtype=np.float32)
    np.testing.assert_allclose(program.run()["A"], expected)


def test_memory_guard_counts_the_largest_intermediate(tmp_path):
    # the tensors are small (A, B: 200 x 200, M: 200), but a max over j and k of
    # A[i,j] B[j,k] joins first: an intermediate of 200^3 floats (32 MB)
    text = ("axis i = 200, j = 200, k = 200\nparam A[i,j], B[j,k]\n"
            "M[i] max= A[i,j] B[j,k]\nexport M\n")
    program = compile(text, base_dir=tmp_path, memory_limit=10_000_000)
    with pytest.raises(FuseError) as err:
        program.run()
    assert "while computing M" in str(err.value) and "nothing was run" in str(err.value)
    assert "32.0 MB" in str(err.value)
