"""The planner (shapes only: joins, projections, contraction order, cost) and its renderings.
The contraction itself (einsum spec and path) is decided once, in `contraction`, for the
plan and for the run alike."""
from .planner import Contraction, EquationPlan, IndexPlan, ProgramPlan, plan_equation, plan_program

__all__ = ["Contraction", "EquationPlan", "IndexPlan", "ProgramPlan", "plan_equation",
           "plan_program"]
