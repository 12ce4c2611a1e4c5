"""A training session imports what its end needs when it starts (`session.finish_modules`)."""

from __future__ import annotations

import ast
import inspect
import json
import subprocess
import sys
from importlib import import_module
from types import ModuleType

import pytest
from golden_cases import TINY

from yahtzee_jax.evaluation import reports, single_turn
from yahtzee_jax.runner import session
from yahtzee_jax.runner.configs import resolve

SINGLE_TURN_AGAINST_OPTIMUM = ["env.id=YahtzeeSingleTurn-v0", "train.final_compare_optimal=true"]


def _lazy_imports(*functions) -> set[str]:
    """The yahtzee_jax modules imported inside the bodies of `functions`."""
    found = set()
    for function in functions:
        for node in ast.walk(ast.parse(inspect.getsource(function).lstrip())):
            if isinstance(node, ast.ImportFrom) and node.module.startswith("yahtzee_jax"):
                # `from package import module` loads that module; `from module import name`
                # the module itself
                source = import_module(node.module)
                for alias in node.names:
                    imported = getattr(source, alias.name)
                    is_module = isinstance(imported, ModuleType)
                    found.add(imported.__name__ if is_module else node.module)
    return found


def test_finish_modules_cover_every_import_the_end_of_a_run_makes():
    """Every module the session's end imports inside a function (the learning curve, the
    final evaluation beside the optimal agent, a single turn against its optimum) is among
    those imported at the start, for a single-turn run that compares with the optimum; a
    whole-game run without the final evaluation imports the plots only."""
    config = resolve("quick", overrides=[*TINY, *SINGLE_TURN_AGAINST_OPTIMUM])
    assert config.train.final_compare_optimal
    end = _lazy_imports(
        session.plot_learning_curve,
        session.final_report,
        reports.reference_path,
        reports.optimal_reference,
        reports.evaluate,
        reports.write_report,
        single_turn.turn_optimum,
    )
    assert end <= set(session.finish_modules([config], final_eval=True))
    assert session.finish_modules([resolve("quick", overrides=TINY)], final_eval=False) == [
        "yahtzee_jax.evaluation.plots"
    ]


def test_finish_modules_are_imported_before_training_starts(tmp_path, monkeypatch):
    """`train_session` imports each finish module before the host loop runs (a run of hours
    then ends with the code it started with, whatever was edited meanwhile)."""
    imported, seen_by_training = [], []

    class Stop(Exception):
        pass

    def train_members(*args, **kwargs):
        seen_by_training.extend(imported)
        raise Stop

    monkeypatch.setattr(session, "import_module", imported.append)
    monkeypatch.setattr(session, "train_members", train_members)
    config = resolve("quick", overrides=TINY)
    with pytest.raises(Stop):
        session.train_session(
            [config],
            [tmp_path / "run"],
            [False],
            lambda configs: None,
            progress=False,
            final_eval=True,
            resume_hint="",
        )
    assert seen_by_training == session.finish_modules([config], final_eval=True)


# Trains in a fresh interpreter (modules another test imported would hide a late import) and
# prints the yahtzee_jax modules first imported after the host loop began.
LATE_IMPORTS = """
import json, sys
from yahtzee_jax.runner import session
from yahtzee_jax.runner.configs import resolve
from yahtzee_jax.runner.single_run import train

loaded = {}
def train_members(*args, **kwargs):
    loaded["at_start"] = set(sys.modules)
    return host_loop(*args, **kwargs)
host_loop, session.train_members = session.train_members, train_members
train(resolve("quick", overrides=json.loads(sys.argv[1])), sys.argv[2], progress=False)
late = sorted(set(sys.modules) - loaded["at_start"])
print(json.dumps([name for name in late if name.startswith("yahtzee_jax")]))
"""


# make test-slow: a run in a fresh interpreter, 30-90 s each; the list test above is the fast one
@pytest.mark.slow
@pytest.mark.parametrize(
    "task",
    [
        pytest.param(SINGLE_TURN_AGAINST_OPTIMUM, id="turn"),
        pytest.param([], id="game"),
    ],
)
def test_no_module_of_the_package_is_first_imported_once_training_runs(task, tmp_path):
    """A whole run in a fresh interpreter (periodic evaluations, the curve, the final
    evaluation and, for a single turn, its optimum) imports no yahtzee_jax module after its
    host loop begins: the modules imported inside those modules count too, as far down as
    they go, which the list read from the finish's source above does not see."""
    overrides = [*TINY, "train.final_eval_games=200", "train.eval_fraction=0.5", *task]
    argv = [sys.executable, "-c", LATE_IMPORTS, json.dumps(overrides), str(tmp_path / "run")]
    done = subprocess.run(argv, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-2000:]
    assert json.loads(done.stdout.strip().splitlines()[-1]) == []
