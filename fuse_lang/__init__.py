"""Fuse: tensor logic as a language — the engine.

Run a program (docs/notebooks.md, "The Python API"):

    program = fuse_lang.load("attention.fuse")        # a file; its paths beside it
    program = fuse_lang.compile(text, base_dir=".")   # a program's text
    result = program.execute({"X": x})                # a RunResult
    result.outputs["Attn"]                            # a tensor as a NumPy array
    result.relation("Ancestor").to_pandas()           # a relation's tuples as values
    result.why("Ancestor", ("Alice", "Eve"))          # why a tuple holds
    fuse_lang.explain(program)                        # the plan a run executes
    fuse_lang.plot(result)                            # the result with its pictures

Check and plan without running (pure functions over text, plain data):

    analysis = fuse_lang.analyze(text, path)      # IR, symbols, extents, diagnostics
    plan = fuse_lang.plan_program(analysis)       # joins, projections, contraction order

In Jupyter: `%load_ext fuse_lang`, then `%%fuse` cells (docs/notebooks.md).

Public API: analyze, compile, explain, load, parse, plot, decode, plan_program; Analysis,
CompiledProgram, ExecutionConfig, RunResult, QueryAnswer, Relation, FuseError,
Diagnostic and the data classes they hold.  Nothing here imports an editor
protocol library, a tensor framework or IPython at import time.
"""
from .check import Analysis, AxisInfo, TensorInfo, analyze
from .front.diagnostics import CODES, Diagnostic, Fix, Related, Severity, TextEdit
from .front.span import LineIndex, Span
from .front.syntax import ParseResult, decode, parse

__all__ = [
    "Analysis", "AxisInfo", "CODES", "CompiledProgram", "ExecutionConfig", "FuseError", "QueryAnswer",
    "Relation", "RunResult", "compile", "load", "Diagnostic", "Fix", "LineIndex", "ParseResult",
    "ProgramPlan", "Related", "Severity", "Span", "TensorInfo", "TextEdit", "analyze",
    "decode", "distributed", "explain", "load_ipython_extension", "parse", "plot",
    "plan_program",
]
__version__ = "0.1.0"

_ENGINE = frozenset({"CompiledProgram", "ExecutionConfig", "FuseError", "QueryAnswer", "RunResult",
                     "compile", "load"})
_PLAN = frozenset({"ProgramPlan", "plan_program"})


def __getattr__(name: str):
    # The engine (and numpy) and the planner load on first use: `fuse check`
    # starts without them.
    if name in _ENGINE:
        from .ide import notebook_html  # noqa: F401 - registers the results' rich display
        from .run import program

        return getattr(program, name)
    if name == "Relation":
        from .run.relation import Relation

        return Relation
    if name == "distributed":  # fuse_lang.distributed.initialize(): run.distributed
        from .run import distributed

        return distributed
    if name in _PLAN:
        from . import plan

        return getattr(plan, name)
    raise AttributeError(f"module 'fuse_lang' has no attribute {name!r}")


def explain(program):  # noqa: ANN001, ANN201 - a CompiledProgram; engine types load lazily
    """The plan a run of `program` (a CompiledProgram, or a program's text, compiled
    as `compile(text)` compiles it) without inputs executes, as `fuse explain`
    shows it: an `Explained` that prints as text and displays as Markdown or HTML
    in a notebook (ide/explain.py)."""
    from .ide.explain import explain_program
    from .run.program import CompiledProgram, compile as compile_program

    if isinstance(program, str):
        program = compile_program(program)
    if not isinstance(program, CompiledProgram):
        raise TypeError("fuse_lang.explain takes a CompiledProgram (fuse_lang.compile(text) or "
                        f"fuse_lang.load(path)) or a program's text, not "
                        f"{type(program).__name__}")
    return explain_program(program)


def plot(result, fmt: str = "svg", slice_along: str | None = None):  # noqa: ANN001, ANN201
    """A copy of `result` (a RunResult) holding a picture of each output and query
    answer, as `fuse run --plot` draws them (docs/pictures.md): `fmt` "svg" or
    "png"; a 3-D+ tensor as slices along the index `slice_along`.  A notebook
    shows them inline with the result (`result.pictures`: (file name, bytes));
    FuseError when they cannot be drawn (no matplotlib)."""
    from .ide.notebook_html import with_pictures

    return with_pictures(result, fmt, slice_along)


def load_ipython_extension(ipython) -> None:  # noqa: ANN001 - IPython's shell, not imported here
    """`%load_ext fuse_lang`: registers the `%%fuse` cell magic (docs/notebooks.md).
    IPython is imported here, never at `import fuse_lang`."""
    from .notebook.magic import register

    register(ipython)


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
