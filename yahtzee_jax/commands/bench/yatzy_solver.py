"""The Rust `yatzy-solver` package (PyPI, optional: `pip install -e '.[bench]'`) as a yardstick.

`bench evaluate` times its optimal-play simulation beside our optimal agent and `bench solve`
its solve beside ours. Its American variants are our rule variants (the same published optima):
"american" is our free Joker, "american+forced-joker" the official rules; its default
Scandinavian Yatzy is our `yatzy`. It plays no Yacht.
"""

from __future__ import annotations

import time
from pathlib import Path
from types import ModuleType
from typing import TYPE_CHECKING, Any

from yahtzee_jax.files import cached, written_checked

if TYPE_CHECKING:
    from yahtzee_jax.game.rules import Rules

# Our rule variant -> yatzy-solver's variant id.
VARIANTS = {
    "official": "american+forced-joker",
    "free-joker": "american",
    "no-joker": "american+no-joker",
    "plain": "american+no-bonus",
    "yatzy": "yatzy-scandinavian",
}
MISSING = "yatzy-solver is not installed (pip install -e '.[bench]'): no side-by-side run"


def no_variant(rules: Rules) -> str | None:
    """The note to print when yatzy-solver plays no variant of `rules`, else None."""
    if rules.name in VARIANTS:
        return None
    return f"yatzy-solver plays no {rules.name} game: no side-by-side run"


def load_module() -> ModuleType | None:
    """The `yatzy_solver` module, or None when it is not installed."""
    try:
        import yatzy_solver
    except ImportError:
        return None
    return yatzy_solver


def table_path(module: ModuleType, rules: Rules, cache_dir: Path) -> Path:
    """Where its value table (its own f32 file format) for `rules` is kept between runs."""
    return cache_dir / f"yatzy-solver-{module.SOLVER_VERSION}-{VARIANTS[rules.name]}.table"


def load_solver(module: ModuleType, rules: Rules, cache_dir: Path) -> tuple[Any, float, bool]:
    """Its solver for `rules` with the table loaded: (solver, seconds, whether it had to solve).

    The first run solves and writes the table file (its `build_table`), later runs load it, as
    our optimal agent loads its cached value table.
    """
    variant = module.Variant(VARIANTS[rules.name])
    path = table_path(module, rules, cache_dir)
    start = time.perf_counter()
    solved = []

    def build() -> Any:
        solved.append(True)
        with written_checked(path) as partial:
            module.Solver.build_table(variant, str(partial))
        return module.Solver.load(str(path), variant)

    def load(file: Path) -> Any:
        try:
            return module.Solver.load(str(file), variant)
        except Exception:  # whatever its reader raises on a damaged table: build it again
            return None

    solver = cached(path, load, build, "yatzy-solver table")
    return solver, time.perf_counter() - start, bool(solved)


def simulate(solver: Any, games: int, seed: int) -> dict[str, float]:
    """Time its optimal policy over `games` games (its simulator, all cores): games/s, mean."""
    start = time.perf_counter()
    result = solver.simulate(games, seed=seed)
    seconds = time.perf_counter() - start
    return {"seconds": seconds, "games_per_second": games / seconds, "mean": result["mean"]}
