"""Cross-backend conformance for every engine test (issue 5).

In the modules listed in CONFORMANCE_MODULES, every program that a test runs
on the NumPy reference engine is run again, with the same inputs, on every
other backend installed here (torch eagerly, jax compiled by jax.jit, and
torch through torch.compile), and must agree with it within TOLERANCE:
the same outputs, the same query answers, the same error.  So each engine
test, written once against NumPy, is a conformance test for all backends.
A test that spies on the engine's internals is marked `reference_only`.

Each test says what it compared: the user properties `compared_backends`
(e.g. "torch, jax.jit", or "none (...)" with the reason) and
`compared_programs` (how many program runs were compared), also in a JUnit
XML report; the terminal summary lists them per module.  Where torch or jax
is not installed, the tests compare without it and the summary says so; with
FUSE_REQUIRE_BACKENDS=1 (CI) such a conformance test fails instead.

The other backends run on the CPU; FUSE_CONFORMANCE_DEVICE=cuda runs them on
the GPU instead (the device checks of docs/execution.md), compared with the
looser GPU_TOLERANCE: a GPU sums in another order, and jax's float32 matmuls
there use TF32, as hand-written jax does (docs/backends.md; about 1e-3 relative).
"""
from __future__ import annotations

import importlib.util
import os
from collections import Counter
from typing import NamedTuple

import numpy as np
import pytest
from hypothesis import HealthCheck, settings

from fuse_lang.run.backends import get_backend
from fuse_lang.run.program import CompiledProgram, FuseError, RunResult

# Property tests draw the same examples on every run (derandomize: a seed from each
# test's own code), read no database of earlier failures, and are never failed for a
# slow draw: a CI run passes or fails by the code, not by the examples it happened to
# draw, the files a previous run left or the machine's load.  FUSE_HYPOTHESIS_PROFILE=
# explore draws new examples each run, as Hypothesis does by default (to hunt bugs).
settings.register_profile("fuse", derandomize=True, database=None, deadline=None,
                          suppress_health_check=[HealthCheck.too_slow])
settings.register_profile("explore", deadline=None,
                          suppress_health_check=[HealthCheck.too_slow])
settings.load_profile(os.environ.get("FUSE_HYPOTHESIS_PROFILE", "fuse"))

# float32 on every backend: relative and absolute tolerance of a comparison
TOLERANCE = dict(rtol=2e-4, atol=2e-5)
GPU_TOLERANCE = dict(rtol=1e-2, atol=1e-3)  # as tests/test_backends.py's; docs/backends.md
DEVICE_ENV = "FUSE_CONFORMANCE_DEVICE"


def conformance_device() -> str:
    """Where the other backends run: the CPU unless FUSE_CONFORMANCE_DEVICE says."""
    return os.environ.get(DEVICE_ENV, "") or "cpu"


def tolerance() -> dict:
    return TOLERANCE if conformance_device() == "cpu" else GPU_TOLERANCE

# (test_query tests the editor's symbol lookup and runs no program: not listed; query
# answers are compared through test_engine_runtime and the examples)
CONFORMANCE_MODULES = {"test_engine_constructs", "test_engine_runtime", "test_examples_run",
                       "test_run_targets", "test_datalog", "test_datalog_values",
                       "test_sparse", "test_sparse_io", "test_sparse_comparisons",
                       "test_execution_config", "test_demand", "test_seed_spellings",
                       "test_layer_recurrences", "test_functions", "test_let_blocks",
                       "test_datalog_conformance", "test_structured_conformance",
                       "test_structured_audit", "test_core_semantics_audit"}


# torch.compile takes seconds per program: every program of these modules runs
# through it too, the others' programs on eager torch and jitted jax only
TORCH_COMPILE_MODULES = {"test_examples_run"}

OPTIONAL_BACKENDS = ("torch", "jax")
REQUIRE_ENV = "FUSE_REQUIRE_BACKENDS"
COMPARED = "compared_backends"  # user property: the backends a test compared with NumPy
PROGRAMS = "compared_programs"  # user property: how many program runs it compared


class Plan(NamedTuple):
    """What a test compares: (backend, compiled) pairs, and why it compares none."""
    others: list[tuple[str, bool]]
    missing: list[str]  # conformance backends not installed here
    reason: str  # why `others` is empty ("" where it is not)


def backends_required() -> bool:
    return os.environ.get(REQUIRE_ENV, "") not in ("", "0")


def missing_backends() -> list[str]:
    # looked up at every call, not at import: the tests of this fixture hide one
    return [name for name in OPTIONAL_BACKENDS if importlib.util.find_spec(name) is None]


def other_backends(module: str) -> list[tuple[str, bool]]:
    """(backend, compiled) pairs to compare with NumPy: what is installed here."""
    out = []
    missing = missing_backends()
    if "torch" not in missing:
        out.append(("torch", False))
        if module in TORCH_COMPILE_MODULES:
            out.append(("torch", True))
    if "jax" not in missing:
        out.append(("jax", True))
    return out


def conformance_plan(item: pytest.Item) -> Plan | None:
    """The comparison a test makes; None outside the conformance modules."""
    module = item.module.__name__.rpartition(".")[2] if hasattr(item, "module") else ""
    if module not in CONFORMANCE_MODULES:
        return None
    if item.get_closest_marker("reference_only"):
        return Plan([], [], "reference_only")
    others, missing = other_backends(module), missing_backends()
    reason = "" if others else f"{', '.join(missing)} not installed"
    return Plan(others, missing, reason)


def backend_label(name: str, compiled: bool) -> str:
    label = {("torch", False): "torch", ("torch", True): "torch.compile"}.get(
        (name, compiled), f"{name}.jit" if compiled else name)
    device = conformance_device()
    return label if device == "cpu" else f"{label} on {device}"


def _dense(value):
    """A sparse output or answer (scipy.sparse, docs/scale.md) compared as its array."""
    return value.toarray() if hasattr(value, "toarray") else value


def assert_same_result(reference: RunResult, other: RunResult, what: str) -> None:
    assert set(other.outputs) == set(reference.outputs), what
    for name, expected in reference.outputs.items():
        got, expected = _dense(other.outputs[name]), _dense(expected)
        assert got.shape == expected.shape, f"{what}: {name} has shape {got.shape}"
        np.testing.assert_allclose(got.astype(np.float64), expected.astype(np.float64),
                                   **tolerance(), err_msg=f"{what}: {name}")
    assert len(other.queries) == len(reference.queries), what
    for mine, theirs in zip(other.queries, reference.queries):
        assert (mine.text, mine.free) == (theirs.text, theirs.free), what
        assert mine.tuples == theirs.tuples, f"{what}: {mine.text}"
        np.testing.assert_allclose(np.asarray(_dense(mine.value), np.float64),
                                   np.asarray(_dense(theirs.value), np.float64), **tolerance(),
                                   err_msg=f"{what}: {mine.text}")


@pytest.fixture(autouse=True)
def all_backends_agree(request, monkeypatch):
    plan = conformance_plan(request.node)
    if plan is None:
        yield
        return
    labels = [backend_label(name, compiled) for name, compiled in plan.others]
    request.node.user_properties.append(
        (COMPARED, ", ".join(labels) if labels else f"none ({plan.reason})"))
    compared = _compare_on(plan.others, monkeypatch) if plan.others else Counter()
    yield
    request.node.user_properties.append((PROGRAMS, compared["programs"]))


def _compare_on(others: list[tuple[str, bool]], monkeypatch) -> Counter:
    """Make every NumPy run of a program run on `others` too; counts the runs compared."""
    compared = Counter()
    original = CompiledProgram.execute

    def execute(self, inputs=None, *, write_sinks=True, native=False, time_limit=None):
        backend = self.backend
        if getattr(backend, "name", None) != "numpy" or type(backend).__name__ != "NumpyBackend" \
                or time_limit is not None:  # a timed run: where it stops is not comparable
            return original(self, inputs, write_sinks=write_sinks, native=native,
                            time_limit=time_limit)
        compared["programs"] += 1
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
    return compared


def _twin(program: CompiledProgram, backend: str, compiled: bool):
    """The same checked program on another backend (one per program, so that its
    compiled graphs are reused as the program's own are)."""
    twins = program.__dict__.setdefault("_conformance_twins", {})
    if (backend, compiled) not in twins:
        other = get_backend(backend, conformance_device(), program.backend.precision)
        # its representation overrides and demand rewrite come along (answers under
        # the queries' texts)
        twins[backend, compiled] = program.variant(backend=other, compiled=compiled)
    return twins[backend, compiled]


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_call(item: pytest.Item) -> None:
    """With FUSE_REQUIRE_BACKENDS=1, a conformance test fails where a backend is missing."""
    plan = conformance_plan(item)
    if plan is not None and plan.missing and plan.reason != "reference_only" \
            and backends_required():
        pytest.fail(f"{REQUIRE_ENV}=1, but not installed here: {', '.join(plan.missing)}; "
                    "this conformance test cannot compare NumPy's results with "
                    "it (pip install -e \".[test]\")", pytrace=False)


def pytest_terminal_summary(terminalreporter) -> None:
    """Per module: the backends its tests compared with NumPy, how many tests and runs."""
    per_test: dict[str, dict] = {}
    for reports in terminalreporter.stats.values():
        for report in reports:
            properties = dict(getattr(report, "user_properties", ()))
            if COMPARED in properties:  # setup, call and teardown reports of one test
                per_test.setdefault(report.nodeid, {}).update(properties)
    if not per_test:
        return
    tests, programs = Counter(), Counter()
    for nodeid, properties in per_test.items():
        key = (nodeid.split("::")[0], properties[COMPARED])
        tests[key] += 1
        programs[key] += properties.get(PROGRAMS, 0)
    terminalreporter.write_sep("=", "backends compared with NumPy")
    for key in sorted(tests):
        module, backends = key
        count = tests[key]
        terminalreporter.write_line(f"{module}: {backends}: {count} test{'s' * (count != 1)}, "
                                    f"{programs[key]} program runs compared")
    missing = missing_backends()
    if missing and not backends_required():
        terminalreporter.write_line(f"not installed, so compared with nothing: "
                                    f"{', '.join(missing)} ({REQUIRE_ENV}=1 fails the tests "
                                    "instead)")


def training_example(name: str):
    """A script of examples/training (make_chars, make_digits) imported as a module."""
    import importlib
    import sys
    from pathlib import Path

    folder = str(Path(__file__).resolve().parent.parent / "examples" / "training")
    sys.path.insert(0, folder)
    try:
        return importlib.import_module(name)
    finally:
        sys.path.remove(folder)
