"""The analysis: names, index roles, domains and extents, evaluation order, diagnostics."""
from .analysis import INPUT_KINDS, SOURCE_KINDS, Analysis, AxisInfo, TensorInfo, TensorKind
from .analyzer import Analyzer, analyze

__all__ = ["INPUT_KINDS", "SOURCE_KINDS", "Analysis", "Analyzer", "AxisInfo", "TensorInfo",
           "TensorKind", "analyze"]
