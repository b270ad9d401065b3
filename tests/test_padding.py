"""Padding of windows `x+dx` (issue 34, item 6; docs/language.md "Windows and
padding"): by default a window reads zeros past the end of its axis; `axis x =
valid` keeps every window inside (x's extent is the axis' less the window's
reach, PyTorch's padding='valid'); `axis x = same` centres every window (zeros
on both sides, PyTorch's padding='same', the extra zero of an even window on the
right), as an offset `x+dx-1` does for a window of 3.  Compared with NumPy and
with torch's conv1d where torch is installed."""
from __future__ import annotations

import numpy as np
import pytest

import fuse_lang
from fuse_lang import analyze

CONV = """\
X[n,x,i] = "x.npy"
K[o,dx,i] = "k.npy"
{axis}H[n,x,o] = K[o,dx,i] X[n,{window},i]
export H
"""
RNG = np.random.default_rng(3)
X = RNG.normal(size=(2, 11, 3)).astype(np.float32)
K = RNG.normal(size=(4, 3, 3)).astype(np.float32)  # out 4, taps 3, in 3


def run(tmp_path, text, backend="numpy", kernel=K):
    np.save(tmp_path / "x.npy", X)
    np.save(tmp_path / "k.npy", kernel)
    program = fuse_lang.compile(text, backend=backend, device="cpu", base_dir=tmp_path)
    return np.asarray(program.run()["H"])


def windows(padded: np.ndarray, count: int) -> np.ndarray:
    """The cross-correlation of `padded` with K at `count` positions (H[n,x,o])."""
    return np.stack([np.einsum("odi,ndi->no", K, padded[:, x:x + 3, :]) for x in range(count)],
                    axis=1)


def test_valid_windows_stay_inside_the_axis(tmp_path):
    text = CONV.format(axis="axis x = valid\n", window="x+dx")
    got = run(tmp_path, text)
    assert got.shape == (2, 11 - 3 + 1, 4)
    np.testing.assert_allclose(got, windows(X, 9), rtol=1e-5, atol=1e-5)


def test_valid_extent_is_known_at_check(tmp_path):
    np.save(tmp_path / "x.npy", X)
    np.save(tmp_path / "k.npy", K)
    a = analyze(CONV.format(axis="axis x = valid\n", window="x+dx"), str(tmp_path / "p.fuse"))
    assert [d.code for d in a.diagnostics] == []
    assert a.tensors["H"].shape == (2, 9, 4)


def test_an_offset_centres_the_window_same_padding(tmp_path):
    got = run(tmp_path, CONV.format(axis="", window="x+dx-1"))
    padded = np.pad(X, ((0, 0), (1, 1), (0, 0)))
    np.testing.assert_allclose(got, windows(padded, 11), rtol=1e-5, atol=1e-5)


def test_the_default_reads_zeros_past_the_end(tmp_path):
    got = run(tmp_path, CONV.format(axis="", window="x+dx"))
    padded = np.pad(X, ((0, 0), (0, 2), (0, 0)))
    np.testing.assert_allclose(got, windows(padded, 11), rtol=1e-5, atol=1e-5)


def test_same_centres_the_window(tmp_path):
    got = run(tmp_path, CONV.format(axis="axis x = same\n", window="x+dx"))
    padded = np.pad(X, ((0, 0), (1, 1), (0, 0)))
    np.testing.assert_allclose(got, windows(padded, 11), rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("padding,window,axis,taps", [
    ("valid", "x+dx", "axis x = valid\n", 3), ("same", "x+dx-1", "", 3),
    ("same", "x+dx", "axis x = same\n", 3), ("same", "x+dx", "axis x = same\n", 4),
    ("valid", "x+dx", "axis x = valid\n", 4)])
@pytest.mark.parametrize("backend", ["numpy", "torch", "jax"])
def test_as_torch_conv1d(tmp_path, padding, window, axis, taps, backend):
    torch = pytest.importorskip("torch")
    if backend == "jax":
        pytest.importorskip("jax")
    kernel = np.random.default_rng(taps).normal(size=(4, taps, 3)).astype(np.float32)
    got = run(tmp_path, CONV.format(axis=axis, window=window), backend, kernel)
    # torch: input (N, C_in, L), weight (C_out, C_in, k); Fuse's K is [o, dx, i]
    want = torch.nn.functional.conv1d(torch.from_numpy(X).permute(0, 2, 1),
                                      torch.from_numpy(kernel).permute(0, 2, 1), padding=padding)
    np.testing.assert_allclose(got, want.permute(0, 2, 1).numpy(), rtol=1e-4, atol=1e-4)


def test_an_unknown_padding_word_is_refused():
    (diag,) = analyze("axis x = full").diagnostics
    assert diag.code == "invalid-statement"
    assert "`valid`" in diag.message and "`same`" in diag.message


def test_a_window_wider_than_its_axis_is_an_error(tmp_path):
    np.save(tmp_path / "x.npy", X[:, :2])
    np.save(tmp_path / "k.npy", K)
    a = analyze(CONV.format(axis="axis x = valid\n", window="x+dx"), str(tmp_path / "p.fuse"))
    assert [d.code for d in a.diagnostics] == ["extent-conflict"]
    assert "leaves no position" in a.diagnostics[0].message
