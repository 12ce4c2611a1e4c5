"""Names a package exports but imports on first use (PEP 562), so that importing the package
does not import JAX for a command that never runs it (the solver's C kernel, `--help`)."""

from __future__ import annotations

import importlib
import sys
from collections.abc import Callable, Mapping
from typing import Any


def lazy_exports(package: str, modules: Mapping[str, str]) -> Callable[[str], Any]:
    """A module `__getattr__` for `package`: name -> `modules[name]`'s attribute, imported then."""

    def __getattr__(name: str) -> Any:
        if name in modules:
            module = importlib.import_module(modules[name])
            # Written into the package, with the names the same module gives: later lookups
            # find them there. (A name must not also be a submodule's: importing the submodule
            # would set the package's name to it; `tests/test_lazy_imports.py` checks.)
            package_names = vars(sys.modules[package])
            for other, source in modules.items():
                if source == modules[name]:
                    package_names[other] = getattr(module, other)
            return package_names[name]
        raise AttributeError(f"module {package!r} has no attribute {name!r}")

    return __getattr__
