"""The target-seeker: a match player that values each turn's end by its exact chance to win.

Against opponents whose play does not react to ours (the optimal-solitaire agent), each
opponent's final score has an exact distribution given its card: its total so far plus the
optimal agent's points still to come from its turn-start state, P(F >= d) = E_s(d), the
"expected" target table (`solver.target_table`). The best of them, Y, has P(Y <= y) = prod_k
P(Y_k <= y). Writing a roll in a box for r points leads to my next state s' and total X' = X + r;
I win when X' plus my points to come beats Y:

    W(s', X') = sum_y P(Y = y) R_s'(y + 1 - X'),   R_s'(d) = 1 for d <= 0,

R_s'(d) a chance of scoring at least d more points from s'. Two rows are exact pieces:
- `weight=0`, R = E (the "expected" table): my points to come under optimal expected-score play
  after this turn: W is what that play wins, a lower bound of this player's (it improves on it);
- `weight=1`, R = T (the "target" table): my best chance of at least d if I were told Y, the
  oracle's (`solver.ceiling`): an upper bound, played by re-planning every turn (hindsight).
A weight between mixes the rows (R = a T + (1 - a) E). When every opponent has at most one turn
left, it will have finished before my next decision, so Y is known there and hindsight is exact:
those turns read T whatever the weight (a second seat's last two turns, a first seat's last).
Within a turn the keeps maximise W's expectation over the rolls (the solver's widget, as the
win-seeker's, `solver.win_policy`); near ties go to the play worth more points.

The sum runs over d < `WINDOW`. R is non-increasing in d, so the part dropped is at most
R_s'(WINDOW) P(Y >= X' + WINDOW - 1): at the game's start T(640) E(640) = 2.6e-8 in official
Yahtzee. A keep values every roll's turn end: W on the grid of the 44 next states and every
reward (`turn_end_grid`, one matrix product with the rival's Hankel matrix); the score decision
only its roll's 13 (`win_chances`).
"""

from __future__ import annotations

import functools
import os
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from yahtzee_jax.errors import UserError
from yahtzee_jax.game.engine import LAST_ROLL, State, current_score_options, total_score
from yahtzee_jax.game.rules import NUM_KEEP_ACTIONS, Rules, get_rules
from yahtzee_jax.solver.final_rolls import score_transition
from yahtzee_jax.solver.moments import box_outcomes, distinct_next_states, next_state_of_roll
from yahtzee_jax.solver.position import card_context
from yahtzee_jax.solver.target_layout import target_layout
from yahtzee_jax.solver.target_table import target_tables
from yahtzee_jax.solver.value_table import solve
from yahtzee_jax.solver.widget_tables import score_all_rolls
from yahtzee_jax.solver.win_policy import REWARD_BINS, best_by_chance_then_points, best_keep

# Targets d = 1 .. WINDOW - 1 of my rows are summed (official's T(512) E(512) at the start is
# 3.9e-5, T(640) E(640) 2.6e-8: see the module's docstring).
WINDOW = 640


class TargetSeekerTables(NamedTuple):
    """What the target-seeker plays by, as device arrays (float32 chances)."""

    reach: jax.Array  # [size]: my rows R (T, E or a mix), laid out by `target_layout`
    best: jax.Array  # [size]: T, read in the turns where hindsight is exact
    follow: jax.Array  # [size]: E, the opponents' points to come
    rows: jax.Array  # int32[masks, totals, 2]: where a state's row starts (-1: unreachable)
    lengths: jax.Array  # int32[masks, totals, 2]: its length (most points to come + 1)
    value: jax.Array  # float32[masks, totals, 2]: V, the tie-break by points


@functools.lru_cache(maxsize=8)
def score_bins(rules: Rules) -> tuple[int, int]:
    """(the longest row, final scores 0 .. bins - 1): an opponent's points to come lie below
    the first, my totals plus a turn's reward and the window below the second."""
    longest = int(target_layout(rules).lengths.max())
    return longest, longest + WINDOW + REWARD_BINS


def check_weight(weight: float) -> float:
    """The hindsight weight, in [0, 1] (one line otherwise)."""
    if not 0.0 <= weight <= 1.0:
        raise UserError(f"the target-seeker's hindsight weight must lie in [0, 1], got {weight}")
    return float(weight)


def target_seeker_tables(
    rules: Rules, cache_dir: str | os.PathLike | None, weight: float
) -> TargetSeekerTables:
    """Both target tables of `rules` on the device (loaded from the cache, or solved: minutes)."""
    best = target_tables(rules, cache_dir, policy="target").flat
    follow = target_tables(rules, cache_dir, policy="expected").flat
    value = solve(rules, cache_dir=cache_dir).value_table
    return seeker_tables(rules, best, follow, value, weight)


def seeker_tables(
    rules: Rules, best: np.ndarray, follow: np.ndarray, value: np.ndarray, weight: float
) -> TargetSeekerTables:
    """`TargetSeekerTables` from the flat target (`best`) and expected (`follow`) tables and the
    value table (NaN, an unsolved state, read as 0)."""
    best32, follow32 = padded(best, rules), padded(follow, rules)
    reach = {1.0: best32, 0.0: follow32}.get(check_weight(weight))
    if reach is None:
        reach = weight * best32 + (1.0 - weight) * follow32
    layout = target_layout(rules)
    return TargetSeekerTables(
        reach=reach,
        best=best32,
        follow=follow32,
        rows=jnp.asarray(layout.rows, jnp.int32),
        lengths=jnp.asarray(layout.lengths, jnp.int32),
        value=jnp.asarray(np.nan_to_num(value), jnp.float32),
    )


def padded(flat: np.ndarray, rules: Rules) -> jax.Array:
    """A flat table as float32 (NaN, unsolved, as 0) with zeros after its end: a row's window
    is sliced whole, and a slice may not run past the array (XLA would move it back). Both
    slices fit: the rival's (the longest row) and mine (`WINDOW - 1` after a row's first
    entry), the longer where rows are shorter than the window (a game of few boxes)."""
    out = np.zeros(len(flat) + max(score_bins(rules)[0], WINDOW) + 1, np.float32)
    out[: len(flat)] = flat
    return jnp.asarray(np.nan_to_num(out, copy=False))


def final_score_cdf(tables: TargetSeekerTables, card: State, rules: Rules) -> jax.Array:
    """P(Y <= y), y = 0 .. bins - 1, of one card's final score Y under optimal expected-score
    play from its turn start (its total so far plus the points to come)."""
    longest, bins = score_bins(rules)
    state = card_context(card.filled, card.scores, jnp, rules)
    row, length = jnp.maximum(tables.rows[state], 0), tables.lengths[state]
    targets = jnp.arange(1, longest + 1)
    row_from_one = jax.lax.dynamic_slice(tables.follow, (row + 1,), (longest,))
    at_least = jnp.where(targets < length, row_from_one, 0.0)  # P(F >= d)
    to_come = jnp.arange(bins) - total_score(card, rules)
    # P(F <= f) = 1 - P(F >= f + 1); past the longest row nothing is left to come.
    index = jnp.clip(to_come, 0, longest - 1)
    return jnp.where(to_come < 0, 0.0, 1.0 - at_least[index])


def best_rival_distribution(
    tables: TargetSeekerTables, others: State, rules: Rules
) -> tuple[jax.Array, jax.Array]:
    """(P(Y = y), P(Y <= y)) of the best of the other cards' final scores [K] (independent)."""
    cdf = jnp.prod(jax.vmap(final_score_cdf, in_axes=(None, 0, None))(tables, others, rules), 0)
    return jnp.diff(cdf, prepend=0.0), cdf


def _window(table: jax.Array, start: jax.Array) -> jax.Array:
    """`WINDOW - 1` entries of a flat table from `start`: one slice a row (a gather of whole
    windows, not of each element)."""
    return jax.lax.dynamic_slice(table, (start,), (WINDOW - 1,))


def my_rows(
    tables: TargetSeekerTables,
    states: tuple[jax.Array, jax.Array, jax.Array],
    exact: jax.Array,
    mixed: bool,
) -> jax.Array:
    """R_s'(d), d = 1 .. WINDOW - 1, of next states [n] (mask, upper, flag), [n, d]: T where
    `exact` (the rivals done by then) or my rows are T already, else the mixed rows (`mixed`,
    static); 0 past a row's end."""
    rows, lengths = jnp.maximum(tables.rows[states], 0), tables.lengths[states]
    chances = jax.vmap(_window, in_axes=(None, 0))(tables.best, rows + 1)
    if mixed:
        mine = jax.vmap(_window, in_axes=(None, 0))(tables.reach, rows + 1)
        chances = jnp.where(exact, chances, mine)
    return jnp.where(jnp.arange(1, WINDOW) < lengths[:, None], chances, 0.0)


def win_chances(
    tables: TargetSeekerTables,
    states: tuple[jax.Array, jax.Array, jax.Array],
    totals: jax.Array,
    rival: tuple[jax.Array, jax.Array],
    exact: jax.Array,
    mixed: bool,
) -> jax.Array:
    """W(s', X') of turn ends [n]: next states (mask, upper, flag) and my totals there, against
    the best rival's final-score distribution (`my_rows` says which rows are read)."""
    pmf, cdf = rival
    bins = cdf.shape[-1]
    chances = my_rows(tables, states, exact, mixed)
    # I win when Y = X' - 1 + d and I score at least d more (d >= 1), or when Y < X' already.
    rivals = jax.vmap(_window, in_axes=(None, 0))(pmf, jnp.clip(totals, 0, bins - WINDOW))
    below = jnp.where(totals >= 1, cdf[jnp.clip(totals - 1, 0, bins - 1)], 0.0)
    return below + jnp.sum(chances * rivals, axis=-1)


def turn_end_grid(
    tables: TargetSeekerTables,
    states: tuple[jax.Array, jax.Array, jax.Array],
    total: jax.Array,
    rival: tuple[jax.Array, jax.Array],
    exact: jax.Array,
    mixed: bool,
) -> jax.Array:
    """W(s', total + r) of next states [S] and every reward r = 0 .. REWARD_BINS - 1, [S, r]:
    `win_chances` on a grid, as one product of my rows [S, d] with the rival's Hankel matrix
    P(Y = total + r - 1 + d) [r, d] (a matrix product, where a window a turn end is a gather)."""
    pmf, cdf = rival
    chances = my_rows(tables, states, exact, mixed)
    # Row r of the Hankel matrix is the rival's P(Y = total + r + i), i = 0 .. WINDOW - 2: one
    # slice tiled and cut at a stride of span + 1 (a copy, not a gather).
    span = REWARD_BINS + WINDOW - 1
    ahead = jax.lax.dynamic_slice(pmf, (total,), (span,))
    hankel = jnp.tile(ahead, REWARD_BINS + 1)[: REWARD_BINS * (span + 1)]
    hankel = hankel.reshape(REWARD_BINS, span + 1)[:, : WINDOW - 1]
    # P(Y <= total + r - 1): the rival's cdf moved one place (0 before score 0).
    below = jax.lax.dynamic_slice(jnp.concatenate([jnp.zeros(1), cdf]), (total,), (REWARD_BINS,))
    return below + chances @ hankel.T


def keep_action(
    tables: TargetSeekerTables,
    own: State,
    rival: tuple[jax.Array, jax.Array],
    exact: jax.Array,
    mixed: bool,
    rules: Rules,
) -> jax.Array:
    """The keep of one card with the highest expected W at its turn's end."""
    mask, upper, flag = card_context(own.filled, own.scores, jnp, rules)
    points, legal, bonus = score_all_rolls(own.filled, own.scores[rules.yahtzee_box], rules)
    value_pair = (tables.value, tables.value)
    reward, future, _ = box_outcomes(
        points, legal, bonus, mask, upper, flag, value_pair, jnp, rules
    )
    after = distinct_next_states(mask, upper, flag, jnp, rules)
    grid = turn_end_grid(tables, after, total_score(own, rules), rival, exact, mixed)
    next_state = jnp.asarray(next_state_of_roll(rules))
    chances = grid[next_state, jnp.clip(reward, 0, REWARD_BINS - 1)]
    return best_keep(jnp.where(legal, chances, -jnp.inf), reward + future, own)


def score_action(
    tables: TargetSeekerTables,
    own: State,
    rival: tuple[jax.Array, jax.Array],
    exact: jax.Array,
    mixed: bool,
    rules: Rules,
) -> jax.Array:
    """The box of one card's final roll with the highest W (near ties: the most points)."""
    mask, upper, flag = card_context(own.filled, own.scores, jnp, rules)
    points, legal, bonus = current_score_options(own, rules)
    boxes = jnp.arange(rules.num_boxes)
    reward, next_upper, next_flag = score_transition(boxes, points, upper, flag, jnp, rules)
    reward = reward + rules.yahtzee_bonus_points * bonus
    states = (mask | (1 << boxes), next_upper, next_flag)
    chances = win_chances(tables, states, total_score(own, rules) + reward, rival, exact, mixed)
    worth = reward + tables.value[states]
    chosen = best_by_chance_then_points(jnp.where(legal, chances, -jnp.inf), worth)
    return (NUM_KEEP_ACTIONS + chosen).astype(jnp.int32)


def make_target_seeker(
    rules: str | Rules, cache_dir: str | os.PathLike | None, weight: float
) -> tuple[Any, TargetSeekerTables]:
    """A match policy (tables, own cards [B], the other cards [B, K], keys) -> actions [B],
    each turn for the highest W against the best of the K others (see the module's
    docstring), and its tables (its parameters: arguments of the compiled program)."""
    rules = get_rules(rules)
    weight = check_weight(weight)
    return target_seeker_policy(rules, weight), target_seeker_tables(rules, cache_dir, weight)


def target_seeker_policy(rules: Rules, weight: float) -> Any:
    """The target-seeker's policy for tables of this hindsight weight (`make_target_seeker`)."""
    mixed = check_weight(weight) != 1.0

    def one(tables: TargetSeekerTables, own: State, others: State, scoring: bool) -> jax.Array:
        rival = best_rival_distribution(tables, others, rules)
        # Each other card with at most one turn left will have finished by my next decision.
        exact = jnp.all(jnp.sum(others.filled, axis=-1) >= rules.num_boxes - 1)
        act = score_action if scoring else keep_action
        return act(tables, own, rival, exact, mixed, rules)

    def policy(tables: TargetSeekerTables, own: State, others: State, keys: jax.Array) -> jax.Array:
        # Lockstep matches take one kind of decision at a time: one branch runs.
        scoring = own.roll_index == LAST_ROLL
        branches = [
            functools.partial(
                jax.vmap(functools.partial(one, scoring=kind), in_axes=(None, 0, 0)),
                tables,
                own,
                others,
            )
            for kind in (False, True)
        ]

        def mixed_kinds() -> jax.Array:
            return jnp.where(scoring, branches[1](), branches[0]())

        uniform = jnp.all(scoring == scoring[0])
        return jax.lax.cond(
            uniform, lambda: jax.lax.switch(scoring[0].astype(jnp.int32), branches), mixed_kinds
        )

    return policy
