"""The project's packaging: a regular (non-editable) install holds every module."""
from __future__ import annotations

from pathlib import Path

import tomllib
from setuptools import find_packages

ROOT = Path(__file__).resolve().parent.parent


def test_every_package_of_the_engine_and_server_is_installed() -> None:
    config = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    find = config["tool"]["setuptools"]["packages"]["find"]
    installed = set(find_packages(str(ROOT), include=find["include"]))
    on_disk = {str(init.parent.relative_to(ROOT)).replace("/", ".")
               for top in ("fuse_lang", "fuse_lsp") for init in (ROOT / top).rglob("__init__.py")}
    assert {"fuse_lang.run.backends", "fuse_lsp.features"} <= on_disk
    assert installed == on_disk
