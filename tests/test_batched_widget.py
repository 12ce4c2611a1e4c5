"""The batched widget path against the per-state one it replaces in play.

`final_roll_values` (batch-minor, the future looked up per distinct next state) must equal the
per-roll, per-box `category_values` maximum, and `widget_batch_actions` (the policy of the optimal
and greedy agents) must pick the per-state `widget_action` of every position:
random cards with Yahtzees in the box and five-of-a-kinds in the dice (the Joker paths), every
roll index, last turns, under every rule variant; played with its memory (its keep values
computed once a turn), it plays the games its one call plays. A random value table
stands in for the solved one: the paths must agree on any table (the solver's own tests check
the real one).
"""

from __future__ import annotations

import dataclasses

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from yahtzee_jax.agents.agent import Agent, Remembering
from yahtzee_jax.agents.widget_agents import (
    WidgetPolicy,
    make_greedy_agent,
    widget_action,
    widget_batch_actions,
)
from yahtzee_jax.envs.environment import no_others
from yahtzee_jax.evaluation.records import play_games
from yahtzee_jax.game.engine import State
from yahtzee_jax.game.rules import (
    NUM_DICE,
    NUM_FACES,
    OFFICIAL,
    YAHTZEE_VARIANTS,
    Category,
    get_rules,
)
from yahtzee_jax.solver.position import card_context
from yahtzee_jax.solver.value_table import (
    category_values,
    final_roll_plan,
    final_roll_values,
    solver_final_roll_values,
)
from yahtzee_jax.solver.widget_tables import (
    NUM_FLAGS,
    ROLLS,
    WIDGET_ORDER,
    base_points,
    num_masks,
    score_all_rolls,
    score_yahtzee_rolls,
)

NUM_BOXES = OFFICIAL.num_boxes
NUM_MASKS = num_masks(OFFICIAL)

NUM_POSITIONS = 256


def random_positions(seed: int, roll_index: int | None) -> State:
    """Random positions: 0-12 boxes filled with the points of a random roll (the Yahtzee box 50
    half the time), a quarter of the dice five of a kind, a fifth of them on an episode's last
    turn. `roll_index` None mixes the three decisions in one batch."""
    rng = np.random.default_rng(seed)
    count = NUM_POSITIONS
    filled = rng.random((count, NUM_BOXES)) < rng.random((count, 1))
    filled[filled.all(axis=1), rng.integers(NUM_BOXES)] = False
    card_rolls = rng.integers(len(ROLLS), size=(count, NUM_BOXES))
    scores = base_points(OFFICIAL)[card_rolls, np.arange(NUM_BOXES)]
    scores[:, Category.YAHTZEE] = np.where(rng.random(count) < 0.5, OFFICIAL.yahtzee_score, 0)
    scores = np.where(filled, scores, 0)
    dice = np.sort(rng.integers(1, NUM_FACES + 1, size=(count, NUM_DICE)), axis=1)
    five_of_a_kind = rng.random(count) < 0.25
    dice[five_of_a_kind] = rng.integers(1, NUM_FACES + 1, size=(five_of_a_kind.sum(), 1))
    roll_indices = rng.integers(3, size=count) if roll_index is None else np.full(count, roll_index)
    open_boxes = (~filled).sum(axis=1)
    return State(
        dice=jnp.asarray(dice, jnp.int32),
        roll_index=jnp.asarray(roll_indices, jnp.int32),
        scores=jnp.asarray(scores, jnp.int32),
        filled=jnp.asarray(filled),
        yahtzee_bonus_count=jnp.zeros(count, jnp.int32),
        turns_left=jnp.asarray(np.where(rng.random(count) < 0.2, 1, open_boxes), jnp.int32),
        reward=jnp.zeros(count, jnp.int32),
        terminated=jnp.zeros(count, bool),
    )


def random_table(seed: int) -> jax.Array:
    """A float32 value table of plausible magnitude (0-300)."""
    rng = np.random.default_rng(seed)
    return jnp.asarray(300 * rng.random((NUM_MASKS, 64, NUM_FLAGS)), jnp.float32)


@pytest.mark.parametrize("variant", list(YAHTZEE_VARIANTS))
@pytest.mark.parametrize("with_table", [True, False], ids=["table", "this-turn"])
def test_final_roll_values_equal_the_per_box_maximum(variant, with_table):
    """Bit for bit in float32 (JAX), to 1e-12 in float64 (NumPy), on 256 random cards."""
    rules = get_rules(variant)
    states = random_positions(0, roll_index=2)
    table = random_table(1) if with_table else None

    @jax.jit
    def both(table, states):
        def per_card(state: State) -> jax.Array:
            options = score_all_rolls(state.filled, state.scores[Category.YAHTZEE], rules)
            mask, upper, flag = card_context(state.filled, state.scores, jnp, rules)
            weight = (state.turns_left > 1).astype(jnp.float32)
            values = category_values(*options, mask, upper, flag, table, weight, jnp, rules)
            return values.max(axis=1)

        mask, upper, flag = jax.vmap(card_context, in_axes=(0, 0, None, None))(
            states.filled, states.scores, jnp, rules
        )
        points, legal, bonus = jax.vmap(score_yahtzee_rolls, in_axes=(0, 0, None))(
            states.filled, states.scores[:, Category.YAHTZEE], rules
        )
        weight = (states.turns_left > 1).astype(jnp.float32)

        def future(next_mask, next_upper, next_flag):
            if table is None:
                shape = jnp.broadcast_shapes(next_mask.shape, next_upper.shape, next_flag.shape)
                return jnp.zeros(shape, jnp.float32)
            return weight * table[next_mask, next_upper, next_flag]

        yahtzee_options = (points.transpose(1, 2, 0), legal.transpose(1, 2, 0), bonus.T)
        points = base_points(rules)
        fast = final_roll_values(mask, upper, flag, points, yahtzee_options, future, jnp, rules)
        return fast, jax.vmap(per_card)(states).T, yahtzee_options, (mask, upper, flag)

    fast, reference, yahtzee_options, context = both(table, states)
    np.testing.assert_array_equal(np.asarray(fast), np.asarray(reference))

    # The solver's float64 NumPy path on the same cards.
    table64 = None if table is None else np.asarray(table, np.float64)
    weight = np.asarray(states.turns_left > 1, np.float64)

    def future64(next_mask, next_upper, next_flag):
        if table64 is None:
            return np.zeros(np.broadcast_shapes(next_mask.shape, next_upper.shape))
        return weight * table64[next_mask, next_upper, next_flag]

    context = tuple(np.asarray(part, np.int64) for part in context)
    numpy_options = tuple(np.asarray(part) for part in yahtzee_options)
    fast64 = final_roll_values(*context, base_points(rules), numpy_options, future64, np, rules)
    np.testing.assert_allclose(fast64, np.asarray(reference, np.float64), rtol=0, atol=1e-4)

    # The solver's hot loop: the same numbers to the last bit, rolls in `WIDGET_ORDER[5]`.
    plan = final_roll_plan(base_points(rules), rules)
    solver64 = solver_final_roll_values(*context, plan, numpy_options, future64)
    np.testing.assert_array_equal(solver64, fast64[WIDGET_ORDER[NUM_DICE]])


def test_solver_final_roll_values_hold_for_any_points():
    """`FinalRollPlan` groups the rolls by the points it is given, not by what it expects of
    them: random lower-box points (most of them 0, scattered over the roll order) give the
    generic path's values bit for bit too."""
    rng = np.random.default_rng(3)
    points = base_points(OFFICIAL).copy()
    lower = [box for box in range(6, NUM_BOXES) if box != Category.YAHTZEE]
    points[:, lower] = rng.integers(1, 40, size=(len(ROLLS), len(lower)))
    points[:, lower] *= rng.random((len(ROLLS), len(lower))) < 0.3
    count = 64
    mask = rng.integers(0, NUM_MASKS - 1, size=count)
    upper = rng.integers(0, 64, size=count)
    flag = rng.integers(0, NUM_FLAGS, size=count)
    table = 300 * rng.random((NUM_MASKS, 64, NUM_FLAGS))
    options = (
        rng.integers(0, 50, size=(6, NUM_BOXES, count)),
        rng.random((6, NUM_BOXES, count)) < 0.7,
        rng.random((6, count)) < 0.2,
    )

    def future(next_mask, next_upper, next_flag):
        return table[next_mask, next_upper, next_flag]

    generic = final_roll_values(mask, upper, flag, points, options, future, np, OFFICIAL)
    plan = final_roll_plan(points, OFFICIAL)
    fast = solver_final_roll_values(mask, upper, flag, plan, options, future)
    np.testing.assert_array_equal(fast, generic[WIDGET_ORDER[NUM_DICE]])


@pytest.mark.parametrize(
    ("variant", "max_rerolls", "with_table"),
    [
        ("official", 2, True),  # the optimal agent: first keep, last keep, score
        ("free-joker", 2, True),
        ("official", 1, False),  # greedy level 2: last keep, keep everything, score
    ],
)
def test_batch_actions_equal_the_per_state_widget(variant, max_rerolls, with_table):
    """Same action on every random position, in batches all at one decision (as in play) and
    in a batch mixing the three."""
    rules = get_rules(variant)
    table = random_table(2) if with_table else None

    @jax.jit
    def both(table, states):
        fast = widget_batch_actions(table, states, rules, max_rerolls)
        per_state = jax.vmap(lambda state: widget_action(table, state, rules, max_rerolls))
        return fast, per_state(states)

    for seed, roll_index in enumerate([0, 1, 2, None]):
        fast, reference = both(table, random_positions(10 + seed, roll_index))
        np.testing.assert_array_equal(np.asarray(fast), np.asarray(reference), str(roll_index))


def test_play_games_uses_the_batch_path_and_plays_the_same_games():
    """Greedy level 3 through `play_games`: its policy (the batched widget) and the per-state
    widget vmapped play identical games."""
    agent = make_greedy_agent(3, "official")

    def vmapped(params, own, others, keys):
        return jax.vmap(lambda state: widget_action(None, state, OFFICIAL, 2))(own)

    per_state = dataclasses.replace(agent, policy=vmapped)
    batched, reference = (play_games(a, 16, seed=5) for a in (agent, per_state))
    np.testing.assert_array_equal(batched.box_scores, reference.box_scores)
    np.testing.assert_array_equal(batched.turn_categories, reference.turn_categories)


@pytest.mark.parametrize(
    ("variant", "max_rerolls", "with_table"),
    [
        ("official", 2, True),  # the optimal agent: memory made at the first keep, read at the last
        pytest.param("yatzy", 2, True, marks=pytest.mark.slow),  # official's path, Yatzy's card
        ("official", 1, False),  # greedy level 2: the last keep at roll index 0, nothing kept
        # greedy level 1 keeps everything (nothing to remember); its games are checked bit for
        # bit in make test by tests/test_golden.py (greedy1), so this case waits for test-slow
        pytest.param("official", 0, False, marks=pytest.mark.slow),
    ],
)
def test_play_with_memory_equals_the_one_call(variant, max_rerolls, with_table):
    """`play_games` carries a widget agent's memory (`Remembering`: a turn's keep values from
    its first keep to its last); through the one call alone, every decision computed afresh,
    it plays the same games, bit for bit."""
    rules = get_rules(variant)
    table = random_table(4) if with_table else None
    policy = WidgetPolicy(rules, max_rerolls, with_table)
    assert isinstance(policy, Remembering)

    def one_call_only(params, own, others, keys):
        return policy(params, own, others, keys)

    agent = Agent("widget", policy, table, rules)
    plain = dataclasses.replace(agent, policy=one_call_only)
    remembered, fresh = (play_games(a, 96, seed=7, batch_size=32) for a in (agent, plain))
    np.testing.assert_array_equal(remembered.turn_categories, fresh.turn_categories)
    np.testing.assert_array_equal(remembered.turn_points, fresh.turn_points)
    np.testing.assert_array_equal(remembered.box_scores, fresh.box_scores)


def test_a_memory_of_other_cards_is_not_read():
    """A last keep given the memory of other cards' first keep (other turn-start states)
    chooses what the one call chooses, and given the memory of its own cards' first keep too:
    the memory is read only for the cards it is of, and then gives their own values."""
    rules = get_rules("official")
    table = random_table(5)
    policy = WidgetPolicy(rules, 2, True)
    others_first = random_positions(20, 0)
    last = random_positions(21, 1)
    own_first = last.replace(roll_index=jnp.zeros_like(last.roll_index))
    size = last.dice.shape[0]
    keys = jax.random.split(jax.random.key(0), size)
    step = jax.jit(policy.step)

    def memory_of(first: State):
        return step(table, first, no_others(first), keys, policy.initial_memory(size))[1]

    expected = np.asarray(jax.jit(policy)(table, last, no_others(last), keys))
    for first in (others_first, own_first):
        actions, _ = step(table, last, no_others(last), keys, memory_of(first))
        np.testing.assert_array_equal(np.asarray(actions), expected)
