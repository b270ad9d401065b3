"""What a tensor is: `TensorKind`, the kind of each `TensorInfo` (check.analysis,
which gives it with TensorInfo), and the sets of kinds asked for often.

Its own module: check.symbols makes the kinds, and check.analysis imports
check.symbols (the import graph has no cycle, tests/test_import_graph.py).
"""
from __future__ import annotations

import sys
from enum import Enum

if sys.version_info >= (3, 11):
    from enum import StrEnum
else:  # Python 3.10: the same, a str whose text and format are its value
    class StrEnum(str, Enum):
        __str__ = str.__str__
        __format__ = str.__format__


class TensorKind(StrEnum):
    """What a tensor is (`TensorInfo.kind`).  Each member is a str equal to its
    text, the text that hovers, outlines and JSON show."""

    DENSE = "dense"
    BOOLEAN_RELATION = "Boolean relation"
    PARAM = "param"
    SOURCE = "source"
    RELATION_SOURCE = "relation source"


# the kinds read from a file (`source`)
SOURCE_KINDS = frozenset({TensorKind.SOURCE, TensorKind.RELATION_SOURCE})
# the kinds a run takes from outside (its inputs): the sources and the params
INPUT_KINDS = frozenset({TensorKind.SOURCE, TensorKind.RELATION_SOURCE, TensorKind.PARAM})
