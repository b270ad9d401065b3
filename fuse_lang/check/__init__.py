"""The analysis: names, index roles, domains and extents, evaluation order, diagnostics."""
from .analysis import Analysis, AxisInfo, TensorInfo
from .analyzer import Analyzer, analyze

__all__ = ["Analysis", "Analyzer", "AxisInfo", "TensorInfo", "analyze"]
