"""On-device agents built on the turn widget: the exact optimum and the greedy baselines.

Both compute the widget of each card of a batch in JAX (`widget_decisions`: once per distinct
turn-start state of the batch, and with a memory (`WidgetPolicy.step`, as `play_games` plays)
the last keep reads the keep values the turn's first keep computed; `widget_action` is the same
for one card). The
optimal agent values final rolls by points plus the solved future value (`params` is the
float32 value table); the greedy level-L agent of Kang & Schroeder (seed 001) values them by
this turn's reward only and re-rolls at most L-1 times.
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Callable
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from yahtzee_jax.agents.agent import Agent
from yahtzee_jax.agents.batching import WIDGET_CPU_BATCH_SIZE
from yahtzee_jax.errors import UserError
from yahtzee_jax.game.engine import LAST_ROLL, State, current_score_options
from yahtzee_jax.game.rules import (
    KEEP_ALL,
    NUM_DICE,
    NUM_FACES,
    NUM_KEEP_ACTIONS,
    Rules,
    get_rules,
)
from yahtzee_jax.solver.final_rolls import category_values, final_roll_values
from yahtzee_jax.solver.position import card_context, turn_values
from yahtzee_jax.solver.states import num_upper_totals
from yahtzee_jax.solver.value_table import solve
from yahtzee_jax.solver.widget import best_keep_values, keep_action_values
from yahtzee_jax.solver.widget_tables import (
    ADD_DIE,
    KEEP_OF_ACTION,
    NUM_FLAGS,
    NUM_KEEPS,
    ROLL_OF_CODE,
    base_points,
    dice_code,
    score_all_rolls,
    score_yahtzee_rolls,
)

MAX_REROLLS = LAST_ROLL  # two re-rolls per turn
GREEDY_LEVELS = (1, 2, 3)


def state_turn_values(
    value_table: jax.Array | None, state: State, rules: Rules
) -> tuple[jax.Array, jax.Array, jax.Array, jax.Array]:
    """The turn widget of one state's card: (category values [252, boxes], keep values with one
    and with two re-rolls left [462] each, index of the state's roll among the 252).

    The future counts only when the episode goes on after this turn (`turns_left > 1`); with
    `value_table` None the final rolls are valued by this turn's reward only.
    """
    future_weight = (state.turns_left > 1).astype(jnp.float32)
    values, last_keep, first_keep = turn_values(
        score_all_rolls(state.filled, state.scores[rules.yahtzee_box], rules),
        state.filled,
        state.scores,
        value_table,
        future_weight,
        jnp,
        rules,
    )
    roll = jnp.asarray(ROLL_OF_CODE)[dice_code(state.dice, jnp)]
    return values, last_keep, first_keep, roll


def widget_action(
    value_table: jax.Array | None, state: State, rules: Rules, max_rerolls: int
) -> jax.Array:
    """Best action of one state by the turn widget, re-rolling at most `max_rerolls` per turn.

    With `value_table` None the final rolls are valued by this turn's reward only. The future
    is ignored on an episode's last turn (`turns_left == 1`), e.g. in the single-turn task.
    """
    values, last_keep, first_keep, roll = state_turn_values(value_table, state, rules)
    score_action = NUM_KEEP_ACTIONS + jnp.argmax(values[roll])
    rerolls_left = jnp.clip(max_rerolls - state.roll_index, 0, MAX_REROLLS)
    keep_value = jnp.where(rerolls_left == MAX_REROLLS, first_keep, last_keep)
    best_keep = jnp.argmax(keep_action_values(keep_value, roll, jnp))
    keep_action = jnp.where(rerolls_left == 0, KEEP_ALL, best_keep)
    return jnp.where(state.roll_index == LAST_ROLL, score_action, keep_action).astype(jnp.int32)


# What a decision of the batch needs, by roll index and re-roll budget (see `_decision_kind`).
FIRST_KEEP, LAST_KEEP, KEEP_EVERYTHING, SCORE = range(4)


def _decision_kind(roll_index: jax.Array, max_rerolls: int) -> jax.Array:
    """FIRST_KEEP (two re-rolls left), LAST_KEEP (one), KEEP_EVERYTHING (none) or SCORE."""
    rerolls_left = jnp.clip(max_rerolls - roll_index, 0, MAX_REROLLS)
    keep_kind = jnp.array([KEEP_EVERYTHING, LAST_KEEP, FIRST_KEEP])[rerolls_left]
    return jnp.where(roll_index == LAST_ROLL, SCORE, keep_kind)


def _batch_final_values(value_table: jax.Array | None, states: State, rules: Rules) -> jax.Array:
    """Value of each final roll of each game's turn, float32[252, B] (`final_roll_values`)."""
    mask, upper_total, flag = jax.vmap(card_context, in_axes=(0, 0, None, None))(
        states.filled, states.scores, jnp, rules
    )
    yahtzee_box = states.scores[:, rules.yahtzee_box]
    points, legal, bonus = jax.vmap(score_yahtzee_rolls, in_axes=(0, 0, None))(
        states.filled, yahtzee_box, rules
    )
    yahtzee_options = (points.transpose(1, 2, 0), legal.transpose(1, 2, 0), bonus.T)
    future_weight = (states.turns_left > 1).astype(jnp.float32)

    def future(next_mask: jax.Array, next_upper: jax.Array, next_flag: jax.Array) -> jax.Array:
        if value_table is None:  # this turn only
            shape = jnp.broadcast_shapes(next_mask.shape, next_upper.shape, next_flag.shape)
            return jnp.zeros(shape, jnp.float32)
        return future_weight * value_table[next_mask, next_upper, next_flag]

    points = base_points(rules)
    return final_roll_values(mask, upper_total, flag, points, yahtzee_options, future, jnp, rules)


def first_best_action(value_of_action: Callable[[int], jax.Array]) -> jax.Array:
    """int32 index of the greatest of `NUM_KEEP_ACTIONS` values (`value_of_action(a)`, arrays of
    one shape), the first of equal values winning: `jnp.argmax` over the actions.

    A running maximum, one action's values at a time: XLA's CPU argmax (a reduction of value
    and index pairs) took thirty times as long in the decision table's build.
    """
    best = value_of_action(0)
    actions = jnp.zeros(best.shape, jnp.int32)
    for action in range(1, NUM_KEEP_ACTIONS):
        candidate = value_of_action(action)
        better = candidate > best  # strictly: the first of equal values stays
        best = jnp.where(better, candidate, best)
        actions = jnp.where(better, action, actions)
    return actions


def best_keeps(
    keep_value: jax.Array, roll: jax.Array, column: jax.Array | None = None
) -> jax.Array:
    """Best keep action of each game from keep values [462, columns] and its roll index [B]:
    game i reads column `column[i]` (default i)."""
    keeps = jnp.asarray(KEEP_OF_ACTION)[roll]  # [B, 32]
    column = jnp.arange(roll.shape[0]) if column is None else column
    values = keep_value[keeps, column[:, None]]
    return first_best_action(lambda action: values[:, action])


def score_actions(value_table: jax.Array | None, states: State, rules: Rules) -> jax.Array:
    """Best box of each game for its current roll (the score decision), a card at a time."""

    def one(state: State) -> jax.Array:
        points, legal, bonus = current_score_options(state, rules)
        mask, upper_total, flag = card_context(state.filled, state.scores, jnp, rules)
        future_weight = (state.turns_left > 1).astype(jnp.float32)
        values = category_values(
            points[None], legal[None], bonus[None], mask, upper_total, flag,
            value_table, future_weight, jnp, rules,
        )  # fmt: skip
        return NUM_KEEP_ACTIONS + jnp.argmax(values[0])

    return jax.vmap(one)(states)


def _keep_values(roll_values: jax.Array) -> jax.Array:
    """`widget.keep_values` in float32, with the same values in every compiled program.

    XLA on the CPU contracts a multiply feeding an add into one FMA wherever it fuses the two,
    so a layer's means (a sum times 1/6) added up in the next layer's sums would round by how
    the program around them happens to be fused: playing a decision at a time and a turn at a
    time chose different keeps at float32 near-ties. A select (which keeps every finite mean)
    between the product and the sums leaves XLA nothing to contract.
    """
    layers = [roll_values]
    for size in range(NUM_DICE - 1, -1, -1):
        larger = layers[0]
        mean = sum(larger[ADD_DIE[size][:, face]] for face in range(NUM_FACES)) / NUM_FACES
        layers.insert(0, jnp.where(mean == mean, mean, 0.0))
    return jnp.concatenate(layers, axis=0)


def last_keep_values(value_table: jax.Array | None, states: State, rules: Rules) -> jax.Array:
    """Keep values of each game's turn with one re-roll left, [462, B]."""
    return _keep_values(_batch_final_values(value_table, states, rules))


def first_keep_values(last_keep: jax.Array) -> jax.Array:
    """Keep values with two re-rolls left, [462, B], from those with one (`last_keep_values`)."""
    return _keep_values(best_keep_values(last_keep, jnp))


class TurnMemory(NamedTuple):
    """What a widget agent keeps from a turn's first keep for its last (`widget_decisions`):
    the keep values with one re-roll left (float32[462, columns], a column per distinct card,
    `plan_columns`), each card's column (int32[B]) and each card's key (`_state_keys`, int32[B];
    -1: nothing kept), which says whether the cards are still those the values are of."""

    last: jax.Array
    column: jax.Array
    keys: jax.Array


def empty_turn_memory(batch_size: int) -> TurnMemory:
    """A memory that holds nothing (no card's key is -1)."""
    return TurnMemory(
        jnp.zeros((NUM_KEEPS, plan_columns(batch_size)), jnp.float32),
        jnp.zeros(batch_size, jnp.int32),
        jnp.full(batch_size, -1, jnp.int32),
    )


def widget_decisions(
    value_table: jax.Array | None,
    states: State,
    rules: Rules,
    max_rerolls: int,
    memory: TurnMemory | None = None,
) -> tuple[jax.Array, TurnMemory | None]:
    """`widget_action` of a batch of states [B], computing only what their decision needs, and
    the memory for the same cards' next decision (None in, None out: nothing kept).

    The turn's values are built batch-minor ([252, B], [462, B]), once per distinct card of
    the batch (`_shared_first_keeps`), and only for the kinds of decision present (one kind in
    the lockstep play loop): the score decision needs the boxes of one roll, the last keep the
    final rolls and one keep layer pass, the first keep the whole widget. The card does not
    change within a turn, so the last keep's values are the ones the first keep built on: with a
    memory the first keep keeps them and the last keep reads them when every card is still the
    one they are of (its key unchanged), instead of computing them again.
    """
    roll = jnp.asarray(ROLL_OF_CODE)[dice_code(states.dice, jnp)]
    kinds = _decision_kind(states.roll_index, max_rerolls)
    keys = _state_keys(states, rules)
    nothing = jnp.zeros(roll.shape, jnp.int32)

    def first_keep() -> tuple[jax.Array, tuple[jax.Array, jax.Array]]:
        return _shared_first_keeps(value_table, states, rules, roll, True, keys)

    def computed_last_keep() -> jax.Array:
        return _shared_first_keeps(value_table, states, rules, roll, False, keys)[0]

    first_actions = nothing
    if memory is not None:
        # The first keeps before the other kinds, outside their loop, as a loop of at most
        # one pass: a loop updates the memory in place, where a `lax.cond` passing it through
        # on the other decisions copied its 462 x columns values each time.
        def remember(carry: tuple) -> tuple:
            actions, (last, column) = first_keep()
            return jnp.bool_(False), actions, TurnMemory(last, column.astype(jnp.int32), keys)

        pending = jnp.any(kinds == FIRST_KEEP)
        _, first_actions, memory = jax.lax.while_loop(
            lambda carry: carry[0], remember, (pending, nothing, memory)
        )
        kinds = jnp.where(kinds == FIRST_KEEP, SCORE + 1, kinds)  # decided

    def last_keep() -> jax.Array:
        if memory is None:
            return computed_last_keep()
        recalled = lambda: best_keeps(memory.last, roll, memory.column).astype(jnp.int32)  # noqa: E731
        return jax.lax.cond(jnp.all(memory.keys == keys), recalled, computed_last_keep)

    branches = [
        lambda: first_keep()[0],
        last_keep,
        lambda: jnp.full(roll.shape, KEEP_ALL, jnp.int32),
        lambda: score_actions(value_table, states, rules).astype(jnp.int32),
    ]

    # One pass per kind of decision present, smallest first: one pass in the lockstep loop.
    def decide_kind(carry: tuple[jax.Array, jax.Array]) -> tuple[jax.Array, jax.Array]:
        actions, done = carry
        kind = jnp.min(jnp.where(done, SCORE + 1, kinds))
        chosen = jax.lax.switch(jnp.minimum(kind, SCORE), branches)
        return jnp.where(kinds == kind, chosen, actions), done | (kinds == kind)

    start = (first_actions, kinds > SCORE)
    actions, _ = jax.lax.while_loop(lambda carry: ~jnp.all(carry[1]), decide_kind, start)
    return actions, memory


def widget_batch_actions(
    value_table: jax.Array | None, states: State, rules: Rules, max_rerolls: int
) -> jax.Array:
    """`widget_decisions` of a batch with no memory: `widget_action` of each state."""
    return widget_decisions(value_table, states, rules, max_rerolls)[0]


# A turn's keep values depend on the card's turn-start state only, not on the dice: the games
# of a batch that share one share them. Of 128 optimal Yatzy games (16,384 played, issue 46) a
# turn holds on average 1, 20, 85, 117, 125, 127, 127, 127, 127, 126, 123, 116, 99, 76 and 37
# distinct states, 75 % of the games' columns (52 % among 2,048 games, 46 % among 4,096).

# Distinct states computed together on a CPU, so that their [462, chunk] values stay in cache:
# Yatzy, batches of 4,096, 2-core AMD EPYC under load: 23K games per CPU-s in chunks of 64, 29K
# of 128, 27K of 256, 23K of 512. An accelerator computes the whole batch at once.
PLAN_CHUNK = 128


def plan_chunk(batch_size: int) -> int:
    """Distinct states a turn plan computes together (`PLAN_CHUNK` on a CPU, else all)."""
    return min(PLAN_CHUNK, batch_size) if jax.default_backend() == "cpu" else batch_size


def plan_columns(batch_size: int) -> int:
    """Columns of a turn plan's keep values: the batch rounded up to whole chunks."""
    chunk = plan_chunk(batch_size)
    return -(-batch_size // chunk) * chunk


def _state_keys(states: State, rules: Rules) -> jax.Array:
    """One int32 per card naming all its turn's keep values depend on: the filled mask, the
    capped upper total, the Yahtzee flag (the card's five-of-a-kind options follow from the
    mask and flag) and whether a future counts."""
    mask, upper_total, flag = jax.vmap(card_context, in_axes=(0, 0, None, None))(
        states.filled, states.scores, jnp, rules
    )
    future = (states.turns_left > 1).astype(jnp.int32)
    key = ((mask * num_upper_totals(rules) + upper_total) * NUM_FLAGS + flag) * 2 + future
    return key.astype(jnp.int32)


def _distinct_states(keys: jax.Array) -> tuple[jax.Array, jax.Array, jax.Array]:
    """(a card of each distinct key, then card 0 as padding [B]; each card's distinct index
    [B]; the number of distinct keys).

    One sort of the keys alone and a binary search back: XLA's CPU sort of one operand took
    0.05 ms for 2,048 keys, an argsort (two operands) 0.25-0.27.
    """
    size = keys.shape[0]
    ordered = jnp.sort(keys)
    is_new = jnp.concatenate([jnp.ones(1, bool), ordered[1:] != ordered[:-1]])
    group = jnp.cumsum(is_new) - 1
    slots = jnp.where(is_new, group, size)  # out of range: dropped
    distinct = jnp.full_like(keys, jnp.iinfo(keys.dtype).max).at[slots].set(ordered, mode="drop")
    inverse = jnp.searchsorted(distinct, keys).astype(jnp.int32)
    # Any card of a key will do: the keep values depend on the key alone.
    representative = jnp.zeros_like(inverse).at[inverse].set(jnp.arange(size, dtype=jnp.int32))
    return representative, inverse, group[-1] + 1


def _shared_first_keeps(
    value_table: jax.Array | None,
    states: State,
    rules: Rules,
    roll: jax.Array,
    first: bool,
    keys: jax.Array,
) -> tuple[jax.Array, tuple[jax.Array, jax.Array]]:
    """The best keeps of a turn's first decision, the keep values computed once per distinct
    turn-start state, and the plan: (keep values with one re-roll left [462, columns], the
    distinct states' first; each card's column [B]).

    `first`: two re-rolls are left (else one). The distinct states are computed a chunk at a
    time, only as many chunks as they fill: one compiled chunk, each the same values per column.
    """
    batch = roll.shape[0]
    chunk, columns = plan_chunk(batch), plan_columns(batch)
    representative, inverse, count = _distinct_states(keys)
    representative = jnp.pad(representative, (0, columns - batch))

    def compute_chunk(index: jax.Array, buffers: tuple) -> tuple:
        start = index * chunk
        cards_of = jax.lax.dynamic_slice_in_dim(representative, start, chunk)
        cards = jax.tree.map(lambda field: field[cards_of], states)
        last = last_keep_values(value_table, cards, rules)
        values = (last, first_keep_values(last)) if first else (last,)
        return tuple(
            jax.lax.dynamic_update_slice_in_dim(buffer, value, start, axis=1)
            for buffer, value in zip(buffers, values, strict=True)
        )

    empty = jnp.zeros((NUM_KEEPS, columns), jnp.float32)
    buffers = jax.lax.fori_loop(0, -(-count // chunk), compute_chunk, (empty,) * (1 + first))
    actions = best_keeps(buffers[-1], roll, inverse).astype(jnp.int32)
    return actions, (buffers[0], inverse)


@dataclasses.dataclass(frozen=True)
class WidgetPolicy:
    """The policy of a widget agent (`widget_batch_actions`: `widget_action` of each card, the
    batch sharing its work); equal per (rules, re-roll budget, future or not), so a new agent
    of the same kind reuses the compiled program (jit keys its cache on equal callables)."""

    rules: Rules
    max_rerolls: int
    with_future: bool
    cpu_batch_size = WIDGET_CPU_BATCH_SIZE  # read by `play_games`; not a field

    def __call__(self, params: Any, own: State, others: State, keys: jax.Array) -> jax.Array:
        """The widget's actions for a batch of cards (the other cards are not read)."""
        table = params if self.with_future else None
        return widget_batch_actions(table, own, self.rules, self.max_rerolls)

    def initial_memory(self, batch_size: int) -> TurnMemory:
        """What `step` is given at the first decision of a batch of cards: nothing kept."""
        return empty_turn_memory(batch_size)

    def step(
        self, params: Any, own: State, others: State, keys: jax.Array, memory: TurnMemory
    ) -> tuple[jax.Array, TurnMemory]:
        """`__call__` remembering a turn's keep values from its first keep for its last (the
        same actions: `widget_decisions`)."""
        table = params if self.with_future else None
        return widget_decisions(table, own, self.rules, self.max_rerolls, memory)


def make_optimal_agent(rules: str | Rules, cache_dir: str | os.PathLike | None = None) -> Agent:
    """The exact optimum: plays by the solved value table (solved or loaded from the cache)."""
    rules = get_rules(rules)
    table = solve(rules, cache_dir=cache_dir).value_table
    # float32 is plenty to rank actions; unreachable states (NaN) are never looked up in play.
    params = jnp.asarray(np.nan_to_num(table, nan=0.0), dtype=jnp.float32)
    policy = WidgetPolicy(rules, MAX_REROLLS, True)
    return Agent(name="optimal", policy=policy, params=params, rules=rules, optimal=True)


def make_greedy_agent(level: int, rules: str | Rules) -> Agent:
    """Kang & Schroeder's greedy level-`level` baseline: best this-turn score, <= level-1 re-rolls.

    Level 1 never re-rolls and scores the box worth most now; levels 2 and 3 re-roll at most once
    or twice, choosing the keeps that maximise this turn's expected reward (box points plus any
    upper or Yahtzee bonus it earns), ignoring later turns.
    """
    if level not in GREEDY_LEVELS:
        raise UserError(f"greedy level must be one of {GREEDY_LEVELS}, got {level!r}")
    rules = get_rules(rules)
    policy = WidgetPolicy(rules, level - 1, False)
    return Agent(name=f"greedy{level}", policy=policy, params=None, rules=rules)
