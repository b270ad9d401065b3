"""(filled in by the editing feature work)"""
from __future__ import annotations

from ..server import FuseServer


def register(server: FuseServer) -> None:
    pass
