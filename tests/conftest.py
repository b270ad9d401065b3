"""Cross-backend conformance for every engine test (issue 5).

In the modules listed in CONFORMANCE_MODULES, every program that a test runs
on the NumPy reference engine is run again, with the same inputs, on every
other backend installed here (torch eagerly, jax compiled by jax.jit, and
torch through torch.compile), and must agree with it within TOLERANCE:
the same outputs, the same query answers, the same error.  So each engine
test, written once against NumPy, is a conformance test for all backends.
A test that spies on the engine's internals is marked `reference_only`.
"""
from __future__ import annotations

import importlib.util

import numpy as np
import pytest

from fuse_lang.run.program import CompiledProgram, FuseError, RunResult
from fuse_lang.run.backends import get_backend

# float32 on every backend: relative and absolute tolerance of a comparison
TOLERANCE = dict(rtol=2e-4, atol=2e-5)

CONFORMANCE_MODULES = {"test_engine_constructs", "test_engine_runtime", "test_examples_run",
                       "test_query", "test_run_targets"}


# torch.compile takes seconds per program: every program of these modules runs
# through it too, the others' programs on eager torch and jitted jax only
TORCH_COMPILE_MODULES = {"test_examples_run", "test_query"}


def other_backends(module: str) -> list[tuple[str, bool]]:
    """(backend, compiled) pairs to compare with NumPy: what is installed here."""
    out = []
    if importlib.util.find_spec("torch") is not None:
        out.append(("torch", False))
        if module in TORCH_COMPILE_MODULES:
            out.append(("torch", True))
    if importlib.util.find_spec("jax") is not None:
        out.append(("jax", True))
    return out


def assert_same_result(reference: RunResult, other: RunResult, what: str) -> None:
    assert set(other.outputs) == set(reference.outputs), what
    for name, expected in reference.outputs.items():
        got = other.outputs[name]
        assert got.shape == expected.shape, f"{what}: {name} has shape {got.shape}"
        np.testing.assert_allclose(got.astype(np.float64), expected.astype(np.float64),
                                   **TOLERANCE, err_msg=f"{what}: {name}")
    assert len(other.queries) == len(reference.queries), what
    for mine, theirs in zip(other.queries, reference.queries):
        assert (mine.text, mine.free) == (theirs.text, theirs.free), what
        assert mine.tuples == theirs.tuples, f"{what}: {mine.text}"
        np.testing.assert_allclose(np.asarray(mine.value, np.float64),
                                   np.asarray(theirs.value, np.float64), **TOLERANCE,
                                   err_msg=f"{what}: {mine.text}")


@pytest.fixture(autouse=True)
def all_backends_agree(request, monkeypatch):
    module = request.module.__name__.rpartition(".")[2]
    others = other_backends(module) if module in CONFORMANCE_MODULES else []
    if not others or request.node.get_closest_marker("reference_only"):
        yield
        return
    original = CompiledProgram.execute

    def execute(self, inputs=None, *, write_sinks=True, native=False):
        backend = self.backend
        if getattr(backend, "name", None) != "numpy" or type(backend).__name__ != "NumpyBackend":
            return original(self, inputs, write_sinks=write_sinks, native=native)
        try:
            reference = original(self, inputs, write_sinks=write_sinks, native=native)
        except FuseError as err:
            for name, compiled in others:
                other = _twin(self, name, compiled)
                with pytest.raises(FuseError) as raised:  # a sink's error too
                    original(other, inputs, write_sinks=write_sinks)
                assert str(raised.value) == str(err), f"{name} (compiled={compiled})"
            raise
        for name, compiled in others:
            other = _twin(self, name, compiled)
            result = original(other, inputs, write_sinks=False)
            assert_same_result(reference, result, f"{name} (compiled={compiled})")
        return reference

    monkeypatch.setattr(CompiledProgram, "execute", execute)
    yield


def _twin(program: CompiledProgram, backend: str, compiled: bool):
    """The same checked program on another backend (one per program, so that its
    compiled graphs are reused as the program's own are)."""
    twins = program.__dict__.setdefault("_conformance_twins", {})
    if (backend, compiled) not in twins:
        B = get_backend(backend, "cpu", program.backend.precision)
        twins[backend, compiled] = CompiledProgram(
            program.analysis, B, program.base_dir, program.memory_limit,
            program.allow_outside_sinks, program.max_iterations, program.tolerance, compiled)
    return twins[backend, compiled]
