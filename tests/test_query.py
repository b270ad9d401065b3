"""Lookups by position: what hover, go-to-definition, references and rename read."""
from fuse_lang import analyze
from fuse_lang.ide.query import definition_at, references_at, symbol_at

PROGRAM = """\
A[i,j] = const([[1, 2], [3, 4]])
B[j] = const([1, 1])
Y[i] = relu(A[i,j] B[j])
Y[i] += A[i,i]
export Y
"""


def _at(text: str, needle: str, nth: int = 0) -> int:
    pos = -1
    for _ in range(nth + 1):
        pos = text.index(needle, pos + 1)
    return pos


def _texts(spans):
    return [PROGRAM[s.start:s.end] for s in spans]


def test_a_tensor_resolves_to_its_definitions_and_every_use():
    analysis = analyze(PROGRAM)
    found = symbol_at(analysis, _at(PROGRAM, "A[i,j] B"))
    assert found is not None and found.kind == "tensor" and found.name == "A"
    assert [analysis.lines.position(s.start) for s in found.definitions] == [(0, 0)]
    assert [analysis.lines.position(s.start) for s in found.references] == [
        (0, 0), (2, 12), (3, 8)]


def test_a_tensor_with_two_equations_has_two_definitions_and_its_export():
    analysis = analyze(PROGRAM)
    refs = references_at(analysis, _at(PROGRAM, "Y[i] ="))
    assert [analysis.lines.position(s.start) for s in refs] == [(2, 0), (3, 0), (4, 7)]
    assert len(definition_at(analysis, _at(PROGRAM, "export Y") + 7)) == 2


def test_an_index_is_local_to_its_equation():
    analysis = analyze(PROGRAM)
    offset = _at(PROGRAM, "j] B[j]")  # the j of A[i,j] on line 3
    found = symbol_at(analysis, offset)
    assert found is not None and found.kind == "index" and found.name == "j"
    assert [analysis.lines.position(s.start) for s in found.references] == [(2, 16), (2, 21)]
    # the LHS has no j: the first occurrence is where it is introduced
    assert [analysis.lines.position(s.start) for s in found.definitions] == [(2, 16)]
    # the i of the equation defines at the LHS
    i_found = symbol_at(analysis, _at(PROGRAM, "i] = relu"))
    assert [analysis.lines.position(s.start) for s in i_found.definitions] == [(2, 2)]
    assert len(i_found.references) == 2


def test_a_builtin_and_empty_space():
    analysis = analyze(PROGRAM)
    found = symbol_at(analysis, _at(PROGRAM, "relu"))
    assert found is not None and (found.kind, found.name) == ("builtin", "relu")
    assert symbol_at(analysis, len(PROGRAM)) is None
