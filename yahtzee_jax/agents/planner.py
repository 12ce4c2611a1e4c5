"""A turn planner over any value of the turn-start positions: the solver's widget, any leaves.

At every decision the planner values each keep and box by the exact expectation over the turn's
remaining re-rolls, with the points the turn scores plus a *leaf value* of the turn-start
position the box leads to (filled mask, capped upper total, Yahtzee box holds 50). The exact
optimum is this planner with the solved value table as its leaves; the `td-planner` learner
(`algorithms.td_planner`) plugs a value network in instead. Nothing here reads a solver table:
the leaves are whatever callable the caller gives.

A leaf value is `leaf(params, mask, upper, flag) -> float32` over broadcasting integer arrays.
The future counts only while the episode goes on after this turn (`turns_left > 1`), so the
leaves are never asked to value a full card.
"""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Callable
from typing import Any

import jax
import jax.numpy as jnp

from yahtzee_jax.agents.agent import Agent
from yahtzee_jax.game.engine import LAST_ROLL, State, current_score_options
from yahtzee_jax.game.rules import NUM_KEEP_ACTIONS, Rules
from yahtzee_jax.solver.final_rolls import final_roll_values, score_transition
from yahtzee_jax.solver.position import card_context
from yahtzee_jax.solver.states import filled_count
from yahtzee_jax.solver.widget import (
    best_keep_values,
    expected_over_rolls,
    keep_values,
    turn_keep_values,
)
from yahtzee_jax.solver.widget_tables import (
    KEEP_OF_ACTION,
    ROLL_OF_CODE,
    base_points,
    dice_code,
    score_yahtzee_rolls,
)

# leaf(params, mask, upper, flag) -> value of those turn-start positions (broadcast shape)
LeafValue = Callable[[Any, jax.Array, jax.Array, jax.Array], jax.Array]


def card_positions(states: State, rules: Rules) -> tuple[jax.Array, jax.Array, jax.Array]:
    """Turn-start position (mask, capped upper total, flag) of each card of a batch, int32[B]."""
    return jax.vmap(card_context, in_axes=(0, 0, None, None))(
        states.filled, states.scores, jnp, rules
    )


def _future(leaf: LeafValue, params: Any, weight: jax.Array) -> Callable:
    """`final_roll_values`' future: the leaf value, times 0 where the episode ends this turn."""

    def future(mask: jax.Array, upper: jax.Array, flag: jax.Array) -> jax.Array:
        return weight * leaf(params, mask, upper, flag)

    return future


def final_values(leaf: LeafValue, params: Any, states: State, rules: Rules) -> jax.Array:
    """Value of each final roll of each card's turn (its best box), float32[252, B]."""
    weight = (states.turns_left > 1).astype(jnp.float32)
    return position_final_values(leaf, params, *card_positions(states, rules), weight, rules)


def position_final_values(
    leaf: LeafValue,
    params: Any,
    mask: jax.Array,
    upper: jax.Array,
    flag: jax.Array,
    weight: jax.Array,
    rules: Rules,
) -> jax.Array:
    """`final_values` from turn-start positions int32[N] (the leaf's future times `weight`,
    0 where the game ends this turn), float32[252, N]."""
    filled = ((mask[:, None] >> jnp.arange(rules.num_boxes)) & 1).astype(bool)
    # The Yahtzee box's score matters only through the +100 bonus: 50 exactly where `flag`.
    yahtzee_box = jnp.where(flag > 0, rules.yahtzee_score, 0)
    points, legal, bonus = jax.vmap(score_yahtzee_rolls, in_axes=(0, 0, None))(
        filled, yahtzee_box, rules
    )
    options = (points.transpose(1, 2, 0), legal.transpose(1, 2, 0), bonus.T)
    future = _future(leaf, params, weight)
    return final_roll_values(mask, upper, flag, base_points(rules), options, future, jnp, rules)


@dataclasses.dataclass(frozen=True)
class LookaheadLeaf:
    """A leaf one turn deeper: the value of a turn-start position is the exact expectation of
    the turn played from it with `leaf` at that turn's end (0 for a full card). The planner
    with it searches two turns (TD-Gammon's two-ply search); with the solved table as `leaf`
    it returns the table (Bellman's equation)."""

    leaf: LeafValue
    rules: Rules

    def __call__(
        self, params: Any, mask: jax.Array, upper: jax.Array, flag: jax.Array
    ) -> jax.Array:
        """Turn values of broadcasting positions (mask, upper, flag), float32."""
        mask, upper, flag = jnp.broadcast_arrays(mask, upper, flag)
        flat = [array.reshape(-1) for array in (mask, upper, flag)]
        boxes_open = self.rules.num_boxes - jnp.asarray(filled_count(self.rules))[flat[0]]
        weight = (boxes_open > 1).astype(jnp.float32)  # the turn after this one counts
        final = position_final_values(self.leaf, params, *flat, weight, self.rules)
        _, first = turn_keep_values(final, jnp)
        value = expected_over_rolls(best_keep_values(first, jnp), jnp)
        return jnp.where(boxes_open > 0, value, 0.0).reshape(mask.shape)


def box_values(leaf: LeafValue, params: Any, states: State, rules: Rules) -> jax.Array:
    """Value of scoring each card's dice in each box: reward + leaf value, -inf where illegal
    ([B, boxes])."""
    points, legal, bonus = jax.vmap(current_score_options, in_axes=(0, None))(states, rules)
    mask, upper, flag = card_positions(states, rules)
    boxes = jnp.arange(rules.num_boxes)
    reward, next_upper, next_flag = score_transition(
        boxes, points, upper[:, None], flag[:, None], jnp, rules
    )
    next_mask = mask[:, None] | (1 << boxes)
    weight = (states.turns_left > 1).astype(jnp.float32)[:, None]
    later = weight * leaf(params, next_mask, next_upper, next_flag)
    value = reward + rules.yahtzee_bonus_points * bonus[:, None] + later
    return jnp.where(legal, value, -jnp.inf)


def keep_values_by_action(keep_value: jax.Array, roll: jax.Array) -> jax.Array:
    """Each card's values of its 32 keep actions, [B, 32, ...], from keep values [462, B, ...]
    and roll index [B] (the win planner's too)."""
    keeps = jnp.asarray(KEEP_OF_ACTION)[roll]  # [B, 32]
    return keep_value[keeps, jnp.arange(roll.shape[0])[:, None]]


def best_keep_actions(keep_value: jax.Array, roll: jax.Array) -> jax.Array:
    """Best keep action of each card from its keep values [462, B] and roll index [B]."""
    return jnp.argmax(keep_values_by_action(keep_value, roll), axis=1)


def plan_keeps(
    leaf: LeafValue, params: Any, states: State, rules: Rules, first: bool | jax.Array
) -> tuple[jax.Array, jax.Array]:
    """(best keep action [B], turn-start value [B]) of cards at a keep decision.

    `first` (static or traced): two re-rolls to come (the first keep), else one. The turn-start
    value is the expectation over the turn's first roll of the best play with these leaves
    (meaningful at the first keep: the value the learner's "expected" target backs up).
    """
    roll = jnp.asarray(ROLL_OF_CODE)[dice_code(states.dice, jnp)]
    last = keep_values(final_values(leaf, params, states, rules), jnp)

    def first_layer() -> jax.Array:
        return keep_values(best_keep_values(last, jnp), jnp)

    if isinstance(first, bool):
        keep_value = first_layer() if first else last
    else:
        keep_value = jax.lax.cond(first, first_layer, lambda: last)
    turn_value = expected_over_rolls(best_keep_values(keep_value, jnp), jnp)
    return best_keep_actions(keep_value, roll), turn_value


def plan_scores(leaf: LeafValue, params: Any, states: State, rules: Rules) -> jax.Array:
    """Best box action of each card at its score decision."""
    best = jnp.argmax(box_values(leaf, params, states, rules), axis=1)
    return (NUM_KEEP_ACTIONS + best).astype(jnp.int32)


def plan_decision(
    leaf: LeafValue, params: Any, states: State, rules: Rules, roll_index: int
) -> tuple[jax.Array, jax.Array]:
    """(action int32[B], turn-start value [B]) of cards all at decision `roll_index` (static):
    the best keep and the turn's value (`plan_keeps`), or the best box and 0."""
    if roll_index < LAST_ROLL:
        action, turn_value = plan_keeps(leaf, params, states, rules, roll_index == 0)
        return action.astype(jnp.int32), turn_value
    action = plan_scores(leaf, params, states, rules)
    return action.astype(jnp.int32), jnp.zeros(action.shape, jnp.float32)


def plan_actions(leaf: LeafValue, params: Any, states: State, rules: Rules) -> jax.Array:
    """The planner's action for each card of a batch, whatever decision each is at.

    Each kind of decision (first keep, last keep, score) is computed only when some card is at
    it: one of the three in a lockstep batch.
    """
    roll_index = states.roll_index
    nothing = jnp.zeros(roll_index.shape, jnp.int32)

    def keeps(first: bool) -> jax.Array:
        return plan_keeps(leaf, params, states, rules, first)[0].astype(jnp.int32)

    def scores() -> jax.Array:
        return plan_scores(leaf, params, states, rules)

    actions = nothing
    for kind, plan in enumerate(
        [functools.partial(keeps, True), functools.partial(keeps, False), scores]
    ):
        chosen = jax.lax.cond(jnp.any(roll_index == kind), plan, lambda: nothing)
        actions = jnp.where(roll_index == kind, chosen, actions)
    return actions


@dataclasses.dataclass(frozen=True)
class PlannerPolicy:
    """The policy of a planner: equal per (leaf, rules), so `jit` reuses its program."""

    leaf: LeafValue
    rules: Rules

    def __call__(self, params: Any, own: State, others: State, keys: jax.Array) -> jax.Array:
        """The planner's actions for a batch of cards (the other cards are not read)."""
        return plan_actions(self.leaf, params, own, self.rules)


def make_planner_agent(name: str, leaf: LeafValue, params: Any, rules: Rules) -> Agent:
    """An agent that plans each turn exactly with `leaf(params, ...)` at the turn's end."""
    return Agent(name, PlannerPolicy(leaf, rules), params, rules)
