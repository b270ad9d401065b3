"""symbols.statement_tables, the checker's one walk of a statement, against the
functions it stands for (statement_scopes, occurrences, index_roles)."""
from pathlib import Path

import pytest

from fuse_lang import analyze
from fuse_lang.check.statement_tables import statement_tables
from fuse_lang.check.symbols import index_roles, occurrences, statement_scopes
from fuse_lang.front import ir

EXAMPLES = sorted((Path(__file__).parent.parent / "examples").glob("*.fuse"))

# each line a statement the walk has a case for, or one it leaves to the functions
PROGRAM = """\
axis n = 3
param A[n,n], B[n], C[n]
X[i,j] = A[i,j]
X[i,j] += A[i,k] A[k,j] - 2 * (B[i] + C[j]) ^ 2
S[i,j.] = softmax(A[i,j] A[j,k] / sqrt(3))
T[i] max= relu(A[i,k] B[k] + 0.5) C[k] B[j]
U[i] = A[i,k] (B[k] + C[i]) B[i-1] A[i+k,k] A[0,i] A[i,:]
U[i] avg= lnorm(A[i,k] + A[k,i], eps=1e-5) relu(-B[k])
P[x/2] = B[x]
Q[i] = B[i] + B
V[i] = iota(i) + i B[i]
W[i] = reduce(max, j) A[i,j] B[j] C[k]
Y[m] = concat(A[m,m], B[m], axis=m)
K = const([[1, 2], [3, 4]])
"out.npz" = U[i] B[j]
X?
F(a, 0)
F(a, b) = F(b, a) F(a, a)
"""

VIRTUAL = "param W[n,n], U[n,n]\nX[i,*t+1] = sig(W[i,j] X[j,*t] + U[i,t])\nexport X"


@pytest.mark.parametrize("text", [PROGRAM, VIRTUAL] + [p.read_text() for p in EXAMPLES])
def test_statement_tables_give_what_the_functions_give(text):
    analysis = analyze(text)
    for k, stmt in enumerate(analysis.program.statements):
        tables = statement_tables(k, stmt, analysis.tensors)
        scopes, placed = statement_scopes(stmt)
        roles = index_roles(k, stmt, occurrences(stmt, analysis.tensors, (scopes, placed)),
                            scopes, placed)
        assert list(tables.scopes.items()) == list(scopes.items())
        assert tables.roles == roles
        nodes = [node for node, _ in placed]
        refs = [node for node in nodes if type(node) is ir.Ref]
        assert [id(ref) for ref in tables.refs] == [id(ref) for ref in refs]
        assert list(tables.bare) == list(dict.fromkeys(r.name for r in refs if r.indices is None))
        assert [id(call) for call in tables.calls] == [id(n) for n in nodes if type(n) is ir.Call]
        assert [(before, id(node)) for before, node in tables.checked] == [
            (len([r for r in nodes[:at] if type(r) is ir.Ref]), id(node))
            for at, node in enumerate(nodes) if type(node) in (ir.Call, ir.Reduce)]
