"""A turn planner for matches over a learned distribution of the score still to come.

The solitaire planner (`agents.planner`) values the end of a turn by points + V(next position).
In a match the value of a turn's end is the chance to win, which is not additive in points: it
depends on the whole spread of my score to come and of every opponent's. This planner reads a
*distribution leaf*, `dist(params, mask, upper, flag) -> float32[..., bins]`, the probability
of each score still to come (0 .. bins - 1, the last bin holding the mass above) from a
turn-start position, and values writing roll r in box b as

    P(win) ~ sum_t P(my future = t | next position) * prod_i P(Y_i < my total + reward + t),

Y_i the final score of opponent i from its card's turn-start position, a draw counted as half
a win against each opponent (exact with one opponent, an approximation with several: a
three-way tie is rare). The keeps maximise the expected chance over the turn's re-rolls with
the solver's widget, as the win-seeker (`solver.win_seeker`) does with the solver's tables;
here every number comes from the leaf, so with a learned leaf nothing reads a solver table.

What is assumed: my future and each opponent's are independent and follow the leaf's
distribution (the learner's own solitaire play, not the opponent's; the optimal-solitaire
opponent plays within 1 % of it), and the opponents are read at their cards only (the dice
they hold in a turn are not looked at), as the win-seeker reads them.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any

import jax
import jax.numpy as jnp

from yahtzee_jax.game.engine import LAST_ROLL, State, current_score_options, total_score
from yahtzee_jax.game.rules import NUM_KEEP_ACTIONS, Rules
from yahtzee_jax.solver.final_rolls import score_transition
from yahtzee_jax.solver.moments import distinct_next_states, next_state_of_roll
from yahtzee_jax.solver.position import card_context
from yahtzee_jax.solver.tables import ROLL_OF_CODE, dice_code, score_all_rolls
from yahtzee_jax.solver.widget import keep_action_values, turn_keep_values
from yahtzee_jax.solver.win_seeker import REWARD_BINS, below_or_half

# dist(params, mask, upper, flag) -> probabilities of the score to come, float32[..., bins]
DistributionLeaf = Callable[[Any, jax.Array, jax.Array, jax.Array], jax.Array]


def _futures(
    dist: DistributionLeaf,
    params: Any,
    mask: jax.Array,
    upper: jax.Array,
    flag: jax.Array,
    over: jax.Array,
) -> jax.Array:
    """The leaf's distributions [..., bins], all mass at 0 where `over` (nothing left to play)."""
    mass = dist(params, mask, upper, flag)
    nothing = jax.nn.one_hot(0, mass.shape[-1], dtype=mass.dtype)
    return jnp.where(over[..., None], nothing, mass)


def _win_by_margin(
    dist: DistributionLeaf, params: Any, own: State, others: State, rules: Rules, bins: int
) -> jax.Array:
    """P(win) [bins + REWARD_BINS] by what my next turn start plus my future adds to my total
    (t + x), over every opponent: prod_i P(Y_i < mine + t + x) (+ half a tie each)."""
    context = jax.vmap(card_context, in_axes=(0, 0, None, None))
    theirs = _futures(
        dist,
        params,
        *context(others.filled, others.scores, jnp, rules),
        jnp.all(others.filled, axis=-1),
    )
    lead = total_score(own, rules) - jax.vmap(total_score, in_axes=(0, None))(others, rules)
    added = jnp.arange(bins + REWARD_BINS)
    per_opponent = jax.vmap(below_or_half, in_axes=(0, 0))(theirs, lead[:, None] + added)
    return jnp.prod(per_opponent, axis=0)


def turn_end_chances(
    dist: DistributionLeaf, params: Any, own: State, others: State, rules: Rules
) -> jax.Array:
    """Estimated P(win) after writing each of the 252 rolls in each box, float32[252, boxes],
    -inf where illegal, for one card `own` against the cards `others` (leading axis: opponents)."""
    mask, upper, flag = card_context(own.filled, own.scores, jnp, rules)
    points, legal, bonus = score_all_rolls(own.filled, own.scores[rules.yahtzee_box], rules)
    boxes = jnp.arange(rules.num_boxes)[None, :]
    reward, _, _ = score_transition(boxes, points, upper, flag, jnp, rules)
    reward = reward + rules.yahtzee_bonus_points * bonus[:, None]
    # My future from each of the distinct next positions (44 in Yahtzee), none after the last turn.
    states = distinct_next_states(mask, upper, flag, jnp, rules)
    mine = _futures(dist, params, *states, jnp.broadcast_to(own.turns_left <= 1, states[0].shape))
    bins = mine.shape[-1]
    win = _win_by_margin(dist, params, own, others, rules, bins)
    # by_state[s, x] = sum_t P(my future = t | s) P(win | t + x): one product for all rolls.
    window = jnp.arange(bins)[:, None] + jnp.arange(REWARD_BINS)[None, :]
    by_state = mine @ win[window]
    next_state = jnp.asarray(next_state_of_roll(rules))
    chances = by_state[next_state, jnp.clip(reward, 0, REWARD_BINS - 1)]
    return jnp.where(legal, chances, -jnp.inf)


def score_chances(
    dist: DistributionLeaf, params: Any, own: State, others: State, rules: Rules
) -> jax.Array:
    """`turn_end_chances` of the roll in hand only, float32[boxes]: at a score decision the
    leaf is read at the 13 positions this roll leads to, not at every roll's."""
    mask, upper, flag = card_context(own.filled, own.scores, jnp, rules)
    points, legal, bonus = current_score_options(own, rules)
    boxes = jnp.arange(rules.num_boxes)
    reward, next_upper, next_flag = score_transition(boxes, points, upper, flag, jnp, rules)
    reward = jnp.clip(reward + rules.yahtzee_bonus_points * bonus, 0, REWARD_BINS - 1)
    last = jnp.broadcast_to(own.turns_left <= 1, boxes.shape)
    mine = _futures(dist, params, mask | (1 << boxes), next_upper, next_flag, last)
    bins = mine.shape[-1]
    win = _win_by_margin(dist, params, own, others, rules, bins)
    chances = jnp.sum(mine * win[reward[:, None] + jnp.arange(bins)[None, :]], axis=-1)
    return jnp.where(legal, chances, -jnp.inf)


def keep_action(
    dist: DistributionLeaf, params: Any, own: State, others: State, rules: Rules
) -> jax.Array:
    """The keep of one card with the highest expected P(win) at its turn's end."""
    chances = turn_end_chances(dist, params, own, others, rules)
    roll = jnp.asarray(ROLL_OF_CODE)[dice_code(own.dice, jnp)]
    last_keep, first_keep = turn_keep_values(chances.max(axis=1), jnp)
    keep_value = jnp.where(own.roll_index == 0, first_keep, last_keep)
    return jnp.argmax(keep_action_values(keep_value, roll, jnp)).astype(jnp.int32)


def box_action(
    dist: DistributionLeaf, params: Any, own: State, others: State, rules: Rules
) -> jax.Array:
    """The box of one card at its score decision with the highest P(win)."""
    chances = score_chances(dist, params, own, others, rules)
    return (NUM_KEEP_ACTIONS + jnp.argmax(chances)).astype(jnp.int32)


def _only_where_needed(chosen: jax.Array, first: Callable, second: Callable) -> jax.Array:
    """`first()` where `chosen`, `second()` elsewhere, computing only what some card needs (a
    lockstep batch is mostly at one kind of decision)."""

    def mixed() -> jax.Array:
        return jnp.where(chosen, first(), second())

    return jax.lax.cond(
        jnp.all(chosen), first, lambda: jax.lax.cond(jnp.any(chosen), mixed, second)
    )


@dataclasses.dataclass(frozen=True)
class MatchPlannerAct:
    """`match_act` of a match planner (own cards [B], opponents' [B] or [B, P-1]): the turns
    that leave at most `open_limit` boxes open are played for the win, earlier ones by
    `solitaire` (the planner's batch act on its own card). Equal per (leaf, rules, limit), so
    `jit` reuses its program."""

    dist: DistributionLeaf
    rules: Rules
    solitaire: Callable[[Any, State, jax.Array], jax.Array]
    open_limit: int

    def __call__(self, params: Any, own: State, others: State, keys: jax.Array) -> jax.Array:
        """The planner's actions for a batch of cards against their opponents."""
        if others.dice.ndim == own.dice.ndim:  # one opponent: give it its own axis
            others = jax.tree.map(lambda leaf: leaf[:, None], others)
        args = (self.dist, params, own, others, self.rules)
        keeps, boxes = (
            jax.vmap(f, in_axes=(None, None, 0, 0, None)) for f in (keep_action, box_action)
        )
        scoring = own.roll_index == LAST_ROLL
        late = self.rules.num_boxes - jnp.sum(own.filled, axis=-1) - 1 <= self.open_limit

        def for_the_win() -> jax.Array:
            return _only_where_needed(scoring, lambda: boxes(*args), lambda: keeps(*args))

        return _only_where_needed(
            late, for_the_win, lambda: self.solitaire(params, own, keys).astype(jnp.int32)
        )
