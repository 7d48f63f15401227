"""Package faces that import their modules only when a name is first used.

A face lists ``name -> "module:attribute"`` (or ``"module"`` for a module itself) and sets
``__getattr__ = lazy_getattr(__name__, table)``: importing the package then loads none of
its modules, so a process loads only the modules it uses. This module imports nothing of
the package.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping
from typing import Any


def lazy_getattr(package: str, names: Mapping[str, str]) -> Callable[[str], Any]:
    """A module ``__getattr__`` for ``package`` that imports ``names``' modules on use."""

    def __getattr__(name: str) -> Any:
        if name not in names:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        module, _, attribute = names[name].partition(":")
        found = importlib.import_module(module)
        return getattr(found, attribute) if attribute else found

    return __getattr__
