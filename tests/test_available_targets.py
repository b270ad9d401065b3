"""`available_targets()`: the (backend, device) pairs that can run here."""
from __future__ import annotations

import subprocess
import sys
import types

import pytest

from fuse_lang.run import backends


@pytest.fixture
def fresh():
    backends.available_targets.cache_clear()
    yield
    backends.available_targets.cache_clear()


def test_numpy_on_cpu_is_always_there(fresh):
    targets = backends.available_targets()
    assert targets[0] == ("numpy", "cpu")
    assert all(b in backends.BACKENDS for b, _ in targets)


def test_importing_fuse_lang_probes_nothing():
    code = ("import sys, fuse_lang, fuse_lang.run.backends, fuse_lsp.server;"
            "print('torch' in sys.modules or 'jax' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


def fake_torch(cuda: int) -> types.ModuleType:
    torch = types.ModuleType("torch")
    torch.cuda = types.SimpleNamespace(is_available=lambda: cuda > 0, device_count=lambda: cuda)
    torch.backends = types.SimpleNamespace(mps=types.SimpleNamespace(is_available=lambda: False))
    return torch


@pytest.mark.parametrize("cuda, devices", [(0, ["cpu"]), (2, ["cpu", "cuda:0", "cuda:1"])])
def test_a_registered_backend_lists_the_devices_its_framework_reports(fresh, monkeypatch,
                                                                       cuda, devices):
    monkeypatch.setitem(sys.modules, "torch", fake_torch(cuda))
    monkeypatch.setitem(sys.modules, "fake_torch_backend", types.ModuleType("fake_torch_backend"))
    monkeypatch.setitem(backends.BACKENDS, "torch", "fake_torch_backend:TorchBackend")
    targets = backends.available_targets()
    assert [d for b, d in targets if b == "torch"] == devices
    assert ("numpy", "cpu") in targets


def test_a_backend_whose_framework_is_missing_is_left_out(fresh, monkeypatch):
    monkeypatch.setitem(sys.modules, "jax", None)  # as if not installed
    monkeypatch.setitem(backends.BACKENDS, "jax", "fuse_lang.run.backends.jax_backend:JaxBackend")
    found = [b for b, _ in backends.available_targets()]
    assert "jax" not in found and found[0] == "numpy"


def test_a_probe_that_fails_is_left_out(fresh, monkeypatch):
    monkeypatch.delitem(backends.BACKENDS, "jax")
    broken = types.ModuleType("torch")  # no `cuda`: the probe raises
    monkeypatch.setitem(sys.modules, "torch", broken)
    monkeypatch.setitem(sys.modules, "fake_torch_backend", types.ModuleType("fake_torch_backend"))
    monkeypatch.setitem(backends.BACKENDS, "torch", "fake_torch_backend:TorchBackend")
    assert backends.available_targets() == (("numpy", "cpu"),)
