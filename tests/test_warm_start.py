"""Warm starts (`algo.init_from`): how each learner starts from a trained run, and the
one-line errors of a missing or mismatched source."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from yahtzee_jax.algorithms.algorithm import init_train_state, make_context
from yahtzee_jax.errors import ConfigError
from yahtzee_jax.networks import VALUE_OUTPUT
from yahtzee_jax.runner.checkpointing import RunCheckpoints
from yahtzee_jax.runner.configs import resolve
from yahtzee_jax.runner.warm_start import start_state

TINY_PLANNER = [
    "network.hidden_size=16",
    "network.trunk_layers=1",
    "train.games_per_update=4",
    "train.total_games=400",
    "algo.name=td-planner",
]


def test_missing_warm_start_says_how_to_make_it(tmp_path):
    """a2c-win starts from a run directory that git does not keep, named after the preset that
    makes it: on a fresh machine the error names that command and the way to start from
    scratch, in one line; a missing run of any other name is reported without a command."""
    missing = tmp_path / "paper-a2c-shaping"
    config = resolve("a2c-win", None, ["network.hidden_size=16", f"algo.init_from={missing}"])
    with pytest.raises(ConfigError, match="does not exist") as error:
        start_state(make_context(config))
    message = str(error.value)
    assert "\n" not in message
    assert f"--preset paper-a2c-shaping --out {missing}" in message
    assert "algo.init_from=''" in message
    other = resolve("a2c-win", None, [f"algo.init_from={tmp_path / 'no-such-run'}"])
    with pytest.raises(ConfigError, match="does not exist") as error:
        start_state(make_context(other))
    assert "--preset" not in str(error.value)


def test_warm_start_widens_a_solitaire_network_to_the_match_inputs(tmp_path):
    """a2c-win from a solitaire A2C run (the source's weights moved by 0.5, so no fresh
    network equals them): the first layer keeps the source's rows and gains zero rows for the
    opponents' inputs (the same policy at the start), the value output is zero (a critic on
    the win's scale) and every other array is the source's."""
    source_config = resolve("paper-a2c-shaping", None, ["network.hidden_size=16"])
    source = init_train_state(make_context(source_config))
    source = source.replace(params=jax.tree.map(lambda leaf: leaf + 0.5, source.params))
    RunCheckpoints(tmp_path, 1).save(3, source, source_config, None)
    config = resolve("a2c-win", None, ["network.hidden_size=16", f"algo.init_from={tmp_path}"])
    context = make_context(config)
    params = start_state(context).params

    first, old = (
        params["Block_0"]["Dense_0"]["kernel"],
        source.params["Block_0"]["Dense_0"]["kernel"],
    )
    assert first.shape == (context.env.feature_size(), 16) and first.shape[0] > old.shape[0]
    np.testing.assert_array_equal(first[: old.shape[0]], old)
    assert not np.any(first[old.shape[0] :])
    assert all(not np.any(leaf) for leaf in jax.tree.leaves(params[VALUE_OUTPUT]))
    rest = {key: value for key, value in params.items() if key != VALUE_OUTPUT}
    rest["Block_0"] = {**rest["Block_0"], "Dense_0": {"bias": params["Block_0"]["Dense_0"]["bias"]}}
    old_rest = {key: value for key, value in source.params.items() if key != VALUE_OUTPUT}
    old_block = source.params["Block_0"]
    old_rest["Block_0"] = {**old_block, "Dense_0": {"bias": old_block["Dense_0"]["bias"]}}
    jax.tree.map(np.testing.assert_array_equal, rest, old_rest)


def test_warm_start_on_the_same_task_keeps_the_critic(tmp_path):
    """cpu-ppo from a cpu-ppo run (the source's weights moved by 0.5): the same task, rules and
    reward, so every array is the source's, the value output included (a zero critic would make
    the first advantages the bare rewards and undo the trained policy); the same source under
    another rule set has its value output zeroed."""
    tiny = ["network.hidden_size=16"]
    source_config = resolve("cpu-ppo", None, tiny)
    source = init_train_state(make_context(source_config))
    source = source.replace(params=jax.tree.map(lambda leaf: leaf + 0.5, source.params))
    RunCheckpoints(tmp_path, 1).save(3, source, source_config, None)
    same = resolve("cpu-ppo", None, [*tiny, f"algo.init_from={tmp_path}"])
    params = start_state(make_context(same)).params
    jax.tree.map(np.testing.assert_array_equal, params, source.params)
    plain = [*tiny, f"algo.init_from={tmp_path}", "env.id=YahtzeePlain-v0"]
    other = resolve("cpu-ppo", None, plain)
    params = start_state(make_context(other)).params
    assert all(not np.any(leaf) for leaf in jax.tree.leaves(params[VALUE_OUTPUT]))


def test_warm_start_continues_a_trained_planner_and_refuses_another_shape(tmp_path):
    """`algo.init_from` on a td-planner run: the new run's first parameters are the source
    run's saved ones, exactly (no widening, no zeroed output; the source's are a fresh network
    moved by 0.5, so no initialisation equals them), while its step starts at 0; a missing
    source named after a preset names the command that makes it; a source whose network has
    another shape (a distribution network beside the value, score_bins > 0) is refused in one
    line."""

    config = resolve("quick", overrides=TINY_PLANNER)
    trained = init_train_state(make_context(config))
    trained = trained.replace(params=jax.tree.map(lambda leaf: leaf + 0.5, trained.params))
    RunCheckpoints(tmp_path, 1).save(7, trained.replace(step=jnp.int32(7)), config, None)

    warm = resolve("quick", overrides=[*TINY_PLANNER, f"algo.init_from={tmp_path}"])
    state = start_state(make_context(warm))
    assert int(state.step) == 0
    jax.tree.map(np.testing.assert_array_equal, state.params, trained.params)

    missing = tmp_path / "td-planner-match-large"  # a preset's name: its command is named
    absent = resolve("quick", overrides=[*TINY_PLANNER, f"algo.init_from={missing}"])
    with pytest.raises(ConfigError, match="--preset td-planner-match-large --out"):
        start_state(make_context(absent))

    wider = resolve(
        "quick", overrides=[*TINY_PLANNER, "algo.score_bins=8", f"algo.init_from={tmp_path}"]
    )
    with pytest.raises(ConfigError, match="network's shapes differ") as error:
        start_state(make_context(wider))
    assert "\n" not in str(error.value)


def test_warm_start_widens_the_critics_own_trunk_too(tmp_path):
    """With `network.critic_trunk` both trunks read the features: a2c-win from a solitaire run
    widens the critic's first layer as the policy's (the source's rows, then zero rows)."""
    sizes = ["network.hidden_size=16", "network.critic_trunk=true"]
    source_config = resolve("paper-a2c-shaping", None, sizes)
    source = init_train_state(make_context(source_config))
    source = source.replace(params=jax.tree.map(lambda leaf: leaf + 0.5, source.params))
    RunCheckpoints(tmp_path, 1).save(3, source, source_config, None)
    config = resolve("a2c-win", None, [*sizes, f"algo.init_from={tmp_path}"])
    context = make_context(config)
    params = start_state(context).params
    for block in ("Block_0", "CriticBlock_0"):
        first, old = params[block]["Dense_0"]["kernel"], source.params[block]["Dense_0"]["kernel"]
        assert first.shape == (context.env.feature_size(), 16) and first.shape[0] > old.shape[0]
        np.testing.assert_array_equal(first[: old.shape[0]], old)
        assert not np.any(first[old.shape[0] :])
    np.testing.assert_array_equal(
        params["CriticBlock_1"]["Dense_0"]["kernel"],
        source.params["CriticBlock_1"]["Dense_0"]["kernel"],
    )
