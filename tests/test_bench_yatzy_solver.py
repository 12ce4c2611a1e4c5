"""The yatzy-solver side of `bench evaluate` and `bench solve`.

A stand-in module checks the glue (its table built once and then loaded, the games/s ratio, the
one-line note when the package is missing) without solving anything; the real package's
variants must exist, and the slow tests run both commands end to end. The package is in the dev
extra: without it these tests fail, as `test_yatzy_cross_check`'s do, never skip.
"""

from __future__ import annotations

import argparse
import json
import types
from typing import ClassVar

import pytest

from yahtzee_jax.commands.bench import evaluate_speed as bench_evaluate
from yahtzee_jax.commands.bench import yatzy_solver
from yahtzee_jax.commands.cli import main
from yahtzee_jax.game.rules import RULE_VARIANTS, get_rules
from yahtzee_jax.solver.value_table import solver_workers


class FakeSolver:
    """Records what the benchmark asks of yatzy-solver's `Solver`."""

    built: ClassVar[list[str]] = []

    @classmethod
    def build_table(cls, variant: str, path: str) -> None:
        cls.built.append(variant)
        with open(path, "w") as file:
            file.write("table")

    @classmethod
    def load(cls, path: str, variant: str) -> FakeSolver:
        return cls()

    def simulate(self, games: int, seed: int = 0) -> dict:
        return {"mean": 254.5}


def fake_module() -> types.ModuleType:
    """A stand-in for `yatzy_solver`: Variant is the identity, Solver the fake above."""
    FakeSolver.built = []
    return types.SimpleNamespace(SOLVER_VERSION="0.0", Variant=str, Solver=FakeSolver)


def installed() -> types.ModuleType:
    """yatzy-solver's module; a loud failure where the install lacks it: it is in the dev
    extra, so a missing package is a broken install, not a skip (as `test_yatzy_cross_check`)."""
    module = yatzy_solver.load_module()
    if module is None:
        pytest.fail("yatzy-solver is not installed: pip install -e '.[dev]' (it is in the extra)")
    return module


def test_every_rule_variant_has_its_yatzy_solver_variant():
    """Each of our variants but the Yacht ones maps to one of its built-in ids (when it is
    installed); a Yacht game gets the one-line note instead."""
    assert set(yatzy_solver.VARIANTS) == set(RULE_VARIANTS) - {"yacht", "yacht-clubhouse"}
    assert "no yacht game" in yatzy_solver.no_variant(get_rules("yacht"))
    assert yatzy_solver.no_variant(get_rules("yatzy")) is None
    assert set(yatzy_solver.VARIANTS.values()) <= set(installed().builtin_variants())


def test_its_table_is_built_once_then_loaded(tmp_path):
    """The first call solves and writes the table file, the second only loads it."""
    module = fake_module()
    rules = get_rules("free-joker")
    first = yatzy_solver.load_solver(module, rules, tmp_path)
    second = yatzy_solver.load_solver(module, rules, tmp_path)
    assert (first[2], second[2]) == (True, False)
    assert FakeSolver.built == ["american"]
    assert yatzy_solver.table_path(module, rules, tmp_path).read_text() == "table"


def test_bench_evaluate_ratio_and_missing_package(tmp_path, monkeypatch, capsys):
    """With the package: our games/s over its; without it: None and the one-line note; and
    nothing to compare when `optimal` was not timed."""
    monkeypatch.setenv("YAHTZEE_JAX_CACHE", str(tmp_path))
    monkeypatch.setattr(yatzy_solver, "simulate", lambda *_: {"seconds": 2.0,
                        "games_per_second": 500.0, "mean": 254.5})  # fmt: skip
    args = argparse.Namespace(games=1000, seed=0, repeats=2)
    results = [{"agent": "optimal", "games_per_second": 1500.0}]
    monkeypatch.setattr(yatzy_solver, "load_module", fake_module)
    row = bench_evaluate._yatzy_solver_row(args, get_rules("official"), results)
    assert row["optimal_over_yatzy_solver"] == pytest.approx(3.0)
    assert row["variant"] == "american+forced-joker"
    assert bench_evaluate._yatzy_solver_row(args, get_rules("official"), []) is None
    monkeypatch.setattr(yatzy_solver, "load_module", lambda: None)
    assert bench_evaluate._yatzy_solver_row(args, get_rules("official"), results) is None
    assert yatzy_solver.MISSING in capsys.readouterr().out


@pytest.mark.slow
def test_bench_evaluate_beside_yatzy_solver(tmp_path, monkeypatch):
    """Our optimal agent and its simulation, 512 free-joker games each, in one run."""
    installed()
    monkeypatch.setenv("YAHTZEE_JAX_CACHE", str(tmp_path))
    argv = ["bench", "evaluate", "--agents", "optimal", "--games", "512", "--rules", "free-joker"]
    assert main([*argv, "--json", str(tmp_path / "out.json")]) == 0
    result = json.loads((tmp_path / "out.json").read_text())
    reference = result["yatzy_solver"]
    assert reference["variant"] == "american" and reference["games_per_second"] > 0
    assert abs(reference["mean"] - 254.59) < 10
    ours = result["agents"][0]["games_per_second"]
    assert reference["optimal_over_yatzy_solver"] == pytest.approx(
        ours / reference["games_per_second"]
    )


@pytest.mark.slow
@pytest.mark.parametrize("workers", [None, 1])
def test_bench_solve_beside_yatzy_solver(tmp_path, workers):
    """Both solves reach the official optimum (its table is f32) and report their memory, ours
    both in one process and with a process per CPU (the default), or in the one asked for."""
    installed()
    options = [] if workers is None else ["--workers", str(workers)]
    assert main(["bench", "solve", *options, "--json", str(tmp_path / "out.json")]) == 0
    result = json.loads((tmp_path / "out.json").read_text())
    settings = [(1, "native"), (1, "xla")]
    if workers is None and solver_workers() > 1:
        settings.append((solver_workers(), "numpy"))
    assert [(row["workers"], row["engine"]) for row in result["ours"]] == settings
    assert [(ratios["workers"], ratios["engine"]) for ratios in result["ratios"]] == settings
    assert result["ours"][0]["workers_mib"] == 0  # one process forks no workers
    assert result["yatzy_solver"]["optimum"] == pytest.approx(254.5877287345, abs=1e-4)
    for row in [*result["ours"], result["yatzy_solver"]]:
        assert row["peak_mib"] >= row["tables_mib"] >= row["started_mib"] > 0
        assert row["workers_mib"] >= 0 and row["induction_mib"] > 0
    for row in result["ours"]:
        assert row["optimum"] == pytest.approx(254.5877287345, abs=1e-9)
    for ratios in result["ratios"]:
        assert set(ratios) == {"workers", "engine", "time", "dp_memory", "table_file", "peak_rss"}
