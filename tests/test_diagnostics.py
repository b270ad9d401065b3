"""Every diagnostic code, triggered through a public entry point.

Each case names the code, the program, the expected severity, the 0-based
(line, column) of the diagnostic's start (via `analysis.lines.position`) and
words its message must contain.  docs/diagnostics.md documents every code.
"""
from __future__ import annotations

import json
import re
from pathlib import Path

import numpy as np
import pytest

import fuse_lang
from fuse_lang import CODES, Severity, analyze
from fuse_lang.cli import main as cli_main

ROOT = Path(__file__).resolve().parent.parent
E, W, I, H = Severity.ERROR, Severity.WARNING, Severity.INFORMATION, Severity.HINT


def with_code(analysis, code):
    return [d for d in analysis.diagnostics if d.code == code]


def pos(analysis, diag):
    return analysis.lines.position(diag.span.start)


def expect(analysis, code, severity, where, *words):
    """Exactly one diagnostic of `code`, at `where`, with `severity` and `words`."""
    found = with_code(analysis, code)
    assert len(found) == 1, [(d.code, d.message) for d in analysis.diagnostics]
    d = found[0]
    assert d.severity is severity
    assert pos(analysis, d) == where, (d.message, pos(analysis, d))
    for word in words:
        assert word in d.message, (word, d.message)
    return d


# code, program, severity, (line, column), words in the message
CASES = [
    # ---------------------------------------------------------------- syntax
    ("syntax-error", "X = const([1])\nY[i] = = X[i]", E, (1, 7), ["unexpected '='"]),
    ("datalog-syntax", "Parent(Ann, Bob)\nAnc(x,y) :- Parent(x,y).\nAnc(Ann, x)?", E, (1, 9),
     ["Datalog's `:-`", "`Anc(x,y) = Parent(x,y)`"]),
    ("unclosed-bracket", "X = const([1])\nY[i] = (X[i]", E, (1, 7), ["'('", "never closed"]),
    ("unclosed-bracket", "X = const([1]); Y[i] = (X[i]; Z = 1", E, (0, 23), ["before ';'"]),
    ("unmatched-bracket", "X = const([1])\nY[i] = X[i])", E, (1, 11), ["')'", "closes nothing"]),
    ("unmatched-bracket", "X = const([1])\nY[i] = (X[i]]", E, (1, 12), ["does not match"]),
    ("unterminated-string", 'Y = "abc', E, (0, 4), ["no closing"]),
    ("invalid-character", "X = const([1])\nY[i] = X[i] @ 2", E, (1, 12), ["'@'", "not part"]),
    ("invalid-index", "X = const([1])\nY = X[2.5]", E, (1, 6), ["`2.5`", "whole numbers"]),
    ("invalid-index", "X = const([1,2])\nY[x+dx] = X[x]", E, (1, 2),
     ["sum of variables", "not written"]),
    ("nesting-too-deep", "Y = " + "(" * 201 + "1" + ")" * 201, E, (0, 204),
     ["nested more than 200"]),
    ("number-too-long", "axis i = 3\nparam X[i]\nY = X[" + "9" * 5000 + "]", E, (2, 6),
     ["5000 characters", "at most 1000"]),
    ("number-too-long", "axis i = " + "9" * 5000, E, (0, 9), ["5000 characters"]),
    # (no word is reserved now: `let`, `import` and `as` are the language's, test_syntax.py)
    # ----------------------------------------------------- names and shapes
    ("undefined-tensor", "Tensr = const([1])\nY[i] = Tensor[i]", E, (1, 7),
     ["`Tensor` is not defined", "did you mean `Tensr`"]),
    ("undefined-tensor", "Y = const(1)\nexport Z", E, (1, 7), ["`Z` is not defined"]),
    ("arity-mismatch", "B[i,j] = const([[1,2],[3,4]])\nA[i] = B[i]", E, (1, 7),
     ["`B` has 2 axes", "written here with 1"]),
    ("extent-conflict", "axis d = 3\naxis d = 4", E, (1, 9), ["declared 4", "3 before"]),
    ("extent-too-large", "axis i = 1" + "0" * 30 + "\nparam A[i]\nB = A[i]", E, (0, 9),
     ["extent 1.00e30", "2^53"]),
    ("extent-too-large", "M[q,k] = causal_mask(1" + "0" * 400 + ")", E, (0, 9),
     ["extent 1.00e400", "causal_mask"]),
    ("extent-too-large", "param A[i]\nB = A[9007199254740992]", E, (1, 6),
     ["position 9.01e15", "2^53"]),
    # reported where the two uses meet (the join), the literals as related places
    ("extent-conflict", "X = const([1,2,3])\nY = const([1,2])\nZ = X[i] Y[i]", E, (2, 9),
     ["extent 2", "extent 3", "where `Y` is used"]),
    ("extent-conflict", "X = const([1,2])\nY = X[5]", E, (1, 6), ["position 5", "extent 2"]),
    ("lone-index", "W = const([[1,2],[3,4]])\nB = const([1,2])\nX = const([1,1])\n"
     "H[f] = W[f,d] X[d] + B[g]", W, (3, 23), ["`g`", "summed", "did you mean `f`"]),
    ("padding-index", "X = const([1,2,3,4])\nK = const([1,1])\naxis dx = valid\n"
     "H[x] = K[dx] X[x+dx]", W, (2, 5), ["`dx` is a window's tap", "declare the padding on `x`"]),
    ("inner-projection", "Y = const([1,-1,1])\nF = const([0.5,0.5,2])\n"
     "L avg= relu(1 - Y[n] F[n])", W, (2, 2),
     ["`avg=` projects nothing here", "only inside `relu(...)`", "reduce(avg, n)"]),
    ("multiplied-term", "W = const([[1,0],[0,1]])\nX = const([1,2])\nB = const([10,20])\n"
     "Y[f] = (W[f,d] X[d] + B[f]) / 2", W, (3, 22),
     ["`B[f]` does not mention `d`", "counted once per position of `d`", "reduce(sum, d)"]),
    ("normalised-sum", "Q = const([[1,2],[3,4]])\nV = const([[1,2],[3,4]])\n"
     "S[t,t'.] = softmax(Q[t,k] Q[t',k])\nO[t,k] = S[t,t'] V[t,k]", H, (3, 13),
     ["normalised along `t'`", "gives 1"]),
    ("extent-conflict", "axis x = 1\nR(A)\nR(B)\nS(x) = R(x)", E, (2, 2),
     ["extent 1", "more symbols", "`B`"]),
    # (the extent may come from the input given for the param W: a warning)
    ("unknown-extent", "param W[i]\nY[i] = 1\nZ[i] = Y[i] W[i]", W, (1, 2),
     ["`i`", "axis i = N"]),
    # what a run refuses before computing is an error (check agrees with run)
    ("unsized-tensor", "Y[i] = 1", E, (0, 0), ["`Y`'s axis `i`", "axis i = N"]),
    ("unsized-tensor", "X[i] = X[i] + 1", E, (0, 0), ["`X`'s axis `i`", "cannot compute"]),
    ("unsized-index", "Z = reduce(sum, i) 1", E, (0, 16), ["index `i`", "axis i = N"]),
    ("unsized-index", "W = const([[1,2],[3,4]])\nX[i,*t+1] = sig(W[i,j] X[j,*t])", E, (1, 5),
     ["number of steps", "`t`"]),
    ("recurrence-write", "axis i = 3\nX[i] = X[i-1] + 1\nX[j] = 1", E, (2, 0),
     ["recurrence over `i`", "writes `i` or a constant"]),
    ("virtual-step", "axis t = 3, i = 2\nX[i,*t] = X[i,*t] + t\nX[i,*t+1] = X[i,*t] + 1",
     E, (1, 0), ["start of `X`'s recurrence over `t`", "write the step's update at `*t+1`"]),
    ("virtual-step", "axis l = 3, d = 2, e = 2\nparam W[l,d,e]\nA[d,e,*l] = W[l,d,e]\n"
     "X[d,*l+1] = relu(A[d,e,*l] X[e,*l])\nexport X", E, (2, 0),
     ["`A` is no part of a recurrence", "cannot read the step `l`"]),
    ("unknown-builtin", "X = const([1,2])\nY[i] = fo(X[i])", E, (1, 7),
     ["`fo` is not a builtin", "builtins:"]),
    ("unknown-builtin", "X = const([1,2])\nY[i] = sigmoid(X[i])", E, (1, 7),
     ["`sigmoid`", "did you mean `sig`"]),
    # functions and choices (issue 33)
    ("unknown-function", "fn dbl(x[i]) -> y[i] { y[i] = 2 x[i] }\nX = const([1,2])\n"
     "Y[i] = dbbl(X[i])", E, (2, 7), ["`dbbl` is neither", "did you mean `dbl`", "functions: dbl"]),
    ("fn-arguments", "fn dbl(x[i]) -> y[i] { y[i] = 2 x[i] }\nX = const([1,2])\n"
     "Y[i] = dbl(X[i], X[i])", E, (2, 7), ["`dbl` takes 1 argument (x[i]), not 2"]),
    ("fn-arguments", "fn dbl(x[i]) -> y[i] { y[i] = 2 x[i] }\nX = const([1,2])\n"
     "Y[i] = dbl(X[i/2])", E, (2, 13), ["reads an index form a function cannot take"]),
    ("fn-rank", "fn dbl(x[i]) -> y[i] { y[i] = 2 x[i] }\nX = const([[1,2]])\n"
     "Y[i] = dbl(relu(X[j,i]))", E, (2, 11), ["argument 1 of `dbl` is an expression over 2 "
                                               "indices (j, i)", "`x[i]` has 1"]),
    ("local-out-of-scope", "X = const([1,2])\n{ let h[i] = 2 X[i]; Y[i] = h[i] }\n"
     "W[i] = h[i] + 1\nexport Y, W", E, (2, 7), ["`h` is local to the block at line 2",
                                                 "visible only inside"]),
    ("let-redefined", "X = const([1,2])\nh[i] = X[i]\n{ let h[i] = 2 X[i]; Y[i] = h[i] }\n"
     "export Y", E, (2, 6), ["`h` is a tensor of the program already"]),
    ("local-export", "X = const([1,2])\nlet T[i] = 3 X[i]\nY[i] = T[i] + 1\nexport Y, T",
     E, (3, 10), ["`T` is a `let`, local to this file", "no output"]),
    ("fn-rank", "fn dbl(x[i]) -> y[i] { y[i] = 2 x[i] }\nX = const([[1,2]])\n"
     "Y[i] = dbl(X[j,i])", E, (2, 7), ["argument 1 of `dbl` has 2 indices", "`x[i]` has 1"]),
    ("fn-recursion", "fn f(x[i]) -> y[i] { y[i] = f(x[i]) }\nX = const([1,2])", E, (0, 3),
     ["`f` calls itself (f -> f)"]),
    ("fn-no-result", "fn f(x[i]) -> y[i] { z[i] = x[i] }\nX = const([1,2])", E, (0, 14),
     ["does not define its result `y`"]),
    ("fn-index-mismatch", "fn f(x[i], y[i]) -> z[i] { z[i] = x[i] y[i] }\nA = const([1,2])\n"
     "W[k] = f(A[k], A[j])", W, (2, 17), ["share the index `i`, given here as `j` and before "
                                          "as `k`", "drops `j`"]),
    ("fn-index-clash", "fn outer(x[p]) -> s[p,q] { s[p,q] = x[p] x[q] }\nA = const([1,2])\n"
     "G[q] = outer(A[q])", W, (2, 7), ["`outer`'s result index `q` is no parameter's",
                                       "one index here (a diagonal)"]),
    ("misplaced-list", "X[i] = const([1, 2])\nY[i] = X[i] + [1, 2]", E, (1, 14),
     ["only as `const`'s argument"]),
    ("misplaced-list", "X[i] = const([1, 2])\nY[i] = X[i] [i == 0]", E, (1, 12),
     ["in parentheses"]),
    ("misplaced-list", "X[i] = const([1, 2])[i]", E, (0, 20),
     ["`const(...)` takes no indices after it", "left-hand side's indices in order"]),
    ("misplaced-list", "X[i] = const([1, 2])\nY[i] = relu(X[i])[i]", E, (1, 17),
     ["`relu(...)` takes no indices after it"]),
    ("select-shapes", "A = const([[1,2],[3,4]])\nB = const([5,6])\n"
     "Y[i] = select(A[i,j] > 2, A[i,j], B[i])", E, (2, 7), ["[i,j] and [i]",
                                                          "`j` is summed outside it"]),
    ("select-shapes", "A = const([[1,2],[3,4]])\nB = const([5,6])\n"
     "Y[i] = case { A[i,j] > 2 -> A[i,j]; default -> B[i] }", E, (2, 7), ["[i,j] and [i]"]),
    ("unknown-keyword", "X = const([1,2])\nY[i] = softmax(X[i], ax=i)", E, (1, 21),
     ["no keyword `ax`", "keywords: axis"]),
    ("argument-count", "X = const([1,2])\nY[i] = pow(X[i])", E, (1, 7),
     ["`pow` takes 2 arguments, not 1", "pow(x, n)"]),
    ("argument-count", "X = const([1,2])\nY[i] = topk(X[i])", E, (1, 7), ["needs `k=`"]),
    ("bad-argument", "X = const([1,2])\nY[i] = topk(X[i], k=1.5)", E, (1, 20),
     ["`k=`", "whole number"]),
    ("bad-argument", "X = const([[1,2]])\nY[i] = even(X[i,j])", E, (1, 12), ["index variable"]),
    ("bad-argument", "Y[i,j] = causal_mask(2.5)", E, (0, 21), ["whole number"]),
    ("bad-argument", "A = const([[1,2]])\nB = const([3])\nC[i,n] = concat(A[i,n], B[i], axis=n)",
     E, (2, 24), ["every argument of concat", "`n`"]),
    ("bad-argument", "Y = const([[1],[2,3]])", E, (0, 10), ["rectangular"]),
    ("bad-argument", "Y[i,j] = const([1,2])", E, (0, 15), ["1 axes", "has 2"]),
    ("bad-argument", "X = const(1)\nY = softmax(X)", E, (1, 4), ["left-hand side has none"]),
    ("bad-argument", "X = const([[1,2]])\nY[i,j] = softmax(X[i,j], axis=k)", E, (1, 30),
     ["`axis=`", "(i, j)"]),
    ("bad-argument", "X = const([[1,2]])\nY[i] = reduce(prod, j) X[i,j]", E, (1, 14),
     ["`prod`", "sum, max, min, avg"]),
    ("bad-argument", "X = const([1,2])\nY[i] = sig(X[i], 2, T=1)", E, (1, 7),
     ["temperature twice"]),
    ("bad-initialiser", "axis i = 2\nparam W[i] = kaimin\nY = W[i]\nexport Y", E, (1, 13),
     ["`kaimin` is not an initialiser", "did you mean `kaiming`", "normal(std)"]),
    ("bad-initialiser", "axis i = 2\nparam W[i] = normal(0, 1, 2)\nY = W[i]\nexport Y", E,
     (1, 13), ["`normal` takes 1 or 2 arguments, not 3"]),
    ("bad-initialiser", "axis i = 2\nparam W[i] = uniform(0.1, -0.1)\nY = W[i]\nexport Y", E,
     (1, 13), ["low < high"]),
    ("bad-initialiser", "axis i = 2\nparam W[i] = zeros\nparam W[i] = ones\nY = W[i]\nexport Y",
     E, (2, 13), ["`W` starts as zeros already"]),
    ("bad-argument", "A = const([1,2])\nB[i] = concat(A[i], A[i], axis=1)", E, (1, 31),
     ["`axis=1`", "no index at position 1", "(i)"]),
    ("cross-entropy-targets", "Z = const([[1,2],[3,4]])\nT[n] = const([0,1])\n"
     "C[n] = cross_entropy(Z[n,v], T[m], axis=v)", E, (2, 29), ["index `m`", "logits lack"]),
    ("topk-capped", "X = const([[1,2,3]])\nY[i,j] = topk(X[i,j], k=5)", W, (1, 24),
     ["k=5", "a row holds (3)", "it gives 3"]),
    ("mixed-projection", "X = const([1,2])\nY[i] = X[i]\nY[i] max= X[i]", E, (2, 5),
     ["`=`", "`max=`", "one projection operator"]),
    ("dotted-axis", "X = const([[1,2]])\nY[i,j] = X[i.,j]", E, (1, 11), ["left-hand side only"]),
    ("dotted-axis", "X = const([[1,2]])\nY[i.,j.] = softmax(X[i,j])", E, (1, 5),
     ["only one axis"]),
    ("dotted-axis", "X = const([1,2])\nY[i.] = X[i]", W, (1, 2), ["no effect"]),
    ("paren-on-dense", "X = const([1,2])\nY[i] = X(i)", W, (1, 7), ["`X` is numeric", "( )"]),
    ("kind-conflict", "X = const([1,2])\nX(0)", E, (1, 0), ["numeric `[ ]` first"]),
    ("kind-conflict", "R(A, B)\nR[x,y] = R(y,x)", E, (1, 0), ["Boolean `( )` first"]),
    ("invalid-fact", "Parent[Alice, Bob]", E, (0, 0), ["`[ ]` means nothing", "Parent(Alice, Bob)"]),
    ("invalid-fact", "Parent", E, (0, 0), ["bare name"]),
    ("invalid-fact", "Parent(Alice, x)", E, (0, 14), ["constants only"]),
    ("invalid-statement", "axis d = 2.5", E, (0, 9), ["whole number"]),
    ("invalid-statement", 'X[i] = "a.npy" + 1', E, (0, 7), ["file path", "stand alone"]),
    ("invalid-statement", 'W[i] = "a.npy"\nW[i] = "b.npy"', E, (1, 7),
     ["already reads `a.npy`", "reads one file"]),
    ("invalid-statement", 'param W[i]\nW[i] = "a.npy"', E, (1, 7),
     ["`W` is a param", "not from `a.npy`"]),
    ("invalid-statement", "axis T = 3\nY[T] = 1", E, (0, 5),
     ["`T` starts with an uppercase letter", "symbol constant", "`axis t = ...`"]),
    ("invalid-statement", "axis i = 2\nparam W(i)", E, (1, 6),
     ["a param is a numeric tensor", "`param W[...]`"]),
    ("virtual-index", "W = const([[1,2],[3,4]])\nX[i,*t+1] = W[i,j] X[j,*t]\nY[i] = X[i,t]",
     E, (2, 11), ["axis 1 of `X`", "read it as `*t`"]),
    ("virtual-index", "X = const([[1,2]])\nY[i] = X[i,*t]", E, (1, 11), ["not virtual"]),
    ("likely-typo-index", "W = const([[1,2]])\nX = const([[1,2]])\nT[k,p] = W[k,d] X[p,dd]",
     W, (2, 20), ["`d` and `dd`", "did you mean `d`"]),
    ("unused-tensor", "X = const([1,2])\nY[i] = X[i]\nexport X", H, (1, 0),
     ["`Y` is never read"]),
    ("loss-not-scalar", "param W[i,j]\nX = const([1,2])\nY[i] = W[i,j] X[j]\ntrain Y", E,
     (3, 6), ["`Y` has 1 axis", "a scalar"]),
    ("loss-without-params", "X = const([1,2])\nL = X[i] X[i]\ntrain L", E, (2, 6),
     ["no param influences the loss `L`"]),
    ("param-with-equation", "param W[j]\nX = const([1,2])\nW[j] = X[j]\nL = W[j] W[j]\n"
     "train L", W, (2, 0), ["`W` is a param and also has an equation", "its own name"]),
    ("gradient-blocked", "param W[i], V[i]\nX = const([1,2])\nR(i) = V[i] X[i]\n"
     "L = R(i) + step(V[i]) + W[i] X[i]\ntrain L", W, (0, 12),
     ["`V` reaches the loss `L` only through", "sig(x, T)"]),
    ("loss-twice", "param W[i]\nX = const([1,2])\nL = W[i] X[i]\ntrain L\ntrain L", E, (4, 0),
     ["already trains `L`"]),
    ("unwritable-sink", 'Y[i] = const([1, 2])\n"out.xlsx" = Y[i]', E, (1, 0),
     ["`out.xlsx` cannot be written", "a sink writes .npy"]),
    ("unwritable-sink", 'Y[i] = const([1, 2])\n"results" = Y[i]', E, (1, 0), ["results:"]),
    ("sink-over-source", 'X[i] = "x.npy"\n"./x.npy" = 2 X[i]', W, (1, 0),
     ["this sink writes `./x.npy`, the file `X` is read from", "a second run reads"]),
    ("sink-twice", 'R(A)\nS(B)\n"o.csv" = R(x)\n"./o.csv" = S(x)', E, (3, 0),
     ["`./o.csv` is the file of an earlier sink too", "would be lost"]),
    ("recursion", "Edge(A,B)\nPath(x,y) = Edge(x,y)\nPath(x,z) = Path(x,y) Edge(y,z)", I, (1, 0),
     ["`Path` depends on itself", "semi-naive"]),
    ("recursion", "X = const([[1,2]])\nY[i,j] = X[i,j]\nY[i,j] += Y[i-1,j]", I, (1, 0),
     ["recurrence over `i`"]),
    ("recursion", "A = const(1)\nB = A + C\nC = B / 2", I, (1, 0),
     ["`B`, `C` depend on each other", "below tolerance"]),
    ("recursion", "E(A,B)\nS(A)\nR(x) = S(x)\nR(y) = R(x) E(x,y) step(R(y))", I, (2, 0),
     ["`R` depends on itself", "not semi-naive"]),
    ("unsafe-negation", "Person(Ann)\nBanned(Bob, Spam)\nOk(x, y) = Person(x) not Banned(x, y)",
     E, (2, 35), ["`y`", "not Banned(x, y)", "positive atom"]),
    ("unsafe-negation", "Person(Ann)\nBad(x) = not Person(x)", E, (1, 20), ["`x`"]),
    ("unsafe-negation", "Person(Ann)\nBanned(Bob, Spam)\nOk(x) = Person(x) not Banned(x, y)",
     E, (2, 32), ["`y`", "ungrounded variable y", "`not Banned(x, _)`"]),
    ("unbound-head-variable", "P(A)\nQ(B)\nP(x) = Q(y)", E, (2, 2), ["`x`", "head `P`"]),
    ("negation-cycle", "Move(A,B)\nMove(B,A)\nMove(B,C)\nWin(x) = Move(x,y) not Win(y)", E,
     (3, 23), ["`Win` → `Win`", "not stratified"]),
    ("negation-cycle", "Move(A,B)\nWin(x) = Move(x,y) (1 - step(Win(y)))", E,
     (1, 29), ["`Win` → `Win`"]),
    ("negation-cycle", "E(A,B)\nA(x) = E(x,y) not B(y)\nB(x) = E(x,y) A(y)", E,
     (1, 18), ["`A` → `B` → `A`"]),
    ("negation-cycle", "E(1, 2)\nC[x] = P(x, y)\nP(x, y) = E(x, y)\n"
     "P(x, z) = P(x, y) E(y, z) (C[y] < 2)", E, (3, 27), ["`P` → `C` → `P`", "comparison"]),
    ("unsafe-comparison", "P(1)\nW(x) = P(y) (y < 5) (x < y)", E, (1, 21),
     ["`x`", "`<`", "no positive atom"]),
    ("unsafe-arithmetic", "P(1)\nQ(2)\nR(x) = P(x) Q(x + y)", E, (2, 18),
     ["`y`", "`Q(x + y)`", "only in arithmetic", "ungrounded variable y"]),
    ("unsafe-arithmetic", "V(1)\nR(n) = V(n - 1)", E, (1, 9), ["`n`", "`V(n - 1)`"]),
    ("aggregate-over-absent", "E(A, B, 3)\nE(A, C, 5)\nM[x] min= E(x, y, w) w", W, (2, 10),
     ["`min=`", "`y`, `w`", "no tuple", "`select(E(x, y, w), w, 1e30)`"]),
    ("aggregate-over-absent", "X = const([[1,2],[3,4]])\nY[i] max= X[i,j] (j <= i)", W, (1, 17),
     ["`max=`", "`j`", "`(j <= i)` does not hold", "`select((j <= i), X[i,j], -1e30)`"]),
    ("not-a-number", "S(Ann, 3)\nT(x) = S(x, y) (x < y)", E, (1, 16), ["`x`", "symbols (Ann)"]),
    ("not-a-number", "S(Ann, 3)\nT(x + 1, y) = S(x, y)", E, (1, 2), ["`x`", "symbols"]),
    ("not-a-number", "P(Ann)\nT(x) = P(x) (x < Ann)", E, (1, 17), ["`Ann`", "no order"]),
    ("unknown-symbol", "P(Ann)\nT(x) = P(x) (x == Anne)\nT(x)?", I, (1, 18),
     ["`Anne`", "(Ann)", "never holds", "`Ann`?"]),
    ("number-overflow", "E(1, 2)\nQ(n, m) = E(n, m) (n == m + 1e400)\nexport Q", W, (1, 28),
     ["`1e400`", "infinity", "every value"]),
    ("domain-limit", "N(0)\nN(n + 1) = N(n)", E, (1, 0), ["`N`", "without bound"]),
    ("domain-limit", "N(3)\nN(n - 1) = N(n)", E, (1, 0), ["`N`", "without bound"]),
    ("domain-limit", "axis n = 4\nN(0)\nN(n + 1) = N(n) (n < 9)", E, (2, 0),
     ["values 0 to 9", "extent 4"]),
    # (`Next(x + 1) = Id(x)` alone holds exactly -6 and 3000000001; a recursion spans)
    ("domain-limit", "Id(3000000000)\nId(-7)\nNext(x) = Id(x)\n"
     "Next(x + 1) = Next(x) (x < 3000000001)", E, (3, 0),
     ["-7 to 3000000001", "1,000,000", "every integer between"]),
    ("unknown-constant", "P(Ann, Bob)\nA(x, y) = P(x, y)\nA(Anne, x)?", W, (2, 2),
     ["`Anne`", "column 1 of `A`", "(it holds Ann)", "did you mean `Ann`?"]),
    ("unknown-constant", 'P("1")\nQ(x) = P(1) P(x)', W, (1, 9),
     ["`1`", "did you mean `\"1\"`?"]),
    ("unknown-constant", "S[i] = const([1, 2])\nY = S[Bob]", W, (1, 6),
     ["`Bob`", "no fact, file or head gives that column any value"]),
    ("lowercase-constant", 'P("ann", Bob)\nP(ann, x)?', H, (1, 2),
     ["`ann` is a variable", '"ann"']),
    ("invalid-index", "X[i] = const([1, 2])\nY = X[-1]", E, (1, 6), ["-1 is not a position"]),
    # ---------------------------------------------------------------- imports
    ("import-not-found", 'import "no/such/library.fuse" as lib\nY = const(1)', E, (0, 7),
     ["cannot import `no/such/library.fuse`", "does not exist"]),
    ("unknown-namespace", "X[i] = const([1, 2])\nY[i] = lib::X[i]", E, (1, 7),
     ["`lib` is not a namespace", "namespaces: none"]),
]


@pytest.mark.parametrize("code,text,severity,where,words", CASES,
                         ids=[f"{c[0]}-{k}" for k, c in enumerate(CASES)])
def test_code_triggers(code, text, severity, where, words):
    expect(analyze(text), code, severity, where, *words)


# ------------------------------------------------------------ fixes / related


def test_likely_typo_has_fix_replacing_dd_by_d():
    text = "W = const([[1,2]])\nX = const([[1,2]])\nT[k,p] = W[k,d] X[p,dd]"
    a = analyze(text)
    d = expect(a, "likely-typo-index", W, (2, 20), "`d` and `dd`")
    (fix,) = d.fixes
    (edit,) = fix.edits
    assert text[edit.span.start:edit.span.end] == "dd"
    assert edit.new_text == "d"
    assert "`dd`" in fix.title and "`d`" in fix.title
    assert d.related and text[d.related[0].span.start:d.related[0].span.end] == "d"
    assert not a.has_errors


def test_likely_typo_with_sources(tmp_path):
    np.save(tmp_path / "w.npy", np.zeros((3, 4), np.float32))
    np.save(tmp_path / "x.npy", np.zeros((5, 4), np.float32))
    text = 'W[k,d] = "w.npy"\nX[p,d] = "x.npy"\nT[k,p] = W[k,d] X[p,dd]\nexport T'
    a = analyze(text, str(tmp_path / "p.fuse"))
    d = expect(a, "likely-typo-index", W, (2, 20), "did you mean `d`")
    assert d.fixes[0].edits[0].new_text == "d"
    assert not a.has_errors


def test_deliberate_single_projection_is_clean(tmp_path):
    np.save(tmp_path / "p.npy", np.zeros((4, 3), np.float32))
    for op in ("=", "max=", "avg="):
        a = analyze(f'P[b,o] = "p.npy"\nS[o] {op} P[b,o]\nexport S', str(tmp_path / "p.fuse"))
        assert a.diagnostics == (), [(d.code, d.message) for d in a.diagnostics]


@pytest.mark.parametrize("rhs", [
    "A[i,j] + A[i,jj]",  # separate additive terms: no join to miss
    "A[j,jj]",           # one reference: renaming would take a diagonal, not a join
    "A[i,j] + B[i]",     # one projected index
])
def test_no_typo_warning_without_a_join(rhs):
    a = analyze(f"A = const([[1,2]])\nB = const([1])\nY[i] = {rhs}")
    assert with_code(a, "likely-typo-index") == []


def test_undefined_tensor_fix_renames():
    text = "Tensr = const([1])\nY[i] = Tensor[i]"
    a = analyze(text)
    (d,) = with_code(a, "undefined-tensor")
    edit = d.fixes[0].edits[0]
    assert text[edit.span.start:edit.span.end] == "Tensor" and edit.new_text == "Tensr"


def test_related_spans_point_at_first_definition():
    text = "X = const([1,2])\nY[i] = X[i]\nY[i] max= X[i]"
    a = analyze(text)
    (d,) = with_code(a, "mixed-projection")
    assert a.lines.position(d.related[0].span.start) == (1, 0)
    text = "axis d = 3\naxis d = 4"
    a = analyze(text)
    (d,) = with_code(a, "extent-conflict")
    assert a.lines.position(d.related[0].span.start) == (0, 9)


def test_paren_on_dense_fix_rewrites_brackets():
    text = "X = const([1,2])\nY[i] = X(i)"
    a = analyze(text)
    (d,) = with_code(a, "paren-on-dense")
    edits = sorted(d.fixes[0].edits, key=lambda e: e.span.start)
    fixed = text
    for e in reversed(edits):
        fixed = fixed[:e.span.start] + e.new_text + fixed[e.span.end:]
    assert fixed.endswith("Y[i] = X[i]")
    assert with_code(analyze(fixed), "paren-on-dense") == []


def test_unsafe_negation_fix_writes_the_wildcard():
    text = "Person(Ann)\nBanned(Bob, Spam)\nOk(x) = Person(x) not Banned(x, y)\nOk(x)?"
    (d,) = with_code(analyze(text), "unsafe-negation")
    (edit,) = d.fixes[0].edits
    assert text[edit.span.start:edit.span.end] == "y" and edit.new_text == "_"
    fixed = text[:edit.span.start] + "_" + text[edit.span.end:]
    assert fixed.endswith("not Banned(x, _)\nOk(x)?") and not analyze(fixed).has_errors


def test_dotted_axis_without_softmax_fix_removes_dot():
    text = "X = const([1,2])\nY[i.] = X[i]"
    (d,) = with_code(analyze(text), "dotted-axis")
    e = d.fixes[0].edits[0]
    assert text[e.span.start:e.span.end] == "." and e.new_text == ""


def test_unknown_extent_is_silenced_by_axis():
    assert with_code(analyze("axis i = 3\nY[i] = 1"), "unknown-extent") == []


def test_bare_query_of_a_tensor_with_axes():
    # `Y?` shows the whole tensor (LANGUAGE.md §2), like `export Y`
    a = analyze("axis i = 3\nY[i] = 1\nY?")
    assert a.diagnostics == (), [(d.code, d.message) for d in a.diagnostics]


# ------------------------------------------------------------ whole-file codes


def test_too_many_errors():
    text = "\n".join(["Y = = 1"] * 250)
    a = analyze(text)
    found = with_code(a, "too-many-errors")
    assert len(found) == 1
    d = found[0]
    assert d.severity is E
    assert "stopped after 200" in d.message
    assert pos(a, d) == (199, 4)
    assert len(with_code(a, "syntax-error")) == 200


def test_invalid_encoding_decode():
    text, d = fuse_lang.decode(b"Y = 1\n\xff\xfe")
    assert d is not None and d.code == "invalid-encoding" and d.severity is E
    assert fuse_lang.LineIndex(text).position(d.span.start) == (1, 0)
    assert "not UTF-8" in d.message and "0xff" in d.message
    text, d = fuse_lang.decode(b"Y\x00")
    assert d is not None and d.code == "invalid-encoding" and "binary" in d.message
    assert fuse_lang.decode("Y = 1\n".encode())[1] is None


def test_invalid_encoding_cli_json(tmp_path, capsys):
    prog = tmp_path / "bad.fuse"
    prog.write_bytes(b"Y = 1\nZ = \xff\n")
    assert cli_main(["check", "--format", "json", str(prog)]) == 1
    out = json.loads(capsys.readouterr().out)
    (d,) = out["diagnostics"]
    assert d["code"] == "invalid-encoding" and d["severity"] == "error"
    assert (d["line"], d["column"]) == (2, 5)
    assert d["path"] == str(prog)


def test_cli_json_shape(tmp_path, capsys):
    prog = tmp_path / "p.fuse"
    prog.write_text("X = const([1,2])\nY[i] = Z[i]\n")
    assert cli_main(["check", "--format", "json", str(prog)]) == 1
    out = json.loads(capsys.readouterr().out)
    (d,) = out["diagnostics"]
    assert set(d) >= {"path", "line", "column", "end_line", "end_column", "severity", "code",
                      "message"}
    assert (d["line"], d["column"], d["end_line"], d["end_column"]) == (2, 8, 2, 9)
    assert d["code"] == "undefined-tensor"
    prog.write_text("X = const([1,2])\nY[i] = X[i]\n")
    assert cli_main(["check", "--format", "json", str(prog)]) == 0
    assert json.loads(capsys.readouterr().out) == {"diagnostics": []}


def test_missing_source(tmp_path):
    a = analyze('Y[i] = X[i]\nX[i] = "nope.npy"', str(tmp_path / "p.fuse"))
    d = expect(a, "missing-source", E, (1, 7), "`nope.npy` does not exist")
    assert str(tmp_path) in d.message


def test_missing_source_with_unknown_suffix(tmp_path):
    # a file that is not there is missing, whatever its suffix
    a = analyze('X[i] = "nope.xyz"', str(tmp_path / "p.fuse"))
    expect(a, "missing-source", E, (0, 7), "does not exist")
    assert with_code(a, "unreadable-source") == []


@pytest.mark.parametrize("name,make,words", [
    ("d.npy", lambda p: p.mkdir(), ["folder"]),
    ("w.xyz", lambda p: p.write_text("1 2"), ["unknown file type .xyz"]),
    ("w.npy", lambda p: p.write_bytes(b"not numpy at all"), ["bad magic"]),
    ("w.csv", lambda p: p.write_text("1,2\nA,B\n"), ["'A'", "not a number"]),
    ("w.npz", lambda p: p.write_bytes(b"PK garbage"), ["not a .npz"]),
    ("w.json", lambda p: p.write_text("[[1,2],[3]]"), ["not rectangular"]),
])
def test_unreadable_source(tmp_path, name, make, words):
    make(tmp_path / name)
    a = analyze(f'X[i,j] = "{name}"\nexport X', str(tmp_path / "p.fuse"))
    expect(a, "unreadable-source", E, (0, 9), f"`{name}`", *words)


def test_npz_member_by_tensor_name(tmp_path):
    np.savez(tmp_path / "w.npz", A=np.zeros((2, 3)), B=np.zeros((3,)))
    a = analyze('A[i,j] = "w.npz"\nB[j] = "w.npz"\nY[i] = A[i,j] B[j]', str(tmp_path / "p.fuse"))
    assert a.diagnostics == ()
    a = analyze('C[i] = "w.npz"', str(tmp_path / "p.fuse"))
    expect(a, "unreadable-source", E, (0, 7), "no array named C")


def test_source_arity_and_extent(tmp_path):
    np.save(tmp_path / "w.npy", np.zeros((3, 4), np.float32))
    np.save(tmp_path / "x.npy", np.zeros((5,), np.float32))
    path = str(tmp_path / "p.fuse")
    a = analyze('W[i] = "w.npy"', path)
    expect(a, "arity-mismatch", E, (0, 7), "1 axis", "holds 2")
    a = analyze('W[i,j] = "w.npy"\nX[j] = "x.npy"\nY[i] = W[i,j] X[j]', path)
    # at the join, where `j` meets both files' axes; the files are related places
    d = expect(a, "extent-conflict", E, (2, 7), "extent 5", "extent 4", "w.npy", "x.npy")
    assert {a.lines.position(r.span.start) for r in d.related} == {(0, 9), (1, 7)}


def test_one_extent_clash_is_reported_once(tmp_path):
    np.save(tmp_path / "x.npy", np.zeros((5, 3), np.float32))
    text = 'X[p,d] = "x.npy"\nM[p,q] = causal_mask(4)\nY[p,q] = M[p,q] X[p,d] X[q,d]'
    a = analyze(text, str(tmp_path / "p.fuse"))
    expect(a, "extent-conflict", E, (2, 9), "causal_mask(4)", "x.npy")


def test_virtual_read_of_a_bare_definition():
    # `X = const(...)` has no virtual axis, so `*t` cannot read it
    a = analyze("X = const([[1,2]])\nY[i] = X[i,*t]")
    d = expect(a, "virtual-index", E, (1, 11), "not virtual")
    assert a.lines.position(d.related[0].span.start) == (0, 0)


def test_relation_source_symbols_conflict_with_axis(tmp_path):
    (tmp_path / "r.tsv").write_text("Alice\tBob\nBob\tCarol\n")
    a = analyze('axis x = 1\nR(x,y) = "r.tsv"\nS(x) = R(x,y)\nexport S', str(tmp_path / "p.fuse"))
    expect(a, "extent-conflict", E, (1, 9), "extent 1", "more symbols", "`Bob`")


# ------------------------------------------------------- §11 acceptance programs


def _save(tmp_path: Path, **arrays):
    for name, shape in arrays.items():
        np.save(tmp_path / f"{name}.npy", np.zeros(shape, np.float32))


SECTION_11 = {
    "perceptron": ("""\
# perceptron: Y = 1
W = const([0.2, 1.9, -0.7, 3])
X = const([0, 1, 1, 0])
Y = step(W[i] X[i])
""", {}),
    "attention": ("""\
X[p,d] = "x.npy"
WQ[dk,d] = "wq.npy"
WK[dk,d] = "wk.npy"
WV[dv,d] = "wv.npy"
Dk = const(8)
Query[p,dk] = WQ[dk,d] X[p,d]
Key[p,dk]   = WK[dk,d] X[p,d]
Val[p,dv]   = WV[dv,d] X[p,d]
Comp[p,p'.] = softmax(Query[p,dk] Key[p',dk] / sqrt(Dk))
Attn[p,dv]  = Comp[p,p'] Val[p',dv]
export Attn
""", {"x": (5, 16), "wq": (8, 16), "wk": (8, 16), "wv": (8, 16)}),
    "cnn": ("""\
Filter[dx,dy,ch] = "filter.npy"
Image[x,y,ch] = "image.npy"
Features[x,y] = relu(Filter[dx,dy,ch] Image[x+dx,y+dy,ch])
Pooled[x/2,y/2] = Features[x,y]
export Pooled
""", {"filter": (3, 3, 2), "image": (8, 8, 2)}),
    "mlp": ("""\
W[i,j,k] = "w.npy"
X[i,j] = "x0.npy"
X[i,j] = sig(W[i,j,k] X[i-1,k])
export X
""", {"w": (4, 6, 6), "x0": (4, 6)}),
    "rnn": ("""\
W[i,j] = "w.npy"
V[i,j] = "v.npy"
U[j,t] = "u.npy"
X[i,*t+1] = sig(W[i,j] X[j,*t] + V[i,j] U[j,t])
export X
""", {"w": (6, 6), "v": (6, 6), "u": (6, 10)}),
    "embedding": ("""\
R(x,y) = "r.tsv"
Emb[x,i] = "emb.npy"
T = const(0.5)
EmbR[i,j] = R(x,y) Emb[x,i] Emb[y,j]
D[x,y]    = sig(EmbR[i,j] Emb[x,i] Emb[y,j], T)
export D
""", {"emb": (3, 4)}),
    "datalog": ("""\
Parent(Alice, Bob)
Parent(Bob, Carol)
Ancestor(x,y) = Parent(x,y)
Ancestor(x,z) = Ancestor(x,y) Parent(y,z)
Ancestor(Alice, x)?
""", {}),
}


@pytest.mark.parametrize("name", sorted(SECTION_11))
def test_section_11_programs_have_no_errors(tmp_path, name):
    text, arrays = SECTION_11[name]
    _save(tmp_path, **arrays)
    (tmp_path / "r.tsv").write_text("A\tB\nB\tC\n")
    a = analyze(text, str(tmp_path / "p.fuse"))
    problems = [(d.code, d.message) for d in a.diagnostics if d.severity in (E, W)]
    assert problems == []


def test_section_11_recurrences_are_reported_as_information(tmp_path):
    text, arrays = SECTION_11["rnn"]
    _save(tmp_path, **arrays)
    a = analyze(text, str(tmp_path / "p.fuse"))
    expect(a, "recursion", I, (3, 0), "virtual index")


def test_import_cycle_and_import_error(tmp_path):
    (tmp_path / "a.fuse").write_text('import "b.fuse" as b\nT(x) = b::U(x)\n')
    (tmp_path / "b.fuse").write_text('import "a.fuse" as a\nU(Ann)\nV[i] = W[i]\n')
    text = 'X(Bob)\nimport "a.fuse" as a\nY(x) = a::T(x)\n'
    a = analyze(text, str(tmp_path / "main.fuse"))
    cycle = expect(a, "import-cycle", E, (1, 0), "a.fuse imports b.fuse imports a.fuse")
    assert cycle.related[0].path == str(tmp_path / "b.fuse")
    error = expect(a, "import-error", E, (1, 0), "`b.fuse` line 3", "`W` is not defined",
                   "[undefined-tensor]")
    assert error.related[0].path == str(tmp_path / "b.fuse")
    assert error.related[0].position == (2, 7, 2, 8)


# ------------------------------------------------------------ generation

_EMBED = "axis c = 5\naxis d = 3\nparam Emb[c,d], Out[c,d]\n"
# code, program, (line, column), words: reported by program.generate (and `fuse
# generate`: tests/test_generate.py), not by `fuse check` (a program need not generate)
GENERATION_CASES = [
    ("generate-no-tokens", "axis c = 5\naxis d = 3\naxis p = 4\nparam Emb[c,d], Out[c,d], "
     "X[p,c]\nLogits[p,c] = Out[c,d] Emb[c',d] X[p,c']\nexport Logits\n", (4, 0),
     ["reads no token ids", "gather("]),
    ("generate-no-logits", _EMBED + "X[p] = const([1, 2, 0])\n"
     "X0[p,d] = gather(Emb[c,d], X[p], axis=c)\nexport X0\n", (4, 0),
     ["no export", "vocabulary axis", "--target"]),
    ("generate-no-window", _EMBED + 'X[n,p] = "ids.npy"\n'
     "E[n,p,d] = gather(Emb[c,d], X[n,p], axis=c)\nLogits[n,p,c] = Out[c,d] E[n,p,d]\n"
     "export Logits\n", (3, 0), ["length of `X`'s sequence axis", "axis p = 64"]),
]


@pytest.mark.parametrize("code,text,where,words", GENERATION_CASES,
                         ids=[c[0] for c in GENERATION_CASES])
def test_generation_codes(code, text, where, words):
    program = fuse_lang.compile(text)
    with pytest.raises(fuse_lang.FuseError) as raised:
        program.generate([1, 2], 3)
    (d,) = raised.value.diagnostics
    assert d.code == code and d.severity is E
    assert program.analysis.lines.position(d.span.start) == where, d.message
    for word in words:
        assert word in d.message, (word, d.message)


# ------------------------------------------------------------------ meta


def test_every_code_is_documented_and_tested():
    doc = (ROOT / "docs" / "diagnostics.md").read_text(encoding="utf-8")
    headings = set(re.findall(r"^## (\S+)\s*$", doc, flags=re.MULTILINE))
    tests = Path(__file__).read_text(encoding="utf-8")
    for code in CODES:
        assert code in headings, f"docs/diagnostics.md has no `## {code}`"
        assert f'"{code}"' in tests, f"no test mentions {code}"
    assert headings - set(CODES) == set(), "documented codes that do not exist"


def test_every_code_is_triggered_by_a_case():
    triggered = {c[0] for c in CASES} | {
        "too-many-errors", "invalid-encoding", "missing-source", "unreadable-source",
        "header-row",  # a relation file's: tests/test_relation_files.py
        # an imported file's (files of their own): test_import_cycle_and_import_error below
        "import-cycle", "import-error",
        "file-too-large",  # the server's, for a document over 2 MB: tests/lsp/test_size_limit.py
        # a weights manifest's, through compile(weights=...) and `fuse check --weights`:
        # tests/test_weights.py
        "weights-bad-manifest", "weights-missing-file", "weights-unknown-key",
        "weights-unknown-tensor", "weights-shape-mismatch", "weights-dtype-mismatch",
        "weights-checksum"} | {c[0] for c in GENERATION_CASES}
    assert set(CODES) == triggered


def test_default_severities_match_the_table():
    for code, _text, severity, *_ in CASES:
        default, summary = CODES[code]
        assert summary
        # a code may be reported below its default (dotted-axis without softmax is a warning)
        order = [H, I, W, E]
        assert order.index(severity) <= order.index(default)
