"""The conformance fixture of tests/conftest.py says what it compared, and with
FUSE_REQUIRE_BACKENDS=1 fails where a backend is missing.

Each test runs pytest on a tiny generated project whose conftest loads the real
tests/conftest.py with `importlib.util.find_spec` patched to hide torch or jax,
as if it were not installed, and reads the outcome, the JUnit XML properties
and the terminal summary.
"""
from __future__ import annotations

import importlib.util
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

pytest_plugins = ["pytester"]

ROOT = Path(__file__).resolve().parents[1]

CONFTEST = """\
import importlib.util
import sys

HIDDEN = {hidden!r}
_find_spec = importlib.util.find_spec


def _find_spec_hiding(name, package=None):
    return None if name.partition(".")[0] in HIDDEN else _find_spec(name, package)


importlib.util.find_spec = _find_spec_hiding
sys.path.insert(0, {root!r})  # this tree's fuse_lang
_spec = importlib.util.spec_from_file_location("fuse_conformance_conftest", {conftest!r})
_real = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_real)
all_backends_agree = _real.all_backends_agree
pytest_runtest_call = _real.pytest_runtest_call
pytest_terminal_summary = _real.pytest_terminal_summary
"""

# named as a conformance module of tests/conftest.py
ENGINE_TESTS = """\
import pytest
import fuse_lang

PROGRAM = "axis i = 3\\nY[i] = const([1, 2, 3])\\nZ[i] = 2 Y[i]\\nexport Z\\n"


def test_runs_a_program():
    assert fuse_lang.compile(PROGRAM).run()["Z"].tolist() == [2, 4, 6]


@pytest.mark.reference_only
def test_on_numpy_only():
    assert fuse_lang.compile(PROGRAM).run()["Z"].tolist() == [2, 4, 6]
"""

OTHER_TESTS = """\
def test_not_a_conformance_test():
    pass
"""


def run_project(pytester: pytest.Pytester, hidden: set[str]):
    """Run the generated project: its outcome, the properties per test, and the
    fixture's section of the terminal summary."""
    pytester.makeconftest(CONFTEST.format(hidden=sorted(hidden), root=str(ROOT),
                                          conftest=str(ROOT / "tests" / "conftest.py")))
    pytester.makeini("[pytest]\nmarkers =\n    reference_only: NumPy only\n")
    pytester.makepyfile(test_engine_runtime=ENGINE_TESTS, test_other=OTHER_TESTS)
    junit = pytester.path / "junit.xml"
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", f"--junitxml={junit}")
    properties = {}
    for case in ET.parse(junit).getroot().iter("testcase"):
        properties[case.get("name")] = {prop.get("name"): prop.get("value")
                                        for prop in case.iter("property")}
    summary = result.stdout.str().partition("backends compared with NumPy")[2]
    return result, properties, summary


def test_says_it_compared_nothing_where_no_backend_is_installed(pytester, monkeypatch):
    monkeypatch.delenv("FUSE_REQUIRE_BACKENDS", raising=False)
    result, properties, summary = run_project(pytester, {"torch", "jax"})
    result.assert_outcomes(passed=3)
    assert properties["test_runs_a_program"] == {
        "compared_backends": "none (torch, jax not installed)", "compared_programs": "0"}
    assert properties["test_on_numpy_only"]["compared_backends"] == "none (reference_only)"
    assert properties["test_not_a_conformance_test"] == {}
    assert ("test_engine_runtime.py: none (torch, jax not installed): 1 test, "
            "0 program runs compared") in summary
    assert "test_other.py" not in summary
    assert "not installed, so compared with nothing: torch, jax" in summary


@pytest.mark.skipif(importlib.util.find_spec("torch") is None, reason="torch is not installed")
def test_says_which_backends_it_compared(pytester, monkeypatch):
    monkeypatch.delenv("FUSE_REQUIRE_BACKENDS", raising=False)
    result, properties, summary = run_project(pytester, {"jax"})
    result.assert_outcomes(passed=3)
    assert properties["test_runs_a_program"] == {"compared_backends": "torch",
                                                 "compared_programs": "1"}
    assert "test_engine_runtime.py: torch: 1 test, 1 program runs compared" in summary
    assert "test_engine_runtime.py: none (reference_only): 1 test, 0 program runs" in summary
    assert "not installed, so compared with nothing: jax" in summary


def test_a_missing_backend_fails_where_required(pytester, monkeypatch):
    monkeypatch.setenv("FUSE_REQUIRE_BACKENDS", "1")
    result, properties, summary = run_project(pytester, {"jax"})
    # the conformance test fails; the reference-only and the other test do not
    result.assert_outcomes(passed=2, failed=1)
    result.stdout.fnmatch_lines(["FAILED test_engine_runtime.py::test_runs_a_program*"])
    result.stdout.fnmatch_lines(["FUSE_REQUIRE_BACKENDS=1, but not installed here: jax; this "
                                 "conformance test cannot compare NumPy's results with it*"])
    assert "test_engine_runtime.py: none (reference_only): 1 test" in summary
    assert "not installed, so compared with nothing" not in summary
