"""Fuse: tensor logic as a language — the engine.

Pure functions over program text that return plain data:

    analysis = fuse_lang.analyze(text, path)      # IR, symbols, extents, diagnostics
    plan = fuse_lang.plan_program(analysis)       # joins, projections, contraction order

Nothing here imports an editor protocol library or a tensor framework.
"""
from .check import Analysis, AxisInfo, TensorInfo, analyze
from .front.diagnostics import CODES, Diagnostic, Fix, Related, Severity, TextEdit
from .front.span import LineIndex, Span
from .front.syntax import ParseResult, decode, parse

__all__ = [
    "Analysis", "AxisInfo", "CODES", "CompiledProgram", "ExecutionConfig", "FuseError", "QueryAnswer", "RunResult",
    "compile", "Diagnostic", "Fix", "LineIndex", "ParseResult",
    "ProgramPlan", "Related", "Severity", "Span", "TensorInfo", "TextEdit", "analyze",
    "decode", "distributed", "parse", "plan_program",
]
__version__ = "0.1.0"

_ENGINE = frozenset({"CompiledProgram", "ExecutionConfig", "FuseError", "QueryAnswer", "RunResult", "compile"})
_PLAN = frozenset({"ProgramPlan", "plan_program"})


def __getattr__(name: str):
    # The engine (and numpy) and the planner load on first use: `fuse check`
    # starts without them.
    if name in _ENGINE:
        from .run import program

        return getattr(program, name)
    if name == "distributed":  # fuse_lang.distributed.initialize(): run.distributed
        from .run import distributed

        return distributed
    if name in _PLAN:
        from . import plan

        return getattr(plan, name)
    raise AttributeError(f"module 'fuse_lang' has no attribute {name!r}")
