"""The paper's actor-critic network (section 4.3) and the policy it defines over the actions.

Block = Dense -> activation -> LayerNorm -> Dropout (the order of the paper's code). The trunk is
`trunk_layers` blocks; each head adds one hidden block and a linear output:

- roll head: 32 logits, one per keep pattern (categorical), or 5 per-die keep logits (Bernoulli),
  turned into the exact log-probabilities of the 32 patterns so both share one code path;
- score head: one logit per box of the rules (13 in Yahtzee); used or Joker-forbidden boxes are
  masked to -inf before the softmax;
- value head: block without dropout -> Dense(1) -> ELU (values are never far below 0), times
  `value_scale` points; with
  `value_head="action"` also D(s, a), one offset per engine action (keeps, then boxes) from a
  second linear output of the same block, initialised near 0: value[..., 0] is V(s),
  value[..., 1 + a] is D(s, a), and Q(s, a) = V(s) + D(s, a);
- optional upper head: block -> Dense(1), the predicted normalised final upper total.

With `critic_trunk` the value head reads its own `trunk_layers` blocks (`CriticBlock_i`, no
dropout) over the features instead of the shared trunk's output.

`policy_log_probs` merges both heads into one categorical over the engine's actions (45 in
Yahtzee): keep actions at roll decisions, legal boxes at the scoring decision.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import NamedTuple

import flax.linen as nn
import jax
import jax.numpy as jnp
import numpy as np

from yahtzee_jax.config import FeatureConfig, NetworkConfig
from yahtzee_jax.envs.features import batch_features, feature_size
from yahtzee_jax.game.engine import LAST_ROLL, State, legal_action_mask
from yahtzee_jax.game.rules import NUM_DICE, NUM_KEEP_ACTIONS, Rules

ACTIVATIONS = {"swish": nn.swish, "relu": nn.relu}
# KEEP_BITS[a, i] = 1 if keep pattern a keeps sorted die i.
KEEP_BITS = ((np.arange(NUM_KEEP_ACTIONS)[:, None] >> np.arange(NUM_DICE)) & 1).astype(np.float32)
_small_init = nn.initializers.variance_scaling(0.01, "fan_in", "truncated_normal")


class NetworkOutput(NamedTuple):
    """Raw head outputs for a batch: roll_log_probs[..., 32] (normalised), score_logits[..., boxes],
    value[...] (value[..., 1 + 32 + boxes], V then each action's D, with the action-value
    head), upper[...] (zeros without the upper head)."""

    roll_log_probs: jax.Array
    score_logits: jax.Array
    value: jax.Array
    upper: jax.Array


def _mix32(h: jax.Array) -> jax.Array:
    """A 32-bit integer hash (Wellons' lowbias32): every output bit depends on every input bit."""
    h = h ^ (h >> 16)
    h = h * jnp.uint32(0x7FEB352D)
    h = h ^ (h >> 15)
    h = h * jnp.uint32(0x846CA68B)
    return h ^ (h >> 16)


def dropout_keep_mask(seed: jax.Array, salt: int, width: int, rate: float) -> jax.Array:
    """bool[..., width]: which units one example keeps, a pure function of (seed, salt, unit).

    Dropout masks come from a per-decision seed (uint32) rather than from one rng per batch, so
    any subset of decisions re-evaluated later (a loss, a PPO minibatch) sees exactly the masks
    it acted with. A hash of (seed, layer salt, unit) costs a few integer operations per unit,
    several times less than threefry bits drawn under a per-example key.
    """
    base = _mix32(seed.astype(jnp.uint32) ^ jnp.uint32((salt * 0x9E3779B9) & 0xFFFFFFFF))
    units = jnp.arange(width, dtype=jnp.uint32) * jnp.uint32(0x85EBCA6B)
    threshold = jnp.uint32(min(round(rate * 2**32), 2**32 - 1))
    return _mix32(base[..., None] + units) >= threshold


class Block(nn.Module):
    """Dense -> activation -> optional LayerNorm -> optional Dropout (masks from a seed)."""

    width: int
    activation: str
    layer_norm: bool
    dropout: float
    salt: int = 0  # distinguishes the blocks' dropout masks
    dtype: str = "float32"  # the arithmetic's dtype (parameters stay float32)

    @nn.compact
    def __call__(self, x: jax.Array, dropout_seed: jax.Array | None) -> jax.Array:
        """Apply the block; dropout is on when a per-example `dropout_seed` (uint32) is given."""
        x = ACTIVATIONS[self.activation](nn.Dense(self.width, dtype=self.dtype)(x))
        if self.layer_norm:
            x = nn.LayerNorm(dtype=self.dtype)(x)
        if self.dropout > 0 and dropout_seed is not None:
            keep = dropout_keep_mask(dropout_seed, self.salt, self.width, self.dropout)
            x = jnp.where(keep, x / (1.0 - self.dropout), 0.0)
        return x


HEADS = ("roll", "score", "value", "upper")
# rows[head] indexes the trunk's output (and the seeds) for one head: a static tuple of slices /
# ints over the leading axes, e.g. the keep rows of a [turns, 3, B, F] batch are (:, 0:2).
HeadRows = dict[str, tuple]
VALUE_OUTPUT = "Dense_2"  # the value head's output layer (`YahtzeeNet` names its submodules)
ACTION_VALUES = "ActionValues"  # the action-value head's offsets D(s, a) from V(s)


CRITIC_BLOCK = "CriticBlock_"  # the critic's own trunk blocks (`network.critic_trunk`)


def value_head_modules(config: NetworkConfig) -> tuple[str, ...]:
    """Names of the value head's parameter groups: its own trunk's blocks (with
    `critic_trunk`), its hidden block and its output layer."""
    own_trunk = [f"{CRITIC_BLOCK}{layer}" for layer in range(config.trunk_layers)]
    return (
        *(own_trunk if config.critic_trunk else ()),
        f"Block_{config.trunk_layers + 2}",
        VALUE_OUTPUT,
    )


class YahtzeeNet(nn.Module):
    """Shared trunk, roll / score / value (/ upper) heads, each with one hidden block.

    Submodules are named explicitly (the names Flax gives them in this order), so any subset of
    heads can be computed without renaming the parameters of the others.
    """

    config: NetworkConfig
    num_boxes: int  # the score head's width: the rules' boxes

    def _block(self, salt: int, dropout: bool = True) -> Block:
        config = self.config
        rate = config.dropout if dropout else 0.0
        return Block(
            config.hidden_size,
            config.activation,
            config.layer_norm,
            rate,
            salt,
            config.compute_dtype,
            name=f"Block_{salt}",
        )

    def _critic_block(self, layer: int) -> Block:
        config = self.config
        return Block(
            config.hidden_size,
            config.activation,
            config.layer_norm,
            0.0,
            dtype=config.compute_dtype,
            name=f"{CRITIC_BLOCK}{layer}",
        )

    @nn.compact
    def __call__(
        self,
        x: jax.Array,
        dropout_seed: jax.Array | None = None,
        heads: tuple[str, ...] = HEADS,
        rows: HeadRows | None = None,
    ) -> NetworkOutput:
        """Map features[..., F] to the head outputs; dropout is on when per-example seeds
        (uint32[...], the batch shape of `x`) are given, off (evaluation) otherwise.

        Only the `heads` named are computed (the others are None; a missing upper head gives
        zeros), each on `rows[head]` of the trunk's output when given (all rows otherwise):
        a step whose decisions all keep needs no score head, and vice versa.
        """
        trunk = self.config.trunk_layers
        features = x
        for layer in range(trunk):
            x = self._block(layer)(x, dropout_seed)
        rows = rows or {}

        def head_input(head: str) -> tuple[jax.Array, jax.Array | None]:
            index = rows.get(head, ())
            return x[index], None if dropout_seed is None else dropout_seed[index]

        def out(hidden: jax.Array) -> jax.Array:
            # the output layers, softmaxes and losses in float32 whatever the blocks computed in
            return hidden.astype(jnp.float32)

        roll_log_probs = score_logits = value = upper = None
        if "roll" in heads:
            roll_hidden = self._block(trunk)(*head_input("roll"))
            if self.config.roll_head == "categorical":
                roll_logits = nn.Dense(NUM_KEEP_ACTIONS, kernel_init=_small_init, name="Dense_0")(
                    out(roll_hidden)
                )
                roll_log_probs = jax.nn.log_softmax(roll_logits)
            else:
                keep_logits = nn.Dense(NUM_DICE, kernel_init=_small_init, name="Dense_0")(
                    out(roll_hidden)
                )
                log_keep = jax.nn.log_sigmoid(keep_logits)
                log_reroll = jax.nn.log_sigmoid(-keep_logits)
                roll_log_probs = log_keep @ KEEP_BITS.T + log_reroll @ (1.0 - KEEP_BITS).T
        if "score" in heads:
            score_hidden = self._block(trunk + 1)(*head_input("score"))
            score_logits = nn.Dense(self.num_boxes, kernel_init=_small_init, name="Dense_1")(
                out(score_hidden)
            )
        if "value" in heads:
            if self.config.critic_trunk:  # its own blocks over the features, no dropout
                value_input = features[rows.get("value", ())]
                for layer in range(trunk):
                    value_input = self._critic_block(layer)(value_input, None)
            else:
                value_input = head_input("value")[0]
            value_hidden = self._block(trunk + 2, dropout=False)(value_input, None)
            scale = self.config.value_scale  # points per unit of the outputs
            value = scale * nn.elu(nn.Dense(1, name=VALUE_OUTPUT)(out(value_hidden)))
            if self.config.value_head == "action":
                # [V(s), D(s, a) for every action]: Q(s, a) = V(s) + D(s, a), D starting near
                # 0, so an action seldom taken (its D seldom trained) is valued as its state
                width = NUM_KEEP_ACTIONS + self.num_boxes
                offsets = nn.Dense(width, kernel_init=_small_init, name=ACTION_VALUES)
                value = jnp.concatenate([value, scale * offsets(out(value_hidden))], axis=-1)
            else:
                value = value[..., 0]
        if "upper" in heads:
            upper_input, upper_seed = head_input("upper")
            if self.config.upper_head:
                upper_hidden = self._block(trunk + 3)(upper_input, upper_seed)
                upper = nn.Dense(1, name="Dense_3")(out(upper_hidden))
                upper = upper[..., 0]
            else:
                upper = jnp.zeros(upper_input.shape[:-1], jnp.float32)
        return NetworkOutput(roll_log_probs, score_logits, value, upper)


def init_params(
    config: NetworkConfig, features_config: FeatureConfig, key: jax.Array, rules: Rules
) -> dict:
    """Fresh network parameters for the rules' card."""
    dummy = jnp.zeros((1, feature_size(features_config, rules)), jnp.float32)
    return YahtzeeNet(config, rules.num_boxes).init(key, dummy)["params"]


def policy_log_probs(
    output: NetworkOutput, legal_mask: jax.Array, roll_index: jax.Array
) -> jax.Array:
    """Log-probabilities over the actions (-inf where impossible), batched over leading axes."""
    keeping = (roll_index < LAST_ROLL)[..., None]
    legal_boxes = legal_mask[..., NUM_KEEP_ACTIONS:]
    score_log_probs = jax.nn.log_softmax(jnp.where(legal_boxes, output.score_logits, -jnp.inf))
    minus_inf_keep = jnp.full_like(output.roll_log_probs, -jnp.inf)
    minus_inf_score = jnp.full_like(score_log_probs, -jnp.inf)
    roll_part = jnp.concatenate([output.roll_log_probs, minus_inf_score], axis=-1)
    score_part = jnp.concatenate([minus_inf_keep, score_log_probs], axis=-1)
    return jnp.where(keeping, roll_part, score_part)


def entropy(log_probs: jax.Array) -> jax.Array:
    """Entropy of categorical distributions given log-probabilities (-inf entries allowed)."""
    finite = jnp.isfinite(log_probs)
    safe = jnp.where(finite, log_probs, 0.0)
    return -jnp.sum(jnp.where(finite, jnp.exp(safe) * safe, 0.0), axis=-1)


def network_log_probs(
    apply: Callable[[jax.Array], NetworkOutput],
    states: State,
    features_config: FeatureConfig,
    rules: Rules,
) -> tuple[jax.Array, NetworkOutput, jax.Array, jax.Array]:
    """The network's policy on a batch of states: (log-probs [B, actions], outputs, features,
    legal).

    The one place the policy is defined: the training rollout samples from these log-probs
    (`apply` with dropout on) and the evaluation agent takes their argmax (dropout off).
    """
    x = batch_features(states, features_config, rules)
    legal = jax.vmap(lambda state: legal_action_mask(state, rules))(states)
    output = apply(x)
    return policy_log_probs(output, legal, states.roll_index), output, x, legal
