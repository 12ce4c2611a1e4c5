"""Import a script of `experiments/` as a module, so a test can call its `main(argv)`."""

from __future__ import annotations

import importlib.util
from pathlib import Path
from types import ModuleType

EXPERIMENTS = Path(__file__).resolve().parent.parent / "experiments"


def load_experiment_script(name: str) -> ModuleType:
    """experiments/NAME.py, loaded fresh as the module NAME."""
    spec = importlib.util.spec_from_file_location(name, EXPERIMENTS / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module
