"""Regression against numbers recorded before the environment refactor (issue 27).

Each learner on each environment (tiny widths, a few updates, fixed seed) must end with the same
parameters, extra state and metrics, and each built-in agent must play the same games, as
recorded in `tests/golden/regression.json` by `python tests/golden_cases.py --record` on the code
before the move. Bit for bit on the ISA and JAX version that recorded them; elsewhere XLA's
reductions may round differently (AVX2 against AVX-512 moves the last bit of a gradient norm),
so other machines check the figures to a relative 1e-4 and skip only the bitwise part.
Games (integers) must match exactly everywhere.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

import golden_cases
import jax
import numpy as np
import pytest
from conftest import FAST_COMPILE_FLAG

GOLDEN = json.loads(golden_cases.GOLDEN_PATH.read_text())
SAME_MACHINE = GOLDEN["isa"] == golden_cases.isa() and GOLDEN["jax"] == jax.__version__
# A fast case per environment and learner family in `make test`; the whole matrix is `slow`.
FAST = {"a2c/game", "ppo/single-turn", "dqn/match-greedy3-gradient"}
# Cases whose code was replaced by a different computation of the same mathematics: checked to
# the tolerance only. A2C in the match environment is A2C's update (each head on the decisions
# that need it, values recomputed in the loss) where the former `a2c-2p` ran every head on every
# decision and kept the rollout's values: the same loss, rounded differently.
TOLERANCE_ONLY = {"a2c/match-greedy3-win"}


_FIGURES: dict[str, dict] = {}


def figures(request: pytest.FixtureRequest, kind: str, name: str) -> dict:
    """A case's figures as production compiles them: in this process, or, where the session
    compiles with `FAST_COMPILE_FLAG` (bitwise different), in one subprocess without it that
    computes every golden case this session selected (one JAX start for all of them)."""
    flags = os.environ.get("XLA_FLAGS", "")
    if FAST_COMPILE_FLAG not in flags:
        return golden_cases.case_figures(kind, name)
    if f"{kind}/{name}" not in _FIGURES:
        selected = [
            f"{_kind(item)}/{item.callspec.params['name']}"
            for item in request.session.items
            if item.module is request.module and hasattr(item, "callspec")
        ]
        env = {**os.environ, "XLA_FLAGS": flags.replace(FAST_COMPILE_FLAG, "").strip()}
        done = subprocess.run(
            [sys.executable, golden_cases.__file__, "--json", *selected],
            env=env,
            capture_output=True,
            text=True,
            check=True,
        )
        _FIGURES.update(json.loads(done.stdout.splitlines()[-1]))
    return _FIGURES[f"{kind}/{name}"]


def _kind(item: pytest.Item) -> str:
    """The golden table a test of this module reads ("learners" or "agents")."""
    return "learners" if "learner" in item.originalname else "agents"


def _check_learner(request: pytest.FixtureRequest, name: str) -> None:
    expected = GOLDEN["learners"][name]
    got = figures(request, "learners", name)
    assert got["failure"] == expected["failure"]
    # Every recorded metric is still logged (a learner may log more than the code it replaced:
    # A2C in the match environment logs policy/kl, which the former a2c-2p did not).
    assert set(expected["metrics"]) <= set(got["metrics"])
    for metric, values in expected["metrics"].items():
        np.testing.assert_allclose(got["metrics"][metric], values, rtol=1e-4, atol=1e-6)
    assert sorted(got["params_stats"]) == sorted(expected["params_stats"])
    for leaf, stats in expected["params_stats"].items():
        np.testing.assert_allclose(got["params_stats"][leaf], stats, rtol=1e-4, atol=1e-6)
    if name in TOLERANCE_ONLY:
        return
    if not SAME_MACHINE:
        pytest.skip(f"bitwise part recorded on {GOLDEN['isa']}, jax {GOLDEN['jax']}")
    for part in ("params_sha256", "extra_sha256", "metrics_sha256"):
        assert got[part] == expected[part], f"{name}: {part} changed"


@pytest.mark.parametrize(
    "name",
    [
        name if name in FAST else pytest.param(name, marks=pytest.mark.slow)
        for name in golden_cases.LEARNER_CASES
    ],
)
def test_learner_on_environment_matches_the_recorded_run(
    request: pytest.FixtureRequest, name: str
) -> None:
    """A few updates of a learner on an environment give the recorded parameters and metrics."""
    _check_learner(request, name)


@pytest.mark.parametrize(
    "name",
    [
        name if name != "optimal" else pytest.param(name, marks=pytest.mark.slow)
        for name in golden_cases.AGENTS
    ],
)
def test_builtin_agent_plays_the_recorded_games(request: pytest.FixtureRequest, name: str) -> None:
    """A built-in agent's games for a fixed seed are the recorded ones, bit for bit."""
    expected = GOLDEN["agents"][name]
    got = figures(request, "agents", name)
    assert got["totals"] == expected["totals"]
    assert got["records_sha256"] == expected["records_sha256"]
