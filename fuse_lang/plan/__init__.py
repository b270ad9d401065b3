"""The planner (shapes only: joins, projections, contraction order, cost) and its renderings."""
from .planner import Contraction, EquationPlan, IndexPlan, ProgramPlan, plan_equation, plan_program

__all__ = ["Contraction", "EquationPlan", "IndexPlan", "ProgramPlan", "plan_equation", "plan_program"]
