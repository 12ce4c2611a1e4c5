"""The packages' lazy exports (`yahtzee_jax.lazy`): importing the rules, the solver's value
table, the agents' names or the evaluation's records imports no JAX; the lazily exported
names are the modules' own objects, also after their submodule was imported (the advisor's
`advise` is the function, not the module of the same name)."""

from __future__ import annotations

import subprocess
import sys

SCRIPT = """
import sys
import yahtzee_jax.game.rules, yahtzee_jax.solver.value_table, yahtzee_jax.solver.native_play
import yahtzee_jax.evaluation.game_records, yahtzee_jax.evaluation.reports
from yahtzee_jax.agents import AGENT_NAMES
print("light", "jax" in sys.modules, "flax" in sys.modules)
import yahtzee_jax.solver.advisor
from yahtzee_jax.solver import advise, ActionValues
from yahtzee_jax.game import step, State
from yahtzee_jax.game.engine import step as engine_step
from yahtzee_jax.agents import Agent
from yahtzee_jax.agents.agent import Agent as agent_class
print("names", callable(advise) and advise.__module__ == "yahtzee_jax.solver.advisor",
      step is engine_step, Agent is agent_class, ActionValues.__name__)
import yahtzee_jax.game
try:
    yahtzee_jax.game.no_such_name
except AttributeError as error:
    print("missing", error)
"""


def test_light_modules_import_no_jax_and_lazy_names_are_the_modules_own():
    """In a fresh process: the rules, the value table, the native play, the records, the
    reports and the agents' names load without JAX or flax; then each lazy name is its module's
    object, and an unknown name is an AttributeError naming the package."""
    done = subprocess.run(
        [sys.executable, "-c", SCRIPT], capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.splitlines() == [
        "light False False",
        "names True True True ActionValues",
        "missing module 'yahtzee_jax.game' has no attribute 'no_such_name'",
    ]


def exported_submodule_names() -> list[tuple[str, str]]:
    """(package, name) for each name a package exports that is also one of its submodules."""
    import importlib
    import pkgutil

    import yahtzee_jax

    found = []
    packages = [info.name for info in pkgutil.walk_packages(yahtzee_jax.__path__, "yahtzee_jax.")]
    for name in ["yahtzee_jax", *packages]:
        package = importlib.import_module(name)
        if hasattr(package, "__path__"):
            submodules = {info.name for info in pkgutil.iter_modules(package.__path__)}
            found += [(name, e) for e in getattr(package, "__all__", ()) if e in submodules]
    return found


def test_no_exported_name_is_hidden_by_its_submodule():
    """A package may export a name its submodule also has only if importing that submodule
    first, in a fresh process, still leaves the package's name its object: `envs.rollout`
    binds the function in `__init__` after importing the module. The advisor's lazily exported
    `advise` beside its module `solver/advise.py` failed this (`play --hint` imported the
    module first and then called the package's `advise`: a module); the module is `advisor`."""
    clashes = exported_submodule_names()
    assert ("yahtzee_jax.envs", "rollout") in clashes  # the check sees an eager one
    for package, name in clashes:
        script = (
            f"import types, {package}.{name}\n"
            f"from {package} import {name}\n"
            f"assert not isinstance({name}, types.ModuleType), {name}"
        )
        done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True)
        assert done.returncode == 0, f"{package}.{name}: {done.stderr[-500:]}"
