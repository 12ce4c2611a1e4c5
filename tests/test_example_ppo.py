"""The purejaxrl-style example (examples/ppo_gymnax.py) on a tiny budget: one jitted train
function runs, every sampled action is legal, and its metrics and evaluation are sane."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import jax
import numpy as np

EXAMPLE = Path(__file__).resolve().parent.parent / "examples" / "ppo_gymnax.py"


def load_example():
    """The example as a module (examples/ is not a package)."""
    spec = importlib.util.spec_from_file_location("ppo_gymnax", EXAMPLE)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # flax's dataclasses look their module up by name
    spec.loader.exec_module(module)
    return module


def test_a_tiny_ppo_run_trains_on_the_gymnax_env():
    """Three updates of 16 envs x 39 steps: 48 whole games, each a fresh episode's 39 legal
    decisions (no illegal action sampled: the mask follows auto-resets), finite losses, returns
    of real games (a random game scores about 46, never 0), and the greedy evaluation plays
    whole games."""
    example = load_example()
    config = {**example.CONFIG, "NUM_ENVS": 16, "TOTAL_TIMESTEPS": 3 * 16 * 39, "HIDDEN": 32}
    out = jax.jit(example.make_train(config))(jax.random.key(0))
    metrics = jax.tree.map(np.asarray, out["metrics"])
    assert metrics["episodes"].tolist() == [16, 16, 16]
    assert metrics["illegal_actions"].sum() == 0
    assert np.isfinite(metrics["value_loss"]).all() and (metrics["entropy"] > 0).all()
    assert (metrics["mean_return"] > 5).all() and (metrics["mean_return"] < 400).all()
    # compiled whole: op by op, its vmapped reset compiled each of its operations alone
    evaluate = jax.jit(lambda params, key: example.evaluate(params, config, 8, key))
    scores = evaluate(out["runner_state"][0].params, jax.random.key(1))
    assert scores.shape == (8,) and (np.asarray(scores) > 0).all()


def test_a_budget_under_one_update_is_refused_in_one_line(monkeypatch, capsys):
    """`--timesteps 1000` (under one update's 256 x 39 steps) trained nothing and then failed
    with an IndexError printing the curve; now argparse's one-line error, exit 2."""
    example = load_example()
    monkeypatch.setattr(sys, "argv", ["ppo_gymnax.py", "--timesteps", "1000"])
    try:
        example.main()
    except SystemExit as stop:
        assert stop.code == 2
    else:
        raise AssertionError("the example trained on a budget under one update")
    assert "--timesteps must be at least one update's 9984" in capsys.readouterr().err
