"""An audit of Fuse's promise "attention heads, kernel machines and graphical models
in a dozen lines each" (LANGUAGE.md): fresh ML programs written from the contract
as an ML user would write them (multi-head causal attention, norms, a
transformer block, GRU/LSTM/RNN over time, convolutions and pooling, a mixture of
experts, kernel machines, a Gaussian process, naive Bayes, HMM forward and
Viterbi, belief propagation, losses, top-k, embeddings, einsum algebra), each run
through `fuse_lang.load` on NumPy, torch and jax and compared with the same
computation written here by hand in NumPy; `fuse check` must find nothing wrong
with them and `fuse explain` must give the shapes the run gives.

Sources are files (`X[p,d] = "X.npy"`) written into tmp_path from seeded arrays.

And the faults the audit found, each through `fuse check`/`fuse explain`/`load`:
a `reduce` joined by juxtaposition (`Z[n] reduce(max, t) X[t]`) was a syntax error;
`L avg= relu(1 - Y[n] F[n])` (relu of a sum: the call summed `n` first) and
`(W[f,d] X[b,d] + B[f]) G[f]` (`B` counted |d| times) ran silently
(`inner-projection`, `multiplied-term`); reading a virtual state without its `*t`
got a bare arity error; and explain wrote `(reduce(max, t) X[t]) W[p]` without
its parentheses.
"""
from __future__ import annotations

import importlib.util
import json
import zlib
from dataclasses import dataclass
from math import erf
from typing import Callable

import numpy as np
import pytest

import fuse_lang
from fuse_lang.cli import main

TOL = dict(rtol=2e-4, atol=2e-5)  # float32 runs against float64 references
BACKENDS = ["numpy",
            pytest.param("torch", marks=pytest.mark.skipif(
                not importlib.util.find_spec("torch"), reason="torch is not installed")),
            pytest.param("jax", marks=pytest.mark.skipif(
                not importlib.util.find_spec("jax"), reason="jax is not installed"))]


@dataclass(frozen=True)
class Case:
    name: str
    text: str
    inputs: dict
    reference: Callable[[dict], dict]

    def __repr__(self) -> str:
        return self.name


CASES: list[Case] = []


def case(name: str, text: str, reference: Callable[[dict], dict], **inputs) -> None:
    CASES.append(Case(name, text.strip() + "\n", inputs, reference))


def rng(name: str) -> np.random.Generator:
    return np.random.default_rng(zlib.crc32(name.encode()))


def softmax(x, axis=-1):
    e = np.exp(x - x.max(axis, keepdims=True))
    return e / e.sum(axis, keepdims=True)


def log_softmax(x, axis=-1):
    z = x - x.max(axis, keepdims=True)
    return z - np.log(np.exp(z).sum(axis, keepdims=True))


def sig(x):
    return 1 / (1 + np.exp(-x))


def relu(x):
    return np.maximum(x, 0)


def layer_norm(x, axis=-1, eps=1e-5):
    mu = x.mean(axis, keepdims=True)
    return (x - mu) / np.sqrt(((x - mu) ** 2).mean(axis, keepdims=True) + eps)


gelu = np.vectorize(lambda v: 0.5 * v * (1 + erf(v / np.sqrt(2))))


# ------------------------------------------------------------------------ attention
r = rng("attention")
P, D, H, K = 4, 6, 2, 3
CAUSAL = np.tril(np.ones((P, P))) > 0


def mha(a):
    q, k, v = (np.einsum("hkd,pd->hpk", a[w], a["X"]) for w in ("WQ", "WK", "WV"))
    s = softmax(np.where(CAUSAL, np.einsum("hpk,hqk->hpq", q, k) / np.sqrt(K), -1e9))
    return dict(S=s, Y=np.einsum("ehk,hpk->pe", a["WO"], np.einsum("hpq,hqk->hpk", s, v)))


case("multi_head_causal_attention", """
X[p,d] = "X.npy"
WQ[h,k,d] = "WQ.npy"
WK[h,k,d] = "WK.npy"
WV[h,k,d] = "WV.npy"
WO[e,h,k] = "WO.npy"
Dk = const(3)
Mask[p,p'] = causal_mask(4)
Q[h,p,k] = WQ[h,k,d] X[p,d]
Kt[h,p,k] = WK[h,k,d] X[p,d]
V[h,p,k] = WV[h,k,d] X[p,d]
S[h,p,p'.] = softmax(Q[h,p,k] Kt[h,p',k] / sqrt(Dk) - 1e9 * (1 - Mask[p,p']))
A[h,p,k] = S[h,p,p'] V[h,p',k]
Y[p,e] = WO[e,h,k] A[h,p,k]
export Y, S
""", mha, X=r.normal(size=(P, D)), WQ=r.normal(size=(H, K, D)), WK=r.normal(size=(H, K, D)),
     WV=r.normal(size=(H, K, D)), WO=r.normal(size=(D, H, K)))

QKV = dict(Q=r.normal(size=(2, H, P, K)), K=r.normal(size=(2, H, P, K)), V=r.normal(size=(2, H, P, K)))


def batched_attention(mask=None, bias=0.0):
    def reference(a):
        s = np.einsum("bhpk,bhqk->bhpq", a["Q"], a["K"]) / np.sqrt(K) + bias
        s = s if mask is None else np.where(mask(a), s, -1e9)
        return dict(O=np.einsum("bhpq,bhqk->bhpk", softmax(s), a["V"]))
    return reference


BATCHED = 'Q[b,h,p,k] = "Q.npy"\nK[b,h,p,k] = "K.npy"\nV[b,h,p,k] = "V.npy"\n'
case("attention_select_causal", BATCHED + """
S[b,h,p,p'] = Q[b,h,p,k] K[b,h,p',k] / sqrt(3)
A[b,h,p,p'.] = softmax(select(p' <= p, S[b,h,p,p'], -1e9))
O[b,h,p,k] = A[b,h,p,p'] V[b,h,p',k]
export O
""", batched_attention(lambda a: CAUSAL), **QKV)
case("attention_masked_fill", BATCHED + """
Mask[p,q] = causal_mask(4)
A[b,h,p,q.] = softmax(masked_fill(Q[b,h,p,k] K[b,h,q,k] / sqrt(3), Mask[p,q] == 0, -1e9))
O[b,h,p,k] = A[b,h,p,q] V[b,h,q,k]
export O
""", batched_attention(lambda a: CAUSAL), **QKV)
case("attention_length_mask", BATCHED + """
Len[b] = "Len.npy"
A[b,h,p,q.] = softmax(where(q < Len[b], Q[b,h,p,k] K[b,h,q,k] / sqrt(3), -1e9))
O[b,h,p,k] = A[b,h,p,q] V[b,h,q,k]
export O
""", batched_attention(lambda a: np.arange(P)[None, None, None, :] < a["Len"][:, None, None, None]),
     Len=np.array([2.0, 4.0]), **QKV)
case("attention_alibi_bias", BATCHED + """
A[b,h,p,q.] = softmax(Q[b,h,p,k] K[b,h,q,k] / sqrt(3) - 0.5 abs(p - q))
O[b,h,p,k] = A[b,h,p,q] V[b,h,q,k]
export O
""", batched_attention(bias=-0.5 * np.abs(np.arange(P)[:, None] - np.arange(P)[None, :])), **QKV)


def cross_attention(a):
    heads = [softmax((a["X"] @ a["WQ"][h].T) @ (a["M"] @ a["WK"][h].T).T / 2) @ (a["M"] @ a["WV"][h].T)
             for h in range(2)]
    return dict(Y=np.concatenate(heads, -1))


case("cross_attention_fn_concat_heads", """
X[p,d] = "X.npy"
M[m,d] = "M.npy"
WQ[h,k,d] = "WQ.npy"
WK[h,k,d] = "WK.npy"
WV[h,k,d] = "WV.npy"
fn xhead(x[p,d], mem[m,d], wq[k,d], wk[k,d], wv[v,d]) -> o[p,v] {
  q[p,k] = wq[k,d] x[p,d]
  kk[m,k] = wk[k,d] mem[m,d]
  a[p,m.] = softmax(q[p,k] kk[m,k] / 2)
  o[p,v] = a[p,m] wv[v,d] mem[m,d]
}
H0[p,v] = xhead(X[p,d], M[m,d], WQ[0,k,d], WK[0,k,d], WV[0,v,d])
H1[p,v] = xhead(X[p,d], M[m,d], WQ[1,k,d], WK[1,k,d], WV[1,v,d])
Y[p,v] = concat(H0[p,v], H1[p,v], axis=v)
export Y
""", cross_attention, X=r.normal(size=(3, 4)), M=r.normal(size=(5, 4)), WQ=r.normal(size=(2, 4, 4)),
     WK=r.normal(size=(2, 4, 4)), WV=r.normal(size=(2, 2, 4)))

# ------------------------------------------------------------------------ norms, blocks
r = rng("norms")
case("layer_norm_by_hand_and_lnorm", """
X[b,d] = "X.npy"
G[d] = "G.npy"
Bt[d] = "Bt.npy"
Mu[b] avg= X[b,d]
Var[b] avg= (X[b,d] - Mu[b])^2
Y[b,d] = G[d] (X[b,d] - Mu[b]) / sqrt(Var[b] + 1e-5) + Bt[d]
Z[b,d.] = lnorm(X[b,d])
N[i.,j] = lnorm(X[i,j])
export Y, Z, N
""", lambda a: dict(Y=a["G"] * layer_norm(a["X"]) + a["Bt"], Z=layer_norm(a["X"]),
                    N=layer_norm(a["X"], axis=0)),
     X=r.normal(size=(3, 5)), G=r.normal(size=5), Bt=r.normal(size=5))
case("rms_norm_and_batch_norm", """
X[b,d] = "X.npy"
G[d] = "G.npy"
Ms[b] avg= X[b,d]^2
Rms[b,d] = G[d] X[b,d] / sqrt(Ms[b] + 1e-6)
Ss[b] = X[b,d] X[b,d]
Rms2[b,d] = X[b,d] / sqrt(Ss[b] / 5 + 1e-6)
Mu[d] avg= X[b,d]
Vr[d] avg= (X[b,d] - Mu[d])^2
Bn[b,d] = (X[b,d] - Mu[d]) / sqrt(Vr[d] + 1e-5)
export Rms, Rms2, Bn
""", lambda a: dict(Rms=a["G"] * a["X"] / np.sqrt((a["X"] ** 2).mean(-1, keepdims=True) + 1e-6),
                    Rms2=a["X"] / np.sqrt((a["X"] ** 2).mean(-1, keepdims=True) + 1e-6),
                    Bn=layer_norm(a["X"], axis=0)),
     X=r.normal(size=(3, 5)), G=r.normal(size=5))


def block(a):
    x = a["X"]
    h = layer_norm(x)
    s = softmax((h @ a["WQ"].T) @ (h @ a["WK"].T).T / 2)
    x1 = x + s @ (h @ a["WV"].T) @ a["WO"].T
    return dict(Y=x1 + gelu(layer_norm(x1) @ a["W1"].T + a["B1"]) @ a["W2"].T)


case("pre_norm_transformer_block", """
X[p,d] = "X.npy"
WQ[k,d] = "WQ.npy"
WK[k,d] = "WK.npy"
WV[k,d] = "WV.npy"
WO[d,k] = "WO.npy"
W1[f,d] = "W1.npy"
B1[f] = "B1.npy"
W2[d,f] = "W2.npy"
H[p,d.] = lnorm(X[p,d])
Q[p,k] = WQ[k,d] H[p,d]
Kk[p,k] = WK[k,d] H[p,d]
V[p,k] = WV[k,d] H[p,d]
S[p,p'.] = softmax(Q[p,k] Kk[p',k] / 2)
X1[p,d] = X[p,d] + WO[d,k] S[p,p'] V[p',k]
H2[p,d.] = lnorm(X1[p,d])
F[p,f] = gelu(W1[f,d] H2[p,d] + B1[f])
Y[p,d] = X1[p,d] + W2[d,f] F[p,f]
export Y
""", block, X=r.normal(size=(4, 6)), WQ=r.normal(size=(4, 6)), WK=r.normal(size=(4, 6)),
     WV=r.normal(size=(4, 6)), WO=r.normal(size=(6, 4)), W1=r.normal(size=(8, 6)),
     B1=r.normal(size=8), W2=r.normal(size=(6, 8)))


def moe(a):
    g = softmax(a["X"] @ a["Wg"].T)
    return dict(G=g, Y=np.einsum("be,bef->bf", g, relu(np.einsum("efd,bd->bef", a["We"], a["X"]))))


case("mixture_of_experts", """
X[b,d] = "X.npy"
Wg[e,d] = "Wg.npy"
We[e,f,d] = "We.npy"
G[b,e] = softmax(Wg[e,d] X[b,d])
E[b,e,f] = relu(We[e,f,d] X[b,d])
Y[b,f] = G[b,e] E[b,e,f]
export Y, G
""", moe, X=r.normal(size=(3, 4)), Wg=r.normal(size=(2, 4)), We=r.normal(size=(2, 5, 4)))


def stacked(a):
    x = a["X0"]
    for layer in range(3):
        x = relu(x @ a["W"][layer].T + a["B"][layer])
    return dict(Y=x @ a["Wo"].T)


case("mlp_over_a_virtual_layer_index", """
W[l,d,e] = "W.npy"
B[l,d] = "B.npy"
X0[n,d] = "X0.npy"
Wo[o,d] = "Wo.npy"
X[n,d,*l] = X0[n,d]
X[n,d,*l+1] = relu(W[l,d,e] X[n,e,*l] + B[l,d])
Y[n,o] = Wo[o,d] X[n,d,*l]
export Y
""", stacked, W=r.normal(size=(3, 4, 4)) / 2, B=r.normal(size=(3, 4)), X0=r.normal(size=(2, 4)),
     Wo=r.normal(size=(2, 4)))

# ------------------------------------------------------------------------ recurrent nets
r = rng("recurrent")
T, I, Hd = 5, 3, 4
GATES = {n: r.normal(size=(Hd, I)) for n in ("Wi", "Wf", "Wo", "Wg", "Wz", "Wr", "Wn")}
RECUR = {n: r.normal(size=(Hd, Hd)) for n in ("Ui", "Uf", "Uo", "Ug", "Uz", "Ur", "Un")}
U_IN = r.normal(size=(I, T))


def weights(*gates: str) -> str:
    """The sources of the gates' input (W*) and recurrent (U*) weights."""
    return "".join(f'W{g}[i,j] = "W{g}.npy"\nU{g}[i,k] = "U{g}.npy"\n' for g in gates)


def gate_arrays(*gates: str) -> dict:
    return {f"{kind}{g}": (GATES if kind == "W" else RECUR)[f"{kind}{g}"] for g in gates for kind in "WU"}


def gru(a):
    h = np.zeros(Hd)
    for t in range(T):
        u = a["U"][:, t]
        z, rr = sig(a["Wz"] @ u + a["Uz"] @ h), sig(a["Wr"] @ u + a["Ur"] @ h)
        h = (1 - z) * np.tanh(a["Wn"] @ u + rr * (a["Un"] @ h)) + z * h
    return dict(H=h)


case("gru_over_a_virtual_time_index", 'U[j,t] = "U.npy"\n' + weights("z", "r", "n") + """
Z[i,*t] = sig(Wz[i,j] U[j,t] + Uz[i,k] H[k,*t])
Rr[i,*t] = sig(Wr[i,j] U[j,t] + Ur[i,k] H[k,*t])
N[i,*t] = tanh(Wn[i,j] U[j,t] + Rr[i,*t] Un[i,k] H[k,*t])
H[i,*t+1] = (1 - Z[i,*t]) N[i,*t] + Z[i,*t] H[i,*t]
export H
""", gru, U=U_IN, **gate_arrays("z", "r", "n"))


def lstm(a, keep=False):
    h, c = a.get("H0", np.zeros(Hd)).copy(), np.zeros(Hd)
    hs, cs = [], []
    for t in range(T):
        u = a["U"][:, t]
        i_, f = sig(a["Wi"] @ u + a["Ui"] @ h), sig(a["Wf"] @ u + a["Uf"] @ h)
        o, g = sig(a["Wo"] @ u + a["Uo"] @ h), np.tanh(a["Wg"] @ u + a["Ug"] @ h)
        c = f * c + i_ * g
        h = o * np.tanh(c)
        hs.append(h)
        cs.append(c)
    return dict(H=np.array(hs), C=np.array(cs)) if keep else dict(H=h, C=c)


case("lstm_over_a_virtual_time_index", 'U[j,t] = "U.npy"\nH0[i] = "H0.npy"\n' + weights(*"ifog") + """
H[i,*t] = H0[i]
Ig[i,*t] = sig(Wi[i,j] U[j,t] + Ui[i,k] H[k,*t])
Fg[i,*t] = sig(Wf[i,j] U[j,t] + Uf[i,k] H[k,*t])
Og[i,*t] = sig(Wo[i,j] U[j,t] + Uo[i,k] H[k,*t])
G[i,*t] = tanh(Wg[i,j] U[j,t] + Ug[i,k] H[k,*t])
C[i,*t+1] = Fg[i,*t] C[i,*t] + Ig[i,*t] G[i,*t]
H[i,*t+1] = Og[i,*t] tanh(Fg[i,*t] C[i,*t] + Ig[i,*t] G[i,*t])
export H, C
""", lstm, U=U_IN, H0=r.normal(size=Hd), **gate_arrays(*"ifog"))
case("lstm_over_an_offset_time_index", 'U[j,t] = "U.npy"\n' + weights(*"ifog") + """
Fg[t,i] = sig(Wf[i,j] U[j,t] + Uf[i,k] H[t-1,k])
Ig[t,i] = sig(Wi[i,j] U[j,t] + Ui[i,k] H[t-1,k])
Og[t,i] = sig(Wo[i,j] U[j,t] + Uo[i,k] H[t-1,k])
G[t,i] = tanh(Wg[i,j] U[j,t] + Ug[i,k] H[t-1,k])
C[t,i] = Fg[t,i] C[t-1,i] + Ig[t,i] G[t,i]
H[t,i] = Og[t,i] tanh(C[t,i])
export H, C
""", lambda a: lstm(a, keep=True), U=U_IN, **gate_arrays(*"ifog"))


def birnn(a):
    outs = {}
    for name, steps in (("Hf", range(T)), ("Hb", reversed(range(T)))):
        h, hs = np.zeros(Hd), np.zeros((T, Hd))
        for t in steps:
            h = np.tanh(a["Wn"] @ a["U"][:, t] + a["Un"] @ h / 2)
            hs[t] = h
        outs[name] = hs
    return dict(outs, Y=np.concatenate([outs["Hf"], outs["Hb"]], -1))


case("bidirectional_rnn_over_offsets", """
U[j,t] = "U.npy"
Wn[i,j] = "Wn.npy"
Un[i,k] = "Un.npy"
Hf[t,i] = tanh(Wn[i,j] U[j,t] + Un[i,k] Hf[t-1,k] / 2)
Hb[t,i] = tanh(Wn[i,j] U[j,t] + Un[i,k] Hb[t+1,k] / 2)
Y[t,i] = concat(Hf[t,i], Hb[t,i], axis=i)
export Hf, Hb, Y
""", birnn, U=U_IN, Wn=GATES["Wn"], Un=RECUR["Un"])

# ------------------------------------------------------------------------ convolutions
r = rng("convolution")


def conv1d(x, w, left, right, stride=1):
    xp = np.pad(x, ((0, 0), (left, right)))
    k = w.shape[2]
    n = (xp.shape[1] - k) // stride + 1
    return np.einsum("ock,cnk->on", w, np.stack([xp[:, s * stride:s * stride + k] for s in range(n)], 1))


CONV1 = dict(X=r.normal(size=(2, 7)), W=r.normal(size=(3, 2, 3)))
WINDOW = 'X[c,n] = "X.npy"\nW[o,c,dx] = "W.npy"\n'
case("conv1d_zeros_past_the_end", WINDOW + "Y[o,x] = W[o,c,dx] X[c,x+dx]\nexport Y",
     lambda a: dict(Y=conv1d(a["X"], a["W"], 0, 2)), **CONV1)
case("conv1d_padding_by_offset", WINDOW + "Y[o,x] = W[o,c,dx] X[c,x+dx-1]\nexport Y",
     lambda a: dict(Y=conv1d(a["X"], a["W"], 1, 1)), **CONV1)
case("conv1d_valid", "axis x = valid\n" + WINDOW + "Y[o,x] = W[o,c,dx] X[c,x+dx]\nexport Y",
     lambda a: dict(Y=conv1d(a["X"], a["W"], 0, 0)), **CONV1)
case("conv1d_same", "axis x = same\n" + WINDOW + "Y[o,x] = W[o,c,dx] X[c,x+dx]\nexport Y",
     lambda a: dict(Y=conv1d(a["X"], a["W"], 1, 1)), **CONV1)
case("conv1d_stride_two", "axis x = valid\n" + WINDOW + """
F[o,x] = W[o,c,dx] X[c,x+dx]
Y[o,x/2] = F[o,x] even(x)
export Y
""", lambda a: dict(Y=conv1d(a["X"], a["W"], 0, 0, stride=2)), **CONV1)


def depthwise_dilated(a):
    x, w = a["X"], a["W"]
    xp = np.pad(x, ((0, 0), (0, 4)))
    return dict(Y=sum(w[:, k:k + 1] * xp[:, 2 * k:2 * k + 7] for k in range(3)))


case("depthwise_dilated_conv", """
X[c,n] = "X.npy"
W[c,k] = "W.npy"
Y[c,x] = W[c,dx] X[c,x+dx+dx]
export Y
""", depthwise_dilated, X=CONV1["X"], W=r.normal(size=(2, 3)))


def conv2d(x, w, pad, stride=1):
    xp = np.pad(x, ((0, 0), (pad, pad), (pad, pad)))
    k = w.shape[2]
    rows, cols = (xp.shape[1] - k) // stride + 1, (xp.shape[2] - k) // stride + 1
    return np.array([[[(w[o] * xp[:, i * stride:i * stride + k, j * stride:j * stride + k]).sum()
                       for j in range(cols)] for i in range(rows)] for o in range(w.shape[0])])


def pool(y, reduce):
    return np.array([[[reduce(y[o, 2 * i:2 * i + 2, 2 * j:2 * j + 2]) for j in range((y.shape[2] + 1) // 2)]
                      for i in range((y.shape[1] + 1) // 2)] for o in range(y.shape[0])])


def cnn(a):
    y = relu(conv2d(a["X"], a["W"], 1) + a["B"][:, None, None])
    return dict(Y=y, Mx=pool(y, np.max), Av=pool(y, np.mean))


case("conv2d_same_relu_max_and_avg_pool", """
axis x = same, y = same
X[c,h,w] = "X.npy"
W[o,c,dx,dy] = "W.npy"
B[o] = "B.npy"
Y[o,x,y] = relu(W[o,c,dx,dy] X[c,x+dx,y+dy] + B[o])
Mx[o,x/2,y/2] max= Y[o,x,y]
Av[o,x/2,y/2] avg= Y[o,x,y]
export Y, Mx, Av
""", cnn, X=r.normal(size=(2, 4, 4)), W=r.normal(size=(3, 2, 3, 3)), B=r.normal(size=3))
case("pooling_odd_extents", """
X[o,h,w] = "X.npy"
Mx[o,x/2,y/2] max= X[o,x,y]
Av[o,x/2,y/2] avg= X[o,x,y]
export Mx, Av
""", lambda a: dict(Mx=pool(a["X"], np.max), Av=pool(a["X"], np.mean)), X=r.normal(size=(2, 5, 3)))
case("conv2d_valid_stride_two", """
axis x = valid, y = valid
X[c,h,w] = "X.npy"
W[o,c,dx,dy] = "W.npy"
F[o,x,y] = W[o,c,dx,dy] X[c,x+dx,y+dy]
Y[o,x/2,y/2] = F[o,x,y] even(x) even(y)
export Y
""", lambda a: dict(Y=conv2d(a["X"], a["W"], 0, stride=2)), X=r.normal(size=(2, 6, 7)),
     W=r.normal(size=(2, 2, 3, 3)))
case("global_average_pool_classifier", """
F[c,h,w] = "F.npy"
Wc[k,c] = "Wc.npy"
G[c] avg= F[c,h,w]
P[k] = softmax(Wc[k,c] G[c])
export P
""", lambda a: dict(P=softmax(a["Wc"] @ a["F"].mean((1, 2)))), F=r.normal(size=(3, 4, 5)),
     Wc=r.normal(size=(4, 3)))

# ------------------------------------------------------------------------ kernel machines
r = rng("kernels")
KERNEL = dict(Xq=r.normal(size=(3, 2)), Xs=r.normal(size=(4, 2)), Al=r.normal(size=4),
              Kinv=r.normal(size=(4, 4)), Yt=r.normal(size=4))


def sq_dist(a, b):
    return ((a[:, None, :] - b[None, :, :]) ** 2).sum(-1)


def svm(a):
    k = np.exp(-0.5 * sq_dist(a["Xq"], a["Xs"]))
    return dict(K=k, F=k @ a["Al"] + 0.3, Y=(k @ a["Al"] + 0.3 > 0).astype(float))


case("svm_rbf_kernel", """
Xq[q,j] = "Xq.npy"
Xs[s,j] = "Xs.npy"
Al[s] = "Al.npy"
Gamma = 0.5
K[q,s] = exp(-Gamma * (Xq[q,j] - Xs[s,j])^2)
F[q] = K[q,s] Al[s] + 0.3
Y[q] = step(F[q])
export K, F, Y
""", svm, **{n: KERNEL[n] for n in ("Xq", "Xs", "Al")})
case("kernel_ridge_polynomial", """
Xq[q,j] = "Xq.npy"
Xs[s,j] = "Xs.npy"
Kinv[s,s'] = "Kinv.npy"
Yt[s] = "Yt.npy"
Kq[q,s] = pow(Xq[q,j] Xs[s,j] + 1, 2)
Yq[q] = Kq[q,s] Kinv[s,s'] Yt[s']
export Yq
""", lambda a: dict(Yq=(a["Xq"] @ a["Xs"].T + 1) ** 2 @ a["Kinv"] @ a["Yt"]),
     **{n: KERNEL[n] for n in ("Xq", "Xs", "Kinv", "Yt")})


def gp(a):
    kq = np.exp(-sq_dist(a["Xq"], a["Xs"]) / 2)
    return dict(Mean=kq @ a["Kinv"] @ a["Yt"], Vr=1 - np.einsum("qs,st,qt->q", kq, a["Kinv"], kq))


case("gaussian_process_posterior", """
Xq[q,j] = "Xq.npy"
Xs[s,j] = "Xs.npy"
Kinv[s,s'] = "Kinv.npy"
Yt[s] = "Yt.npy"
Kq[q,s] = exp(-(Xq[q,j] - Xs[s,j])^2 / 2)
Mean[q] = Kq[q,s] Kinv[s,s'] Yt[s']
Vr[q] = 1 - Kq[q,s] Kinv[s,s'] Kq[q,s']
export Mean, Vr
""", gp, **{n: KERNEL[n] for n in ("Xq", "Xs", "Kinv", "Yt")})


def centred(a):
    k = np.exp(-sq_dist(a["Xs"], a["Xs"]))
    return dict(Kc=k - k.mean(0, keepdims=True) - k.mean(1, keepdims=True) + k.mean())


case("kernel_centring", """
Xs[i,d] = "Xs.npy"
K[i,j] = exp(-(Xs[i,d] - Xs[j,d])^2)
Rm[i] avg= K[i,j]
Tm avg= K[i,j]
Kc[i,j] = K[i,j] - Rm[i] - Rm[j] + Tm
export Kc
""", centred, Xs=KERNEL["Xs"])

# ------------------------------------------------------------------------ graphical models
r = rng("graphical")


def naive_bayes(a):
    lp = np.log(a["Prior"]) + a["X"] @ np.log(a["Th"]).T + (1 - a["X"]) @ np.log(1 - a["Th"]).T
    return dict(LP=lp, Post=softmax(lp), Cls=(lp == lp.max(-1, keepdims=True)).astype(float))


case("naive_bayes_bernoulli", """
X[n,f] = "X.npy"
Prior[c] = "Prior.npy"
Th[c,f] = "Th.npy"
LP[n,c] = log(Prior[c]) + X[n,f] log(Th[c,f]) + (1 - X[n,f]) log(1 - Th[c,f])
Post[n,c.] = softmax(LP[n,c])
Best[n] max= LP[n,c]
Cls[n,c] = LP[n,c] == Best[n]
export LP, Post, Cls
""", naive_bayes, X=(r.uniform(size=(4, 3)) > 0.5).astype(float), Prior=np.array([0.3, 0.7]),
     Th=r.uniform(0.1, 0.9, size=(2, 3)))

STEPS, STATES = 5, 3
OBS = r.integers(0, 4, size=STEPS)
HMM = dict(Pi=np.array([0.5, 0.3, 0.2]), A=softmax(r.normal(size=(3, 3))), B=softmax(r.normal(size=(3, 4))))


def hmm(a):
    e = a["B"][:, OBS].T  # t, s
    alpha, delta = np.zeros((STEPS, STATES)), np.zeros((STEPS, STATES))
    alpha[0] = delta[0] = a["Pi"] * e[0]
    for t in range(1, STEPS):
        alpha[t] = alpha[t - 1] @ a["A"] * e[t]
        delta[t] = (delta[t - 1][:, None] * a["A"]).max(0) * e[t]
    return dict(Al=alpha, Lik=alpha[-1].sum(), Dl=delta, Best=delta[-1].max())


case("hmm_forward_and_viterbi_over_an_offset", """
Pi[s] = "Pi.npy"
A[s,s'] = "A.npy"
B[s,o] = "B.npy"
OH[t,o] = "OH.npy"
E[t,s] = B[s,o] OH[t,o]
Al[0,s] = Pi[s] E[0,s]
Al[t,s'] = Al[t-1,s] A[s,s'] E[t,s']
Lik = Al[4,s]
Dl[0,s] max= Pi[s] E[0,s]
Dl[t,s'] max= Dl[t-1,s] A[s,s'] E[t,s']
Best max= Dl[4,s]
export Al, Lik, Dl, Best
""", hmm, OH=np.eye(4)[OBS], **HMM)
case("hmm_forward_over_a_virtual_index_with_gathered_emissions", """
Pi[s] = "Pi.npy"
A[s,s'] = "A.npy"
B[s,o] = "B.npy"
Obs[t] = "Obs.npy"
E[t,s] = gather(B[s,o], Obs[t], axis=o)
Al[s',*t+1] = Al[s,*t] A[s,s'] E[t,s'] + Pi[s'] E[t,s'] (t == 0)
Lik = Al[s,*t]
export Al, Lik
""", lambda a: {"Al": hmm(a)["Al"][-1], "Lik": hmm(a)["Lik"]}, Obs=OBS.astype(float), **HMM)


def chain(a):
    joint = np.einsum("a,b,c,ab,bc->abc", a["U1"], a["U2"], a["U3"], a["F12"], a["F23"])
    return dict(M1=joint.sum((1, 2)) / joint.sum(), M2=joint.sum((0, 2)) / joint.sum(), Z=joint.sum())


case("belief_propagation_on_a_chain", """
U1[a] = "U1.npy"
U2[b] = "U2.npy"
U3[c] = "U3.npy"
F12[a,b] = "F12.npy"
F23[b,c] = "F23.npy"
Msg12[b] = U1[a] F12[a,b]
Msg32[b] = U3[c] F23[b,c]
Bel2[b] = U2[b] Msg12[b] Msg32[b]
Z = Bel2[b]
M2[b] = Bel2[b] / Z
Msg21[a] = F12[a,b] U2[b] Msg32[b]
M1[a] = U1[a] Msg21[a] / Z
export M1, M2, Z
""", chain, U1=r.uniform(0.1, 1, size=2), U2=r.uniform(0.1, 1, size=3), U3=r.uniform(0.1, 1, size=2),
     F12=r.uniform(0.1, 1, size=(2, 3)), F23=r.uniform(0.1, 1, size=(3, 2)))


def loop(a):
    joint = np.einsum("ab,bc,ca,a->abc", a["F"], a["G"], a["Hf"], a["U"])
    return dict(Mb=joint.sum((0, 2)) / joint.sum(), Mc=joint.sum((0, 1)) / joint.sum())


case("factor_graph_marginal_by_einsum", """
F[a,b] = "F.npy"
G[b,c] = "G.npy"
Hf[c,a] = "Hf.npy"
U[a] = "U.npy"
Un[b] = F[a,b] G[b,c] Hf[c,a] U[a]
Mb[b] = Un[b] / reduce(sum, b') Un[b']
Uc[c] = F[a,b] G[b,c] Hf[c,a] U[a]
Mc[c] = Uc[c] / (2 * reduce(sum, c') 0.5 Uc[c'])
export Mb, Mc
""", loop, F=r.uniform(0.1, 1, size=(2, 3)), G=r.uniform(0.1, 1, size=(3, 2)),
     Hf=r.uniform(0.1, 1, size=(2, 2)), U=r.uniform(0.1, 1, size=2))

N_PAGES = 4
case("pagerank_numeric_fixpoint", """
M[i,j] = "M.npy"
Rk[j] = 0.15 / 4 + 0.85 Rk[i] M[i,j]
export Rk
""", lambda a: dict(Rk=0.15 / N_PAGES * np.linalg.solve(np.eye(N_PAGES) - 0.85 * a["M"].T,
                                                        np.ones(N_PAGES))),
     M=softmax(2 * r.normal(size=(N_PAGES, N_PAGES))))

# ------------------------------------------------------------------------ losses and heads
r = rng("losses")
LABELS = r.integers(0, 4, size=5)


def classifier(a):
    z = a["X"] @ a["W"].T
    picked = log_softmax(z)[np.arange(5), LABELS]
    smooth = np.eye(4)[LABELS] * 0.9 + 0.1 / 4
    return dict(L1=-picked.mean(), L2=-picked.mean(), Pk=picked,
                Ls=-(smooth * log_softmax(z)).sum(-1).mean(), Ls2=-(smooth * log_softmax(z)).sum(-1).mean())


case("softmax_cross_entropy_with_label_ids", """
X[n,d] = "X.npy"
W[v,d] = "W.npy"
Lab[n] = "Lab.npy"
Z[n,v] = W[v,d] X[n,d]
LP[n,v.] = log_softmax(Z[n,v])
Pk[n] = gather(LP[n,v], Lab[n], axis=v)
L1 avg= -Pk[n]
L2 avg= cross_entropy(Z[n,v], Lab[n], axis=v)
Ls avg= cross_entropy(Z[n,v], Lab[n], axis=v, smoothing=0.1)
Tg[n,v] = 0.9 (v == Lab[n]) + 0.1 / 4
Ls2 avg= -(reduce(sum, v) Tg[n,v] LP[n,v])
export L1, L2, Pk, Ls, Ls2
""", classifier, X=r.normal(size=(5, 3)), W=r.normal(size=(4, 3)), Lab=LABELS.astype(float))


def logistic(a):
    p = sig(a["X"] @ a["W"] + 0.1)
    return dict(Pr=p, L=-(a["Y"] * np.log(p) + (1 - a["Y"]) * np.log(1 - p)).mean())


case("logistic_regression_binary_cross_entropy", """
X[n,d] = "X.npy"
W[d] = "W.npy"
Y[n] = "Y.npy"
Pr[n] = sig(X[n,d] W[d] + 0.1)
L avg= -(Y[n] log(Pr[n]) + (1 - Y[n]) log(1 - Pr[n]))
export Pr, L
""", logistic, X=r.normal(size=(5, 3)), W=r.normal(size=3), Y=(r.uniform(size=5) > 0.5).astype(float))


def margins(a):
    hinge = relu(1 - a["Y"] * (a["X"] @ a["W"]))
    d_ap, d_an = ((a["A"] - a["Pp"]) ** 2).sum(-1), ((a["A"] - a["Ng"]) ** 2).sum(-1)
    return dict(Hn=hinge, L=hinge.mean(), Tr=relu(d_ap - d_an + 0.5).mean())


case("hinge_and_triplet_losses", """
X[n,d] = "X.npy"
W[d] = "W.npy"
Y[n] = "Y.npy"
A[n,d] = "A.npy"
Pp[n,d] = "Pp.npy"
Ng[n,d] = "Ng.npy"
Hn[n] = max(0, 1 - Y[n] X[n,d] W[d])
L = reduce(avg, n) max(0, 1 - Y[n] X[n,d] W[d])
Dap[n] = (A[n,d] - Pp[n,d])^2
Dan[n] = (A[n,d] - Ng[n,d])^2
Tl[n] = relu(Dap[n] - Dan[n] + 0.5)
Tr avg= Tl[n]
export Hn, L, Tr
""", margins, X=r.normal(size=(5, 3)), W=r.normal(size=3), Y=np.sign(r.normal(size=5)),
     A=r.normal(size=(5, 3)), Pp=r.normal(size=(5, 3)), Ng=r.normal(size=(5, 3)))


def info_nce(a):
    return dict(L=-np.diag(log_softmax(a["Za"] @ a["Zb"].T / 0.5)).mean())


case("info_nce_diagonal", """
Za[n,d] = "Za.npy"
Zb[n,d] = "Zb.npy"
LS[n,m.] = log_softmax(Za[n,d] Zb[m,d] / 0.5)
L avg= -LS[n,n]
export L
""", info_nce, Za=r.normal(size=(4, 3)), Zb=r.normal(size=(4, 3)))


def stats(a):
    z, p = a["Z"], softmax(a["Z"])
    m = z.max(-1)
    return dict(LSE=m + np.log(np.exp(z - m[:, None]).sum(-1)), Ent=-(p * np.log(p)).sum(-1),
                KL=(p * (np.log(p) - np.log(a["Qd"]))).sum(-1), Arg=(z == m[:, None]).astype(float),
                Top=-np.sort(-z, -1)[:, :2])


case("logsumexp_entropy_kl_argmax_topk", """
Z[n,c] = "Z.npy"
Qd[n,c] = "Qd.npy"
Mx[n] max= Z[n,c]
LSE[n] = Mx[n] + log(reduce(sum, c) exp(Z[n,c] - Mx[n]))
P[n,c] = softmax(Z[n,c])
Ent[n] = -P[n,c] log(P[n,c])
KL[n] = P[n,c] (log(P[n,c]) - log(Qd[n,c]))
Arg[n,c] = Z[n,c] == Mx[n]
Top[n,c] = topk(Z[n,c], k=2)
export LSE, Ent, KL, Arg, Top
""", stats, Z=r.normal(size=(3, 5)), Qd=softmax(r.normal(size=(3, 5))))


def gmm(a):
    d2 = sq_dist(a["X"], a["Mu"])
    return dict(Rs=softmax(np.log(a["Wm"]) - 0.5 * d2), Dmin=d2.min(-1),
                Asg=(d2 == d2.min(-1, keepdims=True)).astype(float))


case("gmm_responsibilities_and_kmeans_assignment", """
X[n,d] = "X.npy"
Mu[c,d] = "Mu.npy"
Wm[c] = "Wm.npy"
D2[n,c] = (X[n,d] - Mu[c,d])^2
Rs[n,c.] = softmax(log(Wm[c]) - 0.5 D2[n,c])
Dmin[n] min= D2[n,c]
Asg[n,c] = D2[n,c] == Dmin[n]
export Rs, Dmin, Asg
""", gmm, X=r.normal(size=(5, 2)), Mu=r.normal(size=(3, 2)), Wm=softmax(r.normal(size=3)))

# ------------------------------------------------------------------------ embeddings, algebra
r = rng("algebra")
TOKENS = r.integers(0, 6, size=(2, 4))


def embed(a):
    e = a["Emb"][TOKENS]
    m = e.mean(1)
    n = m / np.linalg.norm(m, axis=-1, keepdims=True)
    return dict(E=e, Cos=n @ n.T)


case("embedding_lookup_mean_cosine", """
Emb[v,d] = "Emb.npy"
Tok[b,t] = "Tok.npy"
E[b,t,d] = gather(Emb[v,d], Tok[b,t], axis=v)
M[b,d] avg= E[b,t,d]
Nrm[b] = sqrt(M[b,d] M[b,d])
Cos[b,b'] = M[b,d] M[b',d] / (Nrm[b] Nrm[b'])
export E, Cos
""", embed, Emb=r.normal(size=(6, 3)), Tok=TOKENS.astype(float))


def algebra(a):
    return dict(C=np.einsum("bhij,bhjk->bhik", a["A4"], a["B4"]), O=np.outer(a["Uv"], a["Vv"]),
                Tr=np.trace(a["M"]), Dg=np.diag(a["M"]).copy(), T3=np.einsum("ijk->kij", a["A3"]),
                BT=np.einsum("bhij,bhkj->bhik", a["A4"], a["A4"]), DM=np.diag(a["Uv"]),
                Cs=np.cumsum(a["M"], -1))


case("batch_matmul_outer_trace_diagonal_transposes", """
axis c = 3
A4[b,h,i,j] = "A4.npy"
B4[b,h,j,k] = "B4.npy"
Uv[i] = "Uv.npy"
Vv[j] = "Vv.npy"
M[i,j] = "M.npy"
A3[i,j,k] = "A3.npy"
C[b,h,i,k] = A4[b,h,i,j] B4[b,h,j,k]
O[i,j] = Uv[i] Vv[j]
Tr = M[i,i]
Dg[i] = M[i,i]
T3[k,i,j] = A3[i,j,k]
BT[b,h,i,k] = A4[b,h,i,j] A4[b,h,k,j]
DM[i,i'] = Uv[i] (i == i') + 0 M[i,i']
Cs[i,c] = M[i,j] (j <= c)
export C, O, Tr, Dg, T3, BT, DM, Cs
""", algebra, A4=r.normal(size=(2, 2, 3, 4)), B4=r.normal(size=(2, 2, 4, 3)), Uv=r.normal(size=3),
     Vv=r.normal(size=4), M=r.normal(size=(3, 3)), A3=r.normal(size=(2, 3, 4)))


def positions(a):
    p, i = np.arange(4)[:, None], np.arange(3)[None, :]
    th = p * a["F"][None, :]
    x = a["X"]
    rope = np.stack([x[..., 0] * np.cos(th) - x[..., 1] * np.sin(th),
                     x[..., 0] * np.sin(th) + x[..., 1] * np.cos(th)], -1)
    return dict(PE=np.sin(p / 10.0 ** (i / 3)), Rope=rope)


case("sinusoidal_and_rotary_positions", """
X[p,i,r] = "X.npy"
F[i] = "F.npy"
PE[p,i] = sin(p / 10^(i / 3)) + 0 F[i] X[p,i,0]
Rope[p,i,0] = X[p,i,0] cos(p F[i]) - X[p,i,1] sin(p F[i])
Rope[p,i,1] = X[p,i,0] sin(p F[i]) + X[p,i,1] cos(p F[i])
export PE, Rope
""", positions, X=r.normal(size=(4, 3, 2)), F=r.uniform(0.1, 1, size=3))


def juxtaposed(a):
    m = a["X"].max()
    return dict(Sc=a["Z"] * m, Half=0.5 * a["X"].sum(), Nm=a["Z"] * m / a["X"].sum() + 1,
                Mix=a["Z"] * a["Z"] * a["X"].sum())


case("reduce_joined_by_juxtaposition", """
X[t] = "X.npy"
Z[n] = "Z.npy"
Sc[n] = Z[n] reduce(max, t) X[t]
Half = 0.5 reduce(sum, t) X[t]
Nm[n] = Z[n] reduce(max, t) X[t] / reduce(sum, t') X[t'] + 1
Mix[n] = Z[n] reduce(sum, t) X[t] Z[n]
export Sc, Half, Nm, Mix
""", juxtaposed, X=r.normal(size=4), Z=r.normal(size=3))


# ------------------------------------------------------------------------ slices, windows
r = rng("slices")


def fused_qkv(a):
    qkv = a["X"] @ a["W"].T
    q, k, v = qkv[:, 0:2], qkv[:, 2:4], qkv[:, 4:6]
    return dict(O=softmax(q @ k.T) @ v)


case("fused_qkv_projection_split_by_slices", """
X[p,d] = "X.npy"
W[e,d] = "W.npy"
QKV[p,e] = W[e,d] X[p,d]
Q[p,:] = QKV[p,0:2]
K[p,:] = QKV[p,2:4]
V[p,:] = QKV[p,4:6]
S[p,p'.] = softmax(Q[p,k] K[p',k])
O[p,k] = S[p,p'] V[p',k]
export O
""", fused_qkv, X=r.normal(size=(3, 4)), W=r.normal(size=(6, 4)))


def glu(a):
    h = a["X"] @ a["W"].T
    return dict(G=h[:, :3] * sig(h[:, 3:]), Sw=h[:, :3] * sig(h[:, :3]) * h[:, 3:])


case("glu_and_swiglu_halves_by_slices", """
X[b,d] = "X.npy"
W[e,d] = "W.npy"
H[b,e] = W[e,d] X[b,d]
G[b,:] = H[b,0:3] sig(H[b,3:6])
Sw[b,:] = H[b,0:3] sig(H[b,0:3]) H[b,3:6]
export G, Sw
""", glu, X=r.normal(size=(2, 4)), W=r.normal(size=(6, 4)))
MOVING = r.normal(size=(2, 7))
case("moving_average_and_max_over_valid_windows", """
axis x = valid, dx = 3
X[c,n] = "X.npy"
Av[c,x] avg= X[c,x+dx]
Mx[c,x] max= X[c,x+dx]
export Av, Mx
""", lambda a: dict(Av=np.stack([a["X"][:, i:i + 3].mean(1) for i in range(5)], 1),
                    Mx=np.stack([a["X"][:, i:i + 3].max(1) for i in range(5)], 1)), X=MOVING)


def embedding_reasoning(a):
    emb_r = np.einsum("xy,xi,yj->ij", a["R"], a["Emb"], a["Emb"])
    return dict(D=sig(np.einsum("ij,xi,yj->xy", emb_r, a["Emb"], a["Emb"]) / 0.5))


case("embedding_space_reasoning_at_a_temperature", """
R[x,y] = "R.npy"
Emb[x,i] = "Emb.npy"
EmbR[i,j] = R[x,y] Emb[x,i] Emb[y,j]
D[x,y] = sig(EmbR[i,j] Emb[x,i] Emb[y,j], 0.5)
export D
""", embedding_reasoning, R=(r.uniform(size=(4, 4)) > 0.6).astype(float), Emb=r.normal(size=(4, 3)) / 2)


# ------------------------------------------------------------------------ the tests
IDS = [c.name for c in CASES]


def written(tmp_path, program: Case):
    for name, value in program.inputs.items():
        np.save(tmp_path / f"{name}.npy", np.asarray(value, dtype=np.float32))
    path = tmp_path / "program.fuse"
    path.write_text(program.text, encoding="utf-8")
    return path


def expected(program: Case) -> dict:
    as_read = {n: np.asarray(v, np.float32).astype(np.float64) for n, v in program.inputs.items()}
    return program.reference(as_read)


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("program", CASES, ids=IDS)
def test_program_gives_the_hand_written_result(tmp_path, program, backend):
    outputs = fuse_lang.load(written(tmp_path, program), backend=backend, device="cpu").run()
    for name, value in expected(program).items():
        got = np.asarray(outputs[name], dtype=np.float64)
        assert got.shape == np.shape(value), name
        np.testing.assert_allclose(got, value, err_msg=f"{program.name}: {name} on {backend}", **TOL)


@pytest.mark.parametrize("program", CASES, ids=IDS)
def test_program_checks_clean_and_explain_gives_the_run_shapes(tmp_path, capsys, program):
    path = written(tmp_path, program)
    assert main(["check", "--format", "json", str(path)]) == 0
    diagnostics = json.loads(capsys.readouterr().out)["diagnostics"]
    assert [d for d in diagnostics if d["severity"] != "information"] == []
    assert main(["explain", "--format", "json", str(path)]) == 0
    shapes = {name: tuple(shape) for name, shape in json.loads(capsys.readouterr().out)["shapes"]}
    for name, value in expected(program).items():
        assert shapes[name] == np.shape(value), name


# ------------------------------------------------------------------------ inner-projection
HINGE = """Y[n] = "Y.npy"
F[n] = "F.npy"
L avg= relu(1 - Y[n] F[n])
export L
"""
MARGIN = dict(Y=np.array([1.0, -1.0, 1.0]), F=np.array([0.5, 0.5, 2.0]))


def check_json(path, capsys) -> list[dict]:
    main(["check", "--format", "json", str(path)])
    return json.loads(capsys.readouterr().out)["diagnostics"]


def apply(text: str, edits: list[dict]) -> str:
    for edit in sorted(edits, key=lambda e: e["start"], reverse=True):
        text = text[:edit["start"]] + edit["new_text"] + text[edit["end"]:]
    return text


def test_a_mean_loss_whose_index_a_call_sums_first_is_told_with_a_fix(tmp_path, capsys):
    # `L avg= relu(1 - Y[n] F[n])` is relu(1 - Σ_n Y F) (n is summed in relu's argument,
    # its innermost scope): `avg=` has nothing left, silently; the mean hinge was meant
    path = written(tmp_path, Case("hinge", HINGE, MARGIN, lambda a: {}))
    assert fuse_lang.load(path).run()["L"] == pytest.approx(0.0)  # relu(1 - 2)
    (diag,) = check_json(path, capsys)
    assert (diag["code"], diag["severity"]) == ("inner-projection", "warning")
    assert (diag["line"], diag["column"], diag["end_column"]) == (3, 3, 7)  # at `avg=`
    assert "`avg=` projects nothing here: `n` occurs only inside `relu(...)`" in diag["message"]
    assert "write `L = reduce(avg, n) relu(1 - Y[n] F[n])`" in diag["message"]
    (fix,) = diag["fixes"]
    fixed = apply(HINGE, fix["edits"])
    assert "L = reduce(avg, n) relu(1 - Y[n] F[n])\n" in fixed
    path.write_text(fixed, encoding="utf-8")
    assert check_json(path, capsys) == []
    hinge = np.maximum(0, 1 - MARGIN["Y"] * MARGIN["F"]).mean()
    assert fuse_lang.load(path).run()["L"] == pytest.approx(hinge)


@pytest.mark.parametrize("text", [
    "L max= relu(1 - Y[n] F[n])\nL max= F[0]\n",         # two max= equations combine by max
    "L avg= Y[n] relu(F[n])\n",                           # n projected by avg= itself
    "L = reduce(avg, n) relu(1 - Y[n] F[n])\n",           # explicit
    "L = relu(1 - Y[n] F[n])\n",                          # a sum inside is what `=` says
    "L[k] max= Y[n] F[k]\n",                              # pooling-like projection
    "D[0,s] max= Y[s] F[s]\nD[t,s] max= D[t-1,s] F[s]\n",  # a max-product start
    "L avg= relu(1 - Y[n] F[n]) + Y[m]\n",                # m is averaged at the right-hand side
])
def test_projections_that_are_meant_are_not_told(tmp_path, capsys, text):
    path = tmp_path / "p.fuse"
    path.write_text('Y[n] = "Y.npy"\nF[n] = "F.npy"\n' + text + "export " +
                    text.split("[")[0].split(" ")[0] + "\n", encoding="utf-8")
    for name, value in MARGIN.items():
        np.save(tmp_path / f"{name}.npy", value.astype(np.float32))
    assert [d["code"] for d in check_json(path, capsys) if d["severity"] != "information"] == []


# ------------------------------------------------------------------------ a virtual state read
def test_a_virtual_state_read_without_its_virtual_index_says_how_to_read_it(tmp_path, capsys):
    # `fuse explain` shows Al as (3,) (its virtual axis dropped), so `Al[s]` is what a
    # user writes to read the last value; it is written `Al[s,*t]`
    text = ("Pi[s] = const([0.5, 0.3, 0.2])\nU[t] = const([1, 1, 1, 1])\n"
            "Al[s,*t] = Pi[s]\nAl[s,*t+1] = 0.5 Al[s,*t] U[t]\nLik = Al[s]\nexport Lik\n")
    path = tmp_path / "forward.fuse"
    path.write_text(text, encoding="utf-8")
    (diag,) = [d for d in check_json(path, capsys) if d["severity"] == "error"]
    assert diag["code"] == "arity-mismatch" and (diag["line"], diag["column"]) == (5, 7)
    assert diag["message"] == (
        "`Al` has 2 axes (from its first definition), one of them the virtual `*t`, but is "
        "written here with 1: its last value is read with the virtual index, `Al[s,*t]`")
    path.write_text(text.replace("Lik = Al[s]", "Lik = Al[s,*t]"), encoding="utf-8")
    assert [d for d in check_json(path, capsys) if d["severity"] != "information"] == []
    assert fuse_lang.load(path).run()["Lik"] == pytest.approx(0.5 ** 4)


# ------------------------------------------------------------------------ multiplied-term
SCALED = """W[f,d] = "W.npy"
X[b,d] = "X.npy"
B[f] = "B.npy"
G[f] = "G.npy"
Y[b,f] = (W[f,d] X[b,d] + B[f]) G[f]
export Y
"""
LAYER = dict(W=np.arange(6.0).reshape(2, 3), X=np.array([[1.0, 2.0, 3.0]]), B=np.array([10.0, 20.0]),
             G=np.array([1.0, 2.0]))


def test_a_bias_in_parentheses_scaled_by_a_factor_is_told_it_is_counted_per_position(
        tmp_path, capsys):
    # (X W^T + B) * G as an ML user writes it: d is summed over the whole product
    # (a product is one term), so B is added |d| = 3 times, silently before
    path = written(tmp_path, Case("scaled", SCALED, LAYER, lambda a: {}))
    torch_like = (LAYER["X"] @ LAYER["W"].T + LAYER["B"]) * LAYER["G"]
    as_written = (LAYER["X"] @ LAYER["W"].T + 3 * LAYER["B"]) * LAYER["G"]
    np.testing.assert_allclose(fuse_lang.load(path).run()["Y"], as_written)
    (diag,) = check_json(path, capsys)
    assert (diag["code"], diag["severity"]) == ("multiplied-term", "warning")
    assert (diag["line"], diag["column"], diag["end_column"]) == (5, 27, 31)  # at `B[f]`
    assert diag["message"].startswith("`B[f]` does not mention `d`, but it is a term of a sum in "
                                      "parentheses that is a factor of a product summed over `d`")
    fixed = apply(SCALED, diag["fixes"][0]["edits"])
    assert "Y[b,f] = (reduce(sum, d) W[f,d] X[b,d] + B[f]) G[f]\n" in fixed
    path.write_text(fixed, encoding="utf-8")
    assert check_json(path, capsys) == []
    for backend in ("numpy", *[b for b in ("torch", "jax") if importlib.util.find_spec(b)]):
        np.testing.assert_allclose(fuse_lang.load(path, backend=backend).run()["Y"], torch_like,
                                   **TOL)


def test_an_hmm_start_added_inside_the_step_is_told(tmp_path, capsys):
    # the forward algorithm's start written into the step: Pi is counted |s| times
    path = tmp_path / "hmm.fuse"
    path.write_text('Pi[s] = "Pi.npy"\nA[s,s\'] = "A.npy"\nE[t,s] = "E.npy"\n'
                    "Al[s',*t+1] = (Al[s,*t] A[s,s'] + Pi[s'] (t == 0)) E[t,s']\n"
                    "export Al\n", encoding="utf-8")
    for name, shape in (("Pi", (3,)), ("A", (3, 3)), ("E", (4, 3))):
        np.save(tmp_path / f"{name}.npy", np.ones(shape, np.float32))
    (diag,) = [d for d in check_json(path, capsys) if d["severity"] == "warning"]
    assert diag["code"] == "multiplied-term" and "`Pi[s'] (t == 0)` does not mention `s`" \
        in diag["message"]


@pytest.mark.parametrize("rhs", [
    "(A[i,j] + B[i]) C[j]",          # B spread over j by C: B[i] times the sum of C, as meant
    "A[i,j] + B[i]",                 # a top-level sum: B[i] once
    "1 / (A[i,j] + B[i] + 1)",       # a divisor
    "(A[i,j] + B[i])^2",             # a power
    "2 * (reduce(sum, j) A[i,j] + B[i])",
    "C[j] (A[i,j] - 1e9 * (1 - M[i,j]))",  # every term has j
    "0.5 (A[i,j] + C[j]^2 - 1 - log(C[j]))",  # a VAE's KL: the - 1 is meant once per j
    "-0.5 (A[i,j]^2 + L2pi)",        # a Gaussian log-likelihood's constant, per j
])
def test_parenthesised_sums_that_count_each_term_as_meant_are_not_told(tmp_path, capsys, rhs):
    path = tmp_path / "p.fuse"
    path.write_text("A[i,j] = const([[1, 2, 3], [4, 5, 6]])\nB[i] = const([1, 2])\n"
                    "C[j] = const([1, 2, 3])\nM[i,j] = const([[1, 0, 1], [0, 1, 0]])\n"
                    "L2pi = const(1.8379)\n"
                    f"Y[i] = {rhs}\nexport Y\n", encoding="utf-8")
    assert [d["code"] for d in check_json(path, capsys)
            if d["severity"] in ("error", "warning")] == []


# ------------------------------------------------------------------------ written-out text
def test_explain_writes_a_reduce_before_another_factor_in_parentheses(tmp_path, capsys):
    # the written-out equation of a `fn` call said `reduce(max, t) X[t] W[p]`, whose
    # reduce takes W into its body: max_t(X W), not (max_t X) W (W < 0 tells them apart)
    path = tmp_path / "scaled.fuse"
    path.write_text("X[t] = const([1, -2, 3])\nW[p] = const([-1, 2])\n"
                    "fn scaled_max(x[t], w[p]) -> o[p] {\n  o[p] = (reduce(max, t) x[t]) w[p]\n}\n"
                    "Y[p] = scaled_max(X[t], W[p])\nexport Y\n", encoding="utf-8")
    assert main(["explain", str(path)]) == 0
    assert "o@scaled_max.1[p] = (reduce(max, t) X[t]) W[p]   (from fn scaled_max" \
        in capsys.readouterr().out
    assert fuse_lang.load(path).run()["Y"].tolist() == [-3, 6]
