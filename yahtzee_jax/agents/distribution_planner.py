"""A turn planner for matches over a learned distribution of the score still to come
(`td-planner`'s match play, `algo.score_bins` > 0).

The solitaire planner (`agents.planner`) values the end of a turn by points + V(next
position). In a match the value of a turn's end is the chance to win, which is not additive in
points: it depends on the whole spread of my score to come and of every opponent's. This planner
reads a *distribution leaf*, `dist(params, mask, upper, flag) -> float32[..., bins]`, the
probability of each score still to come (0 .. bins - 1, the last bin holding the mass above)
from a turn-start position, and values writing roll r in box b as

    P(win) ~ sum_t P(my future = t | next position) * prod_i P(Y_i < my total + reward + t),

Y_i the final score of opponent i from its card's turn-start position, a draw counted as half
a win against each opponent (exact with one opponent, an approximation with several: a
three-way tie is rare). The keeps maximise the expected chance over the turn's re-rolls with
the solver's widget, as the win-seeker (`solver.win_policy`) does with the solver's tables;
here every number comes from the leaf, so with a learned leaf nothing reads a solver table.

Win chances within `solver.win_policy.TIE` of the best are equal, and the choice worth more
points (the turn's points plus the mean score to come) is taken, as the win-seeker takes it: a
decided match (every chance 1 or 0 in float32) is played for points, not by box order.

What is assumed: my future and each opponent's are independent and follow the leaf's
distribution (the learner's own solitaire play, not the opponent's; the optimal-solitaire
opponent plays within 1 % of it), and the opponents are read at their cards only (the dice
they hold in a turn are not looked at), as the win-seeker reads them.

Before the last turns (`MatchPlannerAct.early`) the planner plays as alone (`solitaire`) or
values a turn's end by a normal approximation (`normal`, the win-seeker's rule before its
endgame): P(win) ~ prod_i Phi((my total + reward + E[my future] - E[Y_i]) / sqrt(Var[my future]
+ Var[Y_i])), each mean the value leaf's V (the distribution's own mean, as a value, played 14
points worse) and each variance the distribution's. It gains little: 0.03 points of win rate
over 100,000 matches with td-planner-match-large, 0.10 for the win-seeker's exact tables
(`docs/td_planner/README.md`); most of what playing for the win gains is in the last turns.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any

import jax
import jax.numpy as jnp

from yahtzee_jax.envs.environment import Policy
from yahtzee_jax.game.engine import LAST_ROLL, State, current_score_options, total_score
from yahtzee_jax.game.rules import NUM_KEEP_ACTIONS, Rules
from yahtzee_jax.solver.final_rolls import score_transition
from yahtzee_jax.solver.moments import distinct_next_states, next_state_of_roll
from yahtzee_jax.solver.position import card_context
from yahtzee_jax.solver.widget_tables import score_all_rolls
from yahtzee_jax.solver.win_policy import (
    REWARD_BINS,
    below_or_half,
    best_by_chance_then_points,
    best_keep,
    win_probability,
)

EARLY_PLAY = ("solitaire", "normal")  # how the turns before the last ones are played

# dist(params, mask, upper, flag) -> probabilities of the score to come, float32[..., bins]
DistributionLeaf = Callable[[Any, jax.Array, jax.Array, jax.Array], jax.Array]
# value(params, mask, upper, flag) -> the expected score to come, float32[...]
ValueLeaf = Callable[[Any, jax.Array, jax.Array, jax.Array], jax.Array]
NormalLeaves = tuple[DistributionLeaf, ValueLeaf]  # the normal rule's variances and means


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


def _opponents(own: State, others: State, rules: Rules) -> tuple[tuple, jax.Array]:
    """The opponents' turn-start positions (mask, upper, flag, card full) and my lead over each
    (leading axis: opponents)."""
    context = jax.vmap(card_context, in_axes=(0, 0, None, None))
    positions = (*context(others.filled, others.scores, jnp, rules), jnp.all(others.filled, -1))
    lead = total_score(own, rules) - jax.vmap(total_score, in_axes=(0, None))(others, rules)
    return positions, lead


def _every_roll(own: State, rules: Rules) -> tuple[tuple, jax.Array, jax.Array]:
    """My card's position, and the reward of each of the 252 rolls in each box with its
    legality, [252, boxes]."""
    mask, upper, flag = card_context(own.filled, own.scores, jnp, rules)
    points, legal, bonus = score_all_rolls(own.filled, own.scores[rules.yahtzee_box], rules)
    boxes = jnp.arange(rules.num_boxes)[None, :]
    reward, _, _ = score_transition(boxes, points, upper, flag, jnp, rules)
    return (mask, upper, flag), reward + rules.yahtzee_bonus_points * bonus[:, None], legal


def _roll_in_hand(own: State, rules: Rules) -> tuple[jax.Array, tuple, jax.Array]:
    """The roll in hand's reward in each box, the positions it leads to (mask, upper, flag,
    game over) and its legality, [boxes]."""
    mask, upper, flag = card_context(own.filled, own.scores, jnp, rules)
    points, legal, bonus = current_score_options(own, rules)
    boxes = jnp.arange(rules.num_boxes)
    reward, next_upper, next_flag = score_transition(boxes, points, upper, flag, jnp, rules)
    last = jnp.broadcast_to(own.turns_left <= 1, boxes.shape)
    positions = (mask | (1 << boxes), next_upper, next_flag, last)
    return reward + rules.yahtzee_bonus_points * bonus, positions, legal


def _future_moments(
    leaves: NormalLeaves,
    params: Any,
    mask: jax.Array,
    upper: jax.Array,
    flag: jax.Array,
    over: jax.Array,
) -> tuple[jax.Array, jax.Array]:
    """Mean and variance of the score to come from turn-start positions: the mean is the value
    network's V (the distribution's own mean played 14 points worse as a value), the variance
    the distribution's; both 0 where `over`."""
    dist, value = leaves
    mass = _futures(dist, params, mask, upper, flag, over)
    points = jnp.arange(mass.shape[-1], dtype=mass.dtype)
    spread = mass @ (points * points) - (mass @ points) ** 2
    mean = jnp.where(over, 0.0, value(params, mask, upper, flag))
    return mean, jnp.maximum(spread, 0.0)


def _normal_chances(
    leaves: NormalLeaves,
    params: Any,
    own: State,
    others: State,
    rules: Rules,
    reward: jax.Array,
    future: tuple[jax.Array, jax.Array],
) -> jax.Array:
    """prod_i Phi((lead_i + reward + E[my future] - E[Y_i]) / sd) at any shape of `reward`,
    `future` the mean and variance of my score to come after each (same shape)."""
    positions, lead = _opponents(own, others, rules)
    their_mean, their_variance = _future_moments(leaves, params, *positions)  # [opponents]
    extra = (slice(None),) + (None,) * reward.ndim
    margin = (lead - their_mean)[extra] + reward + future[0]
    return jnp.prod(win_probability(margin, future[1] + their_variance[extra]), axis=0)


def _win_by_margin(
    dist: DistributionLeaf, params: Any, own: State, others: State, rules: Rules, bins: int
) -> jax.Array:
    """P(win) [bins + REWARD_BINS] by what my next turn start plus my future adds to my total
    (t + x), over every opponent: prod_i P(Y_i < mine + t + x) (+ half a tie each)."""
    positions, lead = _opponents(own, others, rules)
    theirs = _futures(dist, params, *positions)
    added = jnp.arange(bins + REWARD_BINS)
    per_opponent = jax.vmap(below_or_half, in_axes=(0, 0))(theirs, lead[:, None] + added)
    return jnp.prod(per_opponent, axis=0)


def turn_end_chances(
    dist: DistributionLeaf, params: Any, own: State, others: State, rules: Rules
) -> jax.Array:
    """Estimated P(win) after writing each of the 252 rolls in each box, float32[252, boxes],
    -inf where illegal, for one card `own` against the cards `others` (leading axis: opponents)."""
    return _turn_end(dist, params, own, others, rules)[0]


def _turn_end(
    dist: DistributionLeaf, params: Any, own: State, others: State, rules: Rules
) -> tuple[jax.Array, jax.Array]:
    """`turn_end_chances` and the points each choice is worth, [252, boxes]: its reward plus
    the mean of my future from the position it leads to."""
    position, reward, legal = _every_roll(own, rules)
    # My future from each of the distinct next positions (44 in Yahtzee), none after the last turn.
    states = distinct_next_states(*position, jnp, rules)
    mine = _futures(dist, params, *states, jnp.broadcast_to(own.turns_left <= 1, states[0].shape))
    bins = mine.shape[-1]
    win = _win_by_margin(dist, params, own, others, rules, bins)
    # by_state[s, x] = sum_t P(my future = t | s) P(win | t + x): one product for all rolls.
    window = jnp.arange(bins)[:, None] + jnp.arange(REWARD_BINS)[None, :]
    by_state = mine @ win[window]
    next_state = jnp.asarray(next_state_of_roll(rules))
    chances = by_state[next_state, jnp.clip(reward, 0, REWARD_BINS - 1)]
    points = reward + (mine @ jnp.arange(bins, dtype=mine.dtype))[next_state]
    return jnp.where(legal, chances, -jnp.inf), points


def score_chances(
    dist: DistributionLeaf, params: Any, own: State, others: State, rules: Rules
) -> jax.Array:
    """`turn_end_chances` of the roll in hand only, float32[boxes]: at a score decision the
    leaf is read at the 13 positions this roll leads to, not at every roll's."""
    return _in_hand(dist, params, own, others, rules)[0]


def _in_hand(
    dist: DistributionLeaf, params: Any, own: State, others: State, rules: Rules
) -> tuple[jax.Array, jax.Array]:
    """`score_chances` and the points each box is worth (as `_turn_end`'s), [boxes]."""
    reward, positions, legal = _roll_in_hand(own, rules)
    mine = _futures(dist, params, *positions)
    bins = mine.shape[-1]
    win = _win_by_margin(dist, params, own, others, rules, bins)
    clipped = jnp.clip(reward, 0, REWARD_BINS - 1)
    chances = jnp.sum(mine * win[clipped[:, None] + jnp.arange(bins)[None, :]], axis=-1)
    points = reward + mine @ jnp.arange(bins, dtype=mine.dtype)
    return jnp.where(legal, chances, -jnp.inf), points


def normal_turn_end_chances(
    leaves: NormalLeaves, params: Any, own: State, others: State, rules: Rules
) -> jax.Array:
    """`turn_end_chances` by the normal approximation of both futures, float32[252, boxes]."""
    return _normal_turn_end(leaves, params, own, others, rules)[0]


def _normal_turn_end(
    leaves: NormalLeaves, params: Any, own: State, others: State, rules: Rules
) -> tuple[jax.Array, jax.Array]:
    """`normal_turn_end_chances` and the points each choice is worth (reward + mean future)."""
    position, reward, legal = _every_roll(own, rules)
    states = distinct_next_states(*position, jnp, rules)
    last = jnp.broadcast_to(own.turns_left <= 1, states[0].shape)
    mean, variance = _future_moments(leaves, params, *states, last)
    next_state = jnp.asarray(next_state_of_roll(rules))
    future = (mean[next_state], variance[next_state])
    chances = _normal_chances(leaves, params, own, others, rules, reward, future)
    return jnp.where(legal, chances, -jnp.inf), reward + future[0]


def normal_score_chances(
    leaves: NormalLeaves, params: Any, own: State, others: State, rules: Rules
) -> jax.Array:
    """`score_chances` by the normal approximation of both futures, float32[boxes]."""
    return _normal_in_hand(leaves, params, own, others, rules)[0]


def _normal_in_hand(
    leaves: NormalLeaves, params: Any, own: State, others: State, rules: Rules
) -> tuple[jax.Array, jax.Array]:
    """`normal_score_chances` and the points each box is worth (reward + mean future)."""
    reward, positions, legal = _roll_in_hand(own, rules)
    future = _future_moments(leaves, params, *positions)
    chances = _normal_chances(leaves, params, own, others, rules, reward, future)
    return jnp.where(legal, chances, -jnp.inf), reward + future[0]


def _actions(turn_end: Callable, in_hand: Callable) -> tuple[Callable, Callable]:
    """The (keep, box) action functions of one card for a rule's turn-end chances and points
    [252, boxes] (`turn_end`) and the roll in hand's [boxes] (`in_hand`), both (leaf, params,
    own, others, rules) -> (chances, points)."""

    def keep(leaf: Any, params: Any, own: State, others: State, rules: Rules) -> jax.Array:
        """The keep with the highest expected chance at the turn's end."""
        return best_keep(*turn_end(leaf, params, own, others, rules), own)

    def box(leaf: Any, params: Any, own: State, others: State, rules: Rules) -> jax.Array:
        """The box with the highest chance for the roll in hand."""
        chances, points = in_hand(leaf, params, own, others, rules)
        return (NUM_KEEP_ACTIONS + best_by_chance_then_points(chances, points)).astype(jnp.int32)

    return keep, box


# The exact sum over the leaf's distributions (leaf: a DistributionLeaf), and the normal
# approximation (leaf: (DistributionLeaf, ValueLeaf)).
keep_action, box_action = _actions(_turn_end, _in_hand)
normal_keep_action, normal_box_action = _actions(_normal_turn_end, _normal_in_hand)


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
    """The policy of a match planner (own cards [B], the other cards [B, P-1]): the turns that
    leave at most `open_limit` boxes open are played for the win by the exact sum over the
    leaf's distributions, earlier ones by `early`: `solitaire` (the planner's own policy,
    `solitaire`, on its own card) or `normal` (`normal_keep_action`, `normal_box_action`).
    Alone (no other cards) it plays `solitaire`. Equal per (leaf, rules, limit, early), so
    `jit` reuses its program."""

    dist: DistributionLeaf
    rules: Rules
    solitaire: Policy
    open_limit: int
    early: str = "solitaire"
    value: ValueLeaf | None = None  # the mean of the score to come, for `early="normal"`

    def __post_init__(self) -> None:
        if self.early not in EARLY_PLAY:
            raise ValueError(f"early={self.early!r}; choose one of {', '.join(EARLY_PLAY)}")
        if self.early == "normal" and self.value is None:
            raise ValueError('early="normal" needs the value leaf (`value`)')

    def __call__(self, params: Any, own: State, others: State, keys: jax.Array) -> jax.Array:
        """The planner's actions for a batch of cards against their opponents."""
        if others.dice.shape[1] == 0:  # alone
            return self.solitaire(params, own, others, keys)
        scoring = own.roll_index == LAST_ROLL
        late = self.rules.num_boxes - jnp.sum(own.filled, axis=-1) - 1 <= self.open_limit

        def for_the_win(keep: Callable, box: Callable, leaf: Any) -> Callable[[], jax.Array]:
            args = (leaf, params, own, others, self.rules)
            keeps, boxes = (jax.vmap(f, in_axes=(None, None, 0, 0, None)) for f in (keep, box))
            return lambda: _only_where_needed(scoring, lambda: boxes(*args), lambda: keeps(*args))

        def as_alone() -> jax.Array:
            return self.solitaire(params, own, others, keys).astype(jnp.int32)

        early = as_alone
        if self.early == "normal":
            leaves = (self.dist, self.value)
            early = for_the_win(normal_keep_action, normal_box_action, leaves)
        return _only_where_needed(late, for_the_win(keep_action, box_action, self.dist), early)
