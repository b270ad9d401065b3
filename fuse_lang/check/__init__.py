"""The analysis: names, index roles, domains and extents, evaluation order, diagnostics."""
from .checker import Analysis, Analyzer, AxisInfo, TensorInfo, analyze

__all__ = ["Analysis", "Analyzer", "AxisInfo", "TensorInfo", "analyze"]
