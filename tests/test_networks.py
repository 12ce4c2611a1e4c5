"""Network output shapes, the 45-action policy and its masking (Joker included)."""

from __future__ import annotations

import dataclasses

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from yahtzee_jax.algorithms import get_algorithm
from yahtzee_jax.config import FeatureConfig, NetworkConfig
from yahtzee_jax.envs.features import feature_size, features
from yahtzee_jax.game import OFFICIAL, Category, State, legal_action_mask
from yahtzee_jax.networks import (
    YahtzeeNet,
    dropout_keep_mask,
    entropy,
    init_params,
    policy_log_probs,
    value_head_modules,
)
from yahtzee_jax.runner.configs import from_dict

FEATURES = FeatureConfig()
SMALL = NetworkConfig(hidden_size=16, upper_head=True)


@pytest.fixture(scope="module")
def params() -> dict:
    """Small network weights shared by the tests."""
    return init_params(SMALL, FEATURES, jax.random.PRNGKey(0), OFFICIAL)


def joker_state(filled: list[Category]) -> State:
    """Five sixes at the scoring decision, the Yahtzee box holding 50, `filled` boxes used."""
    scores = jnp.zeros(13, jnp.int32).at[Category.YAHTZEE].set(50)
    used = jnp.zeros(13, bool).at[Category.YAHTZEE].set(True)
    for category in filled:
        used = used.at[category].set(True)
    return State.empty(
        OFFICIAL, dice=jnp.int32([6] * 5), roll_index=jnp.int32(2), scores=scores, filled=used
    )


@pytest.mark.parametrize("roll_head", ["categorical", "bernoulli"])
def test_output_shapes_and_normalised_roll_head(roll_head):
    """Batch of 7: roll log-probs [7, 32] summing to 1 (also for 5 Bernoulli dice), score
    logits [7, 13], value / upper [7]; the value head's ELU keeps values above -1."""
    config = NetworkConfig(hidden_size=16, roll_head=roll_head, upper_head=True)
    weights = init_params(config, FEATURES, jax.random.PRNGKey(1), OFFICIAL)
    x = jax.random.normal(jax.random.PRNGKey(2), (7, feature_size(FEATURES, OFFICIAL)))
    seeds = jnp.arange(7, dtype=jnp.uint32)
    output = YahtzeeNet(config, OFFICIAL.num_boxes).apply({"params": weights}, x, seeds)
    assert output.roll_log_probs.shape == (7, 32)
    assert output.score_logits.shape == (7, 13)
    assert output.value.shape == output.upper.shape == (7,)
    np.testing.assert_allclose(jnp.exp(output.roll_log_probs).sum(-1), 1.0, rtol=1e-5)
    assert bool(jnp.all(output.value > -1.0))


@pytest.mark.parametrize(
    ("filled", "legal_boxes"),
    [
        ([], [Category.SIXES]),  # forced Joker: the matching upper box
        ([Category.SIXES], [6, 7, 8, 9, 10, 12]),  # then any open lower box
    ],
)
def test_illegal_category_never_sampled_under_joker(params, filled, legal_boxes):
    """Forced-Joker positions: 4,000 samples of the policy land only on legal boxes, even with
    the score head's bias pushed hard towards the used Yahtzee box; argmax obeys the mask too."""
    state = joker_state(filled)
    biased = jax.tree.map(lambda x: x, params)
    head = [name for name in params if name.startswith("Dense")][1]  # the score output layer
    assert params[head]["bias"].shape == (13,)
    biased[head] = {**params[head], "bias": params[head]["bias"].at[Category.YAHTZEE].set(50)}
    legal = legal_action_mask(state, OFFICIAL)
    x = features(state, FEATURES, OFFICIAL)
    for weights in (params, biased):
        output = YahtzeeNet(SMALL, OFFICIAL.num_boxes).apply({"params": weights}, x)
        log_probs = policy_log_probs(output, legal, state.roll_index)
        samples = jax.random.categorical(jax.random.PRNGKey(4), log_probs, shape=(4000,))
        assert set(np.unique(samples - 32).tolist()) <= set(int(c) for c in legal_boxes)
        config = dataclasses.replace(from_dict({}), network=SMALL, features=FEATURES)
        agent = get_algorithm(config.algo.name).make_agent(config, weights, "test")
        assert int(agent.act(weights, state, jax.random.PRNGKey(0))) - 32 in legal_boxes


def test_keep_decisions_only_use_keep_actions(params):
    """At a keep decision the policy puts all mass on the 32 keep patterns; entropies finite."""
    state = State.empty(OFFICIAL, dice=jnp.int32([1, 2, 3, 4, 6]))
    output = YahtzeeNet(SMALL, OFFICIAL.num_boxes).apply(
        {"params": params}, features(state, FEATURES, OFFICIAL)
    )
    log_probs = policy_log_probs(output, legal_action_mask(state, OFFICIAL), state.roll_index)
    assert log_probs.shape == (OFFICIAL.num_actions,)
    assert bool(jnp.all(jnp.isneginf(log_probs[32:])))
    np.testing.assert_allclose(jnp.exp(log_probs[:32]).sum(), 1.0, rtol=1e-5)
    assert 0.0 < float(entropy(log_probs)) <= np.log(32) + 1e-5


def test_gradient_through_masked_policy_is_finite(params):
    """-inf masks must not leak NaNs into gradients of log-probs and entropy."""
    state = joker_state([Category.SIXES])
    x = features(state, FEATURES, OFFICIAL)
    legal = legal_action_mask(state, OFFICIAL)

    def objective(weights: dict) -> jax.Array:
        output = YahtzeeNet(SMALL, OFFICIAL.num_boxes).apply({"params": weights}, x)
        log_probs = policy_log_probs(output, legal, state.roll_index)
        return log_probs[32 + Category.CHANCE] + entropy(log_probs)

    grads = jax.grad(objective)(params)
    assert all(bool(jnp.all(jnp.isfinite(g))) for g in jax.tree.leaves(grads))


def test_dropout_masks_are_per_example_reproducible_and_at_the_rate():
    """Masks depend only on (seed, block, unit): the same seed gives the same mask in any batch,
    different seeds or blocks give different masks, and about `rate` of the units drop."""
    seeds = jnp.arange(4000, dtype=jnp.uint32)
    masks = dropout_keep_mask(seeds, salt=1, width=600, rate=0.1)
    assert masks.shape == (4000, 600) and masks.dtype == jnp.bool_
    assert abs(float(1 - masks.mean()) - 0.1) < 0.002
    np.testing.assert_array_equal(dropout_keep_mask(seeds[17:19], 1, 600, 0.1), masks[17:19])
    assert bool(jnp.any(masks[0] != masks[1]))
    assert bool(jnp.any(dropout_keep_mask(seeds[:1], 2, 600, 0.1) != masks[:1]))
    # Units are not correlated within an example: neighbours drop together at about rate^2.
    both = float(jnp.mean(~masks[:, :-1] & ~masks[:, 1:]))
    assert abs(both - 0.01) < 0.002


def test_dropout_on_only_with_seeds_and_rescaled():
    """Without seeds the network is deterministic (evaluation); with seeds the outputs change,
    and the same seeds give the same outputs."""
    config = NetworkConfig(hidden_size=32, dropout=0.5)
    weights = init_params(config, FEATURES, jax.random.PRNGKey(1), OFFICIAL)
    x = jax.random.normal(jax.random.PRNGKey(2), (5, feature_size(FEATURES, OFFICIAL)))
    net = YahtzeeNet(config, OFFICIAL.num_boxes)
    plain = net.apply({"params": weights}, x)
    seeds = jnp.arange(5, dtype=jnp.uint32)
    dropped = net.apply({"params": weights}, x, seeds)
    again = net.apply({"params": weights}, x, seeds)
    np.testing.assert_array_equal(dropped.score_logits, again.score_logits)
    assert not np.allclose(plain.score_logits, dropped.score_logits)


def test_bfloat16_blocks_keep_float32_parameters_and_outputs(params) -> None:
    """network.compute_dtype=bfloat16 computes the hidden blocks in bfloat16 on the same
    float32 parameters: every head's output is float32 and within bfloat16's rounding (8
    significant bits, a few 1e-2 after four layers) of the float32 network's, dropout on."""
    x = jax.random.uniform(jax.random.PRNGKey(1), (64, feature_size(FEATURES, OFFICIAL)))
    seeds = jnp.arange(64, dtype=jnp.uint32)
    half = dataclasses.replace(SMALL, compute_dtype="bfloat16")
    full_out = YahtzeeNet(SMALL, 13).apply({"params": params}, x, seeds)
    half_out = YahtzeeNet(half, 13).apply({"params": params}, x, seeds)
    for full, low in zip(full_out, half_out, strict=True):
        assert low.dtype == jnp.float32
        np.testing.assert_allclose(low, full, atol=0.05, rtol=0.05)
    assert any(not np.array_equal(low, full) for full, low in zip(full_out, half_out, strict=True))
    with pytest.raises(Exception, match=r"network\.compute_dtype"):
        NetworkConfig(compute_dtype="float16")


@pytest.mark.parametrize("value_head", ["state", "action"])
def test_value_scale_multiplies_the_value_outputs_only(params, value_head):
    """`network.value_scale` 100: the same weights give 100 times the values (V, and D with the
    action-value head) and the same policy; a scale of 0 is refused in one line."""
    config = dataclasses.replace(SMALL, value_head=value_head)
    weights = init_params(config, FEATURES, jax.random.PRNGKey(3), OFFICIAL)
    x = jax.random.normal(jax.random.PRNGKey(4), (5, feature_size(FEATURES, OFFICIAL)))
    plain = YahtzeeNet(config, OFFICIAL.num_boxes).apply({"params": weights}, x)
    scaled_config = dataclasses.replace(config, value_scale=100.0)
    scaled = YahtzeeNet(scaled_config, OFFICIAL.num_boxes).apply({"params": weights}, x)
    np.testing.assert_allclose(scaled.value, 100.0 * plain.value, rtol=1e-6)
    np.testing.assert_array_equal(scaled.roll_log_probs, plain.roll_log_probs)
    np.testing.assert_array_equal(scaled.score_logits, plain.score_logits)
    with pytest.raises(Exception, match=r"^network.value_scale=0.0 must be > 0$"):
        NetworkConfig(value_scale=0.0)


def test_critic_trunk_separates_the_value_from_the_policy():
    """`network.critic_trunk`: the value head reads blocks of its own (`CriticBlock_0..`), so
    the value's gradient reaches none of the policy's trunk and heads, the policy's none of the
    critic's blocks; without it the value's gradient reaches the shared trunk."""
    config = dataclasses.replace(SMALL, critic_trunk=True)
    weights = init_params(config, FEATURES, jax.random.PRNGKey(5), OFFICIAL)
    critic = {f"CriticBlock_{layer}" for layer in range(config.trunk_layers)}
    assert critic <= set(weights)
    assert set(value_head_modules(config)) == critic | {"Block_4", "Dense_2"}
    net = YahtzeeNet(config, OFFICIAL.num_boxes)
    x = jax.random.normal(jax.random.PRNGKey(6), (4, feature_size(FEATURES, OFFICIAL)))

    def moved(loss) -> set[str]:
        grads = jax.grad(loss)(weights)
        return {
            module
            for module, leaves in grads.items()
            if any(np.any(g) for g in jax.tree.leaves(leaves))
        }

    value_moves = moved(lambda w: net.apply({"params": w}, x).value.sum())
    policy_moves = moved(
        lambda w: sum(
            out.sum()
            for out in net.apply({"params": w}, x)[:2]  # roll log-probs, score logits
        )
    )
    assert value_moves == set(value_head_modules(config))
    assert not policy_moves & critic and {"Block_0", "Block_1"} <= policy_moves
    shared = init_params(SMALL, FEATURES, jax.random.PRNGKey(5), OFFICIAL)
    shared_grads = jax.grad(
        lambda w: YahtzeeNet(SMALL, OFFICIAL.num_boxes).apply({"params": w}, x).value.sum()
    )(shared)
    assert np.any(shared_grads["Block_0"]["Dense_0"]["kernel"])
    assert not critic & set(shared)
