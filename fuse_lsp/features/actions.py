"""(filled in by the actions feature work)"""
from __future__ import annotations

from ..server import FuseServer


def register(server: FuseServer) -> None:
    pass
