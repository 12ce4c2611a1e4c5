"""The specialised step against today's computation: the rollout runs only the head each
decision needs (and no value head for A2C / REINFORCE), the loss runs the roll head on keep
decisions and the score head on scoring ones, and the KL diagnostic is exact at evaluation
points; actions, log-probs, losses, metrics and gradients must match every head on every row."""

from __future__ import annotations

import itertools

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from yahtzee_jax import envs
from yahtzee_jax.algorithms import a2c, actor_critic, ppo
from yahtzee_jax.algorithms.algorithm import init_train_state, make_context
from yahtzee_jax.algorithms.common import kl_divergence, lambda_returns
from yahtzee_jax.algorithms.training_rollout import (
    apply_network,
    evaluate_heads,
    evaluate_trajectory,
    sample_batch,
    trajectory_recorder,
)
from yahtzee_jax.envs.rollout import rollout as env_rollout
from yahtzee_jax.envs.solitaire_play import episode_keys, play, record_transition
from yahtzee_jax.envs.tasks import env_id
from yahtzee_jax.networks import entropy, network_log_probs
from yahtzee_jax.runner.configs import resolve

TOLERANCE = {"rtol": 2e-5, "atol": 2e-6}

NETWORKS = {
    "categorical-layernorm": ["network.layer_norm=true", "network.roll_head=categorical"],
    "bernoulli-no-layernorm": ["network.layer_norm=false", "network.roll_head=bernoulli"],
    "upper-shaping": [
        "network.upper_head=true",
        "algo.upper_regression_weight=0.5",
        "algo.shaping_weight=0.3",
    ],
}


def cases(names: list[str], fast: set[tuple[str, ...]]) -> list:
    """Every combination of the parametrised names; those outside `fast` are marked slow, so
    `make test` checks each path once and `make test-slow` covers every network variant."""
    axes = {
        "task": ["game", "single-turn"],
        "network": list(NETWORKS),
        "algo": ["a2c", "reinforce"],
    }
    return [
        pytest.param(*combination, marks=() if combination in fast else pytest.mark.slow)
        for combination in itertools.product(*(axes[name] for name in names))
    ]


def small_config(algo: str, network: str, task: str = "game", games: int = 4):
    """A small network with dropout on, `games` per update."""
    return resolve(
        "quick",
        overrides=[
            f"algo.name={algo}",
            "network.hidden_size=16",
            "network.dropout=0.3",
            f"train.games_per_update={games}",
            f"env.id={env_id('official', task)}",
            *NETWORKS[network],
            *(["algo.games_per_minibatch=2"] if algo == "ppo" else []),
        ],
    )


def reference_rollout(context, params, key):
    """Today's rollout: every head at every decision, categorical over the 45 merged actions."""
    config, network = context.config, context.network

    def policy(states, keys):
        key_pairs = jax.vmap(jax.random.split)(keys)
        seeds = jax.vmap(lambda k: jax.random.bits(k, (), jnp.uint32))(key_pairs[:, 1])
        log_probs, output, x, legal = network_log_probs(
            lambda f: apply_network(network, params, f, seeds),
            states,
            config.features,
            context.rules,
        )
        action = jax.vmap(jax.random.categorical)(key_pairs[:, 0], log_probs).astype(jnp.int32)
        extras = {
            "features": x,
            "legal_mask": legal,
            "value": output.value,
            "upper": output.upper,
            "log_prob": jnp.take_along_axis(log_probs, action[:, None], axis=-1)[:, 0],
            "dropout_seed": seeds,
        }
        return action, extras

    keys = episode_keys(key, 0, envs.episodes_per_update(config))
    _, records, rewards = env_rollout(
        context.env, policy, keys, None, trajectory_recorder(context.env)
    )
    return records._replace(reward=rewards)


def perturbed(params, scale: float = 0.05):
    """Parameters moved off their initial values (so ratios and KLs are not trivially 1, 0)."""
    leaves, tree = jax.tree.flatten(params)
    keys = jax.random.split(jax.random.PRNGKey(7), len(leaves))
    moved = [
        leaf + scale * jax.random.normal(k, leaf.shape)
        for leaf, k in zip(leaves, keys, strict=True)
    ]
    return jax.tree.unflatten(tree, moved)


def assert_trees_close(actual, expected) -> None:
    for a, e in zip(jax.tree.leaves(actual), jax.tree.leaves(expected), strict=True):
        np.testing.assert_allclose(a, e, **TOLERANCE)


@pytest.mark.parametrize(
    ("task", "network"),
    cases(
        ["task", "network"],
        # single-turn's rollout is checked fast by the golden ppo/single-turn case
        {("game", "categorical-layernorm")},
    ),
)
def test_rollout_matches_every_head_at_every_decision(task: str, network: str):
    """Same actions, features, masks and seeds bit for bit; log-probs, values and upper
    predictions to float round-off; without the value heads they are None."""
    context = make_context(small_config("a2c", network, task))
    state = init_train_state(context)
    params = perturbed(state.params)
    expected = jax.jit(lambda p, k: reference_rollout(context, p, k))(params, state.key)
    for with_value in (True, False):
        actual = jax.jit(lambda p, k, v=with_value: sample_batch(context, p, k, v)[0])(
            params, state.key
        )
        for field in ("features", "legal_mask", "roll_index", "action", "reward", "dropout_seed"):
            np.testing.assert_array_equal(getattr(actual, field), getattr(expected, field))
        np.testing.assert_array_equal(actual.upper_total, expected.upper_total)
        np.testing.assert_allclose(actual.log_prob, expected.log_prob, **TOLERANCE)
        if with_value:
            np.testing.assert_allclose(actual.value, expected.value, **TOLERANCE)
            np.testing.assert_allclose(actual.upper, expected.upper, **TOLERANCE)
        else:
            assert actual.value is None and actual.upper is None


def test_play_by_turn_records_what_the_plain_loop_records():
    """A policy that ignores the static decision index plays the same games either way."""
    context = make_context(small_config("a2c", "categorical-layernorm"))
    rules = context.rules

    def random_legal(states, keys):
        from yahtzee_jax.game.engine import legal_action_mask

        legal = jax.vmap(lambda s: legal_action_mask(s, rules))(states)
        logits = jnp.where(legal, 0.0, -jnp.inf)
        return jax.vmap(jax.random.categorical)(keys, logits).astype(jnp.int32), None

    keys = episode_keys(jax.random.PRNGKey(3), 0, 5)
    # each loop compiled whole (op by op, every decision's operations were dispatched alone)
    plain = jax.jit(lambda keys: play(random_legal, keys, rules, record=record_transition))(keys)
    by_turn = jax.jit(
        lambda keys: play(
            lambda s, k, roll_index: random_legal(s, k),
            keys,
            rules,
            record=record_transition,
            by_turn=True,
        )
    )(keys)
    for a, e in zip(jax.tree.leaves(by_turn), jax.tree.leaves(plain), strict=True):
        np.testing.assert_array_equal(a, e)
    assert bool(jnp.all(by_turn[1].state.roll_index == jnp.arange(39)[:, None] % 3))


@pytest.mark.parametrize(
    ("network", "algo"),
    cases(["network", "algo"], {("upper-shaping", "a2c"), ("bernoulli-no-layernorm", "reinforce")}),
)
def test_loss_and_gradients_match_the_reference(algo: str, network: str):
    """The specialised loss on a value-less rollout (targets bootstrapped from the loss's own
    forward pass) equals the every-head loss with the rollout's values: loss, every metric
    they share and every gradient, to float round-off."""
    context = make_context(small_config(algo, network))
    state = init_train_state(context)
    params = perturbed(state.params)
    _config, algo_config = context.config, context.config.algo
    step = jnp.int32(3)
    gamma = 0.97 if algo == "reinforce" else algo_config.gamma

    @jax.jit  # one compile of each side (run op by op it took 20-38 s on a 2-core CPU)
    def both_sides(params, key):
        with_values = sample_batch(context, params, key, True)[0]
        without = sample_batch(context, params, key, False)[0]
        rewards = actor_critic.training_rewards(context, with_values, gamma, step)
        target = lambda_returns(rewards, with_values.value, gamma, algo_config.gae_lambda)
        reference = jax.value_and_grad(a2c.reference_loss, has_aux=True)(
            params, context, with_values, target, step
        )
        specialised = jax.value_and_grad(a2c.loss, has_aux=True)(
            params, context, without, step, gamma, algo_config.gae_lambda
        )
        shaping = jnp.mean(jnp.sum(rewards - with_values.reward, axis=0))
        return reference, specialised, shaping

    reference, specialised, expected_shaping = both_sides(params, state.key)
    (ref_total, (ref_metrics, _)), ref_grads = reference
    (total, (metrics, _)), grads = specialised
    np.testing.assert_allclose(total, ref_total, **TOLERANCE)
    assert set(ref_metrics) <= set(metrics)
    for name, value in ref_metrics.items():
        np.testing.assert_allclose(metrics[name], value, err_msg=name, **TOLERANCE)
    if algo_config.shaping_weight > 0:
        np.testing.assert_allclose(metrics["train/mean_shaping"], expected_shaping, **TOLERANCE)
    assert_trees_close(grads, ref_grads)


def reference_ppo_loss(params, context, batch, target, advantage, step):
    """Today's PPO loss: every head on every decision of the minibatch."""
    algo = context.config.algo
    log_probs, output = evaluate_trajectory(context.network, params, batch)
    taken = jnp.take_along_axis(log_probs, batch.action[..., None], axis=-1)[..., 0]
    ratio = jnp.exp(taken - batch.log_prob)
    policy_loss = ppo.clipped_surrogate(ratio, advantage, algo.clip_epsilon)
    value_loss = algo.value_coef * jnp.mean(jnp.square(output.value - target))
    per_decision = entropy(log_probs)
    keeping = batch.roll_index < 2
    roll_entropy = jnp.sum(per_decision * keeping) / jnp.sum(keeping)
    score_entropy = jnp.sum(per_decision * ~keeping) / jnp.sum(~keeping)
    auxiliary, _ = actor_critic.auxiliary_terms(
        context, step, (roll_entropy, score_entropy), output.upper, batch
    )
    return policy_loss + value_loss + auxiliary


# slow only: PPO's update is checked fast bit for bit by the golden ppo/single-turn case and the
# registry contract; this compares it with the every-head reference on each network variant
@pytest.mark.parametrize("network", cases(["network"], set()))
def test_ppo_loss_and_gradients_match_the_reference(network: str):
    """PPO's minibatch loss (rollout values kept for its advantages) with moved parameters."""
    context = make_context(small_config("ppo", network))
    state = init_train_state(context)
    _config, algo = context.config, context.config.algo
    trajectory = sample_batch(context, state.params, state.key, True)[0]
    rewards = actor_critic.training_rewards(context, trajectory, algo.gamma, jnp.int32(0))
    target = lambda_returns(rewards, trajectory.value, algo.gamma, algo.gae_lambda)
    advantage = target - trajectory.value
    games = jnp.array([2, 0])
    batch, batch_target, batch_advantage = jax.tree.map(
        lambda a: a[:, games], (trajectory, target, advantage)
    )
    params = perturbed(state.params, 0.02)
    args = (context, batch, batch_target, batch_advantage, jnp.int32(1))
    ref_total, ref_grads = jax.value_and_grad(reference_ppo_loss)(params, *args)
    (total, metrics), grads = jax.value_and_grad(ppo.ppo_loss, has_aux=True)(params, *args)
    np.testing.assert_allclose(total, ref_total, **TOLERANCE)
    assert float(metrics["ppo/ratio_std"]) > 0
    assert_trees_close(grads, ref_grads)


@pytest.mark.slow  # a logged scalar's sampling; the PPO loss stays fast in this file
def test_kl_is_exact_at_evaluation_updates_and_sampled_between():
    """policy/kl over the whole batch at an update that ends at an evaluation point (what is
    logged there is unchanged), over the first kl_sample_games games elsewhere; both equal
    the reference KL of the 45-action distributions on those decisions."""
    context = make_context(small_config("a2c", "categorical-layernorm", games=4))
    config = context.config
    assert config.algo.kl_sample_games == 2 and config.train.eval_interval > 1
    state = init_train_state(context)
    trajectory = sample_batch(context, state.params, state.key, False)[0]
    before = evaluate_heads(context.network, state.params, trajectory, with_value=False)
    after_params = perturbed(state.params)
    ref_before = evaluate_trajectory(context.network, state.params, trajectory)[0]
    ref_after = evaluate_trajectory(context.network, after_params, trajectory)[0]
    after = evaluate_heads(context.network, after_params, trajectory, with_value=False)
    np.testing.assert_allclose(
        a2c.heads_kl(before, after), kl_divergence(ref_before, ref_after), **TOLERANCE
    )

    def logged(update: int) -> float:
        kl = a2c.kl_after_update(context, trajectory, before, after_params, jnp.int32(update))
        return float(kl)

    exact = float(kl_divergence(ref_before, ref_after))
    sampled = float(kl_divergence(ref_before[:, :2], ref_after[:, :2]))
    assert exact != pytest.approx(sampled)
    for update in (config.train.eval_interval, config.train.total_updates):
        assert logged(update) == pytest.approx(exact, rel=2e-5)
    assert logged(1) == pytest.approx(sampled, rel=2e-5)
