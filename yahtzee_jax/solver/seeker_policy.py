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
A weight between mixes the rows (R = a T + (1 - a) E), one weight for every turn or a schedule:
a weight for each of my turns (the boxes I have filled) and seat (whether another card has more
boxes filled, i.e. played this round before me), such as one fit to what the turn ends of played
matches won (`experiments/seeker_calibration.py`). When every opponent has at most one turn
left, it will have finished before my next decision, so Y is known there and hindsight is exact:
those turns read T whatever the weight (a second seat's last two turns, a first seat's last).
With one opponent, the first seat's second-to-last turn (both cards two boxes open) is solved
exactly against the opponent's turn between (`solver.joint_endgame`, where its tables are given):
from there on every turn of a two-player match is exact.
Within a turn the keeps maximise W's expectation over the rolls (the solver's widget, as the
win-seeker's, `solver.win_policy`); near ties go to the play worth more points.

The sum runs over d < `WINDOW`. R is non-increasing in d, so the part dropped is at most
R_s'(WINDOW) P(Y >= X' + WINDOW - 1): at the game's start T(640) E(640) = 2.6e-8 in official
Yahtzee. A keep values every roll's turn end: W of each distinct one once (187 of the 252 x 13
in Yahtzee, `moments.distinct_turn_ends`), a few cards at a time (`CARDS_AT_ONCE`); the score
decision only its roll's 13 (`win_chances`).
"""

from __future__ import annotations

import functools
import os
from pathlib import Path
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from yahtzee_jax.errors import UserError
from yahtzee_jax.game.engine import LAST_ROLL, State, current_score_options, total_score
from yahtzee_jax.game.rules import NUM_KEEP_ACTIONS, Rules, get_rules
from yahtzee_jax.solver.final_rolls import score_transition
from yahtzee_jax.solver.joint_endgame import (
    JointEndgame,
    in_joint_endgame,
    joint_chances,
    joint_endgame_tables,
    joint_roll_chances,
    opponent_turn,
)
from yahtzee_jax.solver.moments import box_outcomes, distinct_next_states, distinct_turn_ends
from yahtzee_jax.solver.position import card_context
from yahtzee_jax.solver.target_layout import target_layout
from yahtzee_jax.solver.target_table import target_tables
from yahtzee_jax.solver.value_table import solve
from yahtzee_jax.solver.widget_tables import score_all_rolls
from yahtzee_jax.solver.win_policy import REWARD_BINS, best_by_chance_then_points, best_keep

# Targets d = 1 .. WINDOW - 1 of my rows are summed (official's T(512) E(512) at the start is
# 3.9e-5, T(640) E(640) 2.6e-8: see the module's docstring).
WINDOW = 640
# Cards decided at once: a keep's turn ends of a few cards stay in the CPU's cache, where a
# whole batch's (2,000 cards x 187 turn ends x 639 chances) went through memory: a keep alone
# took 113 us a card in chunks of 16, 431 as one batch (2-core AMD EPYC, 2026-12-02; 32 cards
# at once played as fast as 16 within the machine's noise, 8 slower).
CARDS_AT_ONCE = 16
# Where a card is in the joint endgame and the opponent's turn to come (`opponent_turn`), or
# None where the joint endgame is not played.
Joint = tuple[jax.Array, tuple[jax.Array, jax.Array, jax.Array]] | None


class TargetSeekerTables(NamedTuple):
    """What the target-seeker plays by, as device arrays (float32 chances)."""

    weights: jax.Array  # [boxes, 2]: T's share of my rows by my filled boxes and seat (1: after)
    best: jax.Array  # [size]: T, laid out by `target_layout`; read where hindsight is exact
    follow: jax.Array  # [size]: E, the opponents' points to come (and my rows' other part)
    rows: jax.Array  # int32[masks, totals, 2]: where a state's row starts (-1: unreachable)
    lengths: jax.Array  # int32[masks, totals, 2]: its length (most points to come + 1)
    value: jax.Array  # float32[masks, totals, 2]: V, the tie-break by points
    joint: JointEndgame | None  # the exact joint endgame (two players), or None: hindsight there


@functools.lru_cache(maxsize=8)
def score_bins(rules: Rules) -> tuple[int, int]:
    """(the longest row, final scores 0 .. bins - 1): an opponent's points to come lie below
    the first, my totals plus a turn's reward and the window below the second."""
    longest = int(target_layout(rules).lengths.max())
    return longest, longest + WINDOW + REWARD_BINS


def check_weight(weight: Any, rules: Rules) -> np.ndarray:
    """The hindsight weights float32[boxes, 2] (my filled boxes, seat) of one weight for every
    turn or of a schedule of that shape, each in [0, 1] (one line otherwise)."""
    table = np.asarray(weight, np.float64)
    shape = (rules.num_boxes, 2)
    if table.ndim == 0:
        table = np.full(shape, table)
    if table.shape != shape:
        raise UserError(
            f"a hindsight schedule has a weight for each of {rules.num_boxes} turns and 2 "
            f"seats, shape {list(shape)}; got shape {list(table.shape)}"
        )
    outside = table[~((table >= 0.0) & (table <= 1.0))]  # NaN too
    if outside.size:
        raise UserError(
            f"the target-seeker's hindsight weights must lie in [0, 1], got {outside[0]}"
        )
    return table.astype(np.float32)


def schedule_from_file(path: str | os.PathLike, rules: Rules) -> np.ndarray:
    """The hindsight schedule [boxes, 2] of a JSON file's "weights" (such as the calibration's,
    `experiments/seeker_calibration.py`), checked (one line when unreadable or wrong)."""
    import json

    try:
        weights = json.loads(Path(path).read_text())["weights"]
    except (OSError, ValueError, KeyError, TypeError) as error:
        detail = f"no {error}" if isinstance(error, KeyError) else type(error).__name__
        raise UserError(f"--hindsight-schedule {path}: not a schedule's JSON ({detail})") from None
    try:
        table = np.asarray(weights, np.float64)
    except (TypeError, ValueError):  # ragged lists, text
        raise UserError(f"--hindsight-schedule {path}: its weights are not a table") from None
    return check_weight(table, rules)


def is_mixed(weight: Any) -> bool:
    """Whether my rows read E as well as T (some weight below 1): a static choice."""
    return bool(np.any(np.asarray(weight) != 1.0))


def target_seeker_tables(
    rules: Rules, cache_dir: str | os.PathLike | None, weight: Any, joint: bool
) -> TargetSeekerTables:
    """Both target tables of `rules` on the device (loaded from the cache, or solved: minutes),
    and with `joint` the joint endgame's (`solver.joint_endgame`, cached too)."""
    best = target_tables(rules, cache_dir, policy="target").flat
    follow = target_tables(rules, cache_dir, policy="expected").flat
    value = solve(rules, cache_dir=cache_dir).value_table
    endgame = joint_endgame_tables(rules, cache_dir, follow) if joint else None
    return seeker_tables(rules, best, follow, value, weight, endgame)


def seeker_tables(
    rules: Rules,
    best: np.ndarray,
    follow: np.ndarray,
    value: np.ndarray,
    weight: Any,
    joint: JointEndgame | None = None,
) -> TargetSeekerTables:
    """`TargetSeekerTables` from the flat target (`best`) and expected (`follow`) tables, the
    value table (NaN, an unsolved state, read as 0), the hindsight weight or schedule and the
    joint endgame's tables (None: hindsight there too)."""
    layout = target_layout(rules)
    return TargetSeekerTables(
        weights=jnp.asarray(check_weight(weight, rules)),
        best=padded(best, rules),
        follow=padded(follow, rules),
        rows=jnp.asarray(layout.rows, jnp.int32),
        lengths=jnp.asarray(layout.lengths, jnp.int32),
        value=jnp.asarray(np.nan_to_num(value), jnp.float32),
        joint=joint,
    )


def padded(flat: np.ndarray, rules: Rules) -> jax.Array:
    """A flat table as float32 with zeros after its end: a row's window
    is sliced whole, and a slice may not run past the array (XLA would move it back). Both
    slices fit: the rival's (the longest row) and mine (`WINDOW - 1` after a row's first
    entry), the longer where rows are shorter than the window (a game of few boxes)."""
    out = np.zeros(len(flat) + max(score_bins(rules)[0], WINDOW) + 1, np.float32)
    out[: len(flat)] = flat
    return jnp.asarray(out)


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
    share: jax.Array | float,
    mixed: bool,
) -> jax.Array:
    """R_s'(d), d = 1 .. WINDOW - 1, of next states [n] (mask, upper, flag), [n, d]: T's
    `share` of T + (1 - share) E, or T alone where no weight is below 1 (`mixed` False,
    static); 0 past a row's end."""
    rows, lengths = jnp.maximum(tables.rows[states], 0), tables.lengths[states]
    chances = jax.vmap(_window, in_axes=(None, 0))(tables.best, rows + 1)
    if mixed:
        expected = jax.vmap(_window, in_axes=(None, 0))(tables.follow, rows + 1)
        chances = share * chances + (1.0 - share) * expected
    return jnp.where(jnp.arange(1, WINDOW) < lengths[:, None], chances, 0.0)


def win_chances(
    tables: TargetSeekerTables,
    states: tuple[jax.Array, jax.Array, jax.Array],
    totals: jax.Array,
    rival: tuple[jax.Array, jax.Array],
    share: jax.Array | float,
    mixed: bool,
) -> jax.Array:
    """W(s', X') of turn ends [n]: next states (mask, upper, flag) and my totals there, against
    the best rival's final-score distribution (`my_rows` says which rows are read)."""
    pmf, cdf = rival
    bins = cdf.shape[-1]
    chances = my_rows(tables, states, share, mixed)
    # I win when Y = X' - 1 + d and I score at least d more (d >= 1), or when Y < X' already.
    rivals = jax.vmap(_window, in_axes=(None, 0))(pmf, jnp.clip(totals, 0, bins - WINDOW))
    below = jnp.where(totals >= 1, cdf[jnp.clip(totals - 1, 0, bins - 1)], 0.0)
    return below + jnp.sum(chances * rivals, axis=-1)


def roll_chances(
    tables: TargetSeekerTables,
    own: State,
    rival: tuple[jax.Array, jax.Array],
    share: jax.Array | float,
    mixed: bool,
    rules: Rules,
) -> tuple[jax.Array, jax.Array, jax.Array, jax.Array]:
    """W of writing each of the 252 rolls in each box of one card [252, boxes], and the
    rewards, the next states' V and the legal entries of the same shape: W of each distinct
    turn end once (187 in Yahtzee, `moments.distinct_turn_ends`), spread to its entries."""
    mask, upper, flag = card_context(own.filled, own.scores, jnp, rules)
    points, legal, bonus = score_all_rolls(own.filled, own.scores[rules.yahtzee_box], rules)
    value_pair = (tables.value, tables.value)
    reward, future, _ = box_outcomes(
        points, legal, bonus, mask, upper, flag, value_pair, jnp, rules
    )
    ends = distinct_turn_ends(rules)
    after = distinct_next_states(mask, upper, flag, jnp, rules)
    states = tuple(part[ends.state] for part in after)
    totals = total_score(own, rules) + reward[ends.roll, ends.box]
    chances = win_chances(tables, states, totals, rival, share, mixed)[ends.of_roll]
    return chances, reward, future, legal


def keep_action(
    tables: TargetSeekerTables,
    own: State,
    rival: tuple[jax.Array, jax.Array],
    share: jax.Array | float,
    mixed: bool,
    rules: Rules,
    joint: Joint = None,
) -> jax.Array:
    """The keep of one card with the highest expected W at its turn's end (exact where
    `joint` says the card is in the joint endgame)."""
    chances, reward, future, legal = roll_chances(tables, own, rival, share, mixed, rules)
    if joint is not None:
        inside, turn = joint
        exact = joint_roll_chances(tables.joint, chances, own, reward, turn, rules)
        chances = jnp.where(inside, exact, chances)
    return best_keep(jnp.where(legal, chances, -jnp.inf), reward + future, own)


def box_turn_ends(
    own: State, rules: Rules
) -> tuple[tuple[jax.Array, jax.Array, jax.Array], jax.Array, jax.Array, jax.Array]:
    """Writing one card's roll in each box: the next states (mask, upper, flag) [boxes], my
    totals there, the rewards (the Yahtzee bonus included) and which boxes are legal."""
    mask, upper, flag = card_context(own.filled, own.scores, jnp, rules)
    points, legal, bonus = current_score_options(own, rules)
    boxes = jnp.arange(rules.num_boxes)
    reward, next_upper, next_flag = score_transition(boxes, points, upper, flag, jnp, rules)
    reward = reward + rules.yahtzee_bonus_points * bonus
    states = (mask | (1 << boxes), next_upper, next_flag)
    return states, total_score(own, rules) + reward, reward, legal


def score_action(
    tables: TargetSeekerTables,
    own: State,
    rival: tuple[jax.Array, jax.Array],
    share: jax.Array | float,
    mixed: bool,
    rules: Rules,
    joint: Joint = None,
) -> jax.Array:
    """The box of one card's final roll with the highest W (near ties: the most points; exact
    where `joint` says the card is in the joint endgame)."""
    states, totals, reward, legal = box_turn_ends(own, rules)
    chances = win_chances(tables, states, totals, rival, share, mixed)
    if joint is not None:
        inside, turn = joint
        exact = joint_chances(tables.joint, tables.joint.classes[states], totals, turn)
        chances = jnp.where(inside, exact, chances)
    worth = reward + tables.value[states]
    chosen = best_by_chance_then_points(jnp.where(legal, chances, -jnp.inf), worth)
    return (NUM_KEEP_ACTIONS + chosen).astype(jnp.int32)


def chosen_turn_end(
    tables: TargetSeekerTables, own: State, others: State, action: jax.Array, rules: Rules
) -> tuple[jax.Array, jax.Array]:
    """(W by T, W by E) of the turn end one card's score decision chose (`action`, a box's):
    hindsight's and the exact lower bound's chance to win from there (what the calibration
    compares with the matches' results); NaN for a keep."""
    states, totals, _, _ = box_turn_ends(own, rules)
    box = jnp.clip(action - NUM_KEEP_ACTIONS, 0, rules.num_boxes - 1)
    chosen = tuple(part[box][None] for part in states)
    rival = best_rival_distribution(tables, others, rules)
    by_target, by_expected = (
        win_chances(tables, chosen, totals[box][None], rival, share, mixed=True)[0]
        for share in (1.0, 0.0)
    )
    keep = action < NUM_KEEP_ACTIONS
    return jnp.where(keep, jnp.nan, by_target), jnp.where(keep, jnp.nan, by_expected)


def make_target_seeker(
    rules: str | Rules, cache_dir: str | os.PathLike | None, weight: Any, joint: bool
) -> tuple[Any, TargetSeekerTables]:
    """A match policy (tables, own cards [B], the other cards [B, K], keys) -> actions [B],
    each turn for the highest W against the best of the K others (see the module's
    docstring), and its tables (its parameters: arguments of the compiled program); `weight`
    one hindsight weight or a schedule [boxes, 2] (`check_weight`), `joint` whether the
    two-player joint endgame is solved exactly (`solver.joint_endgame`)."""
    rules = get_rules(rules)
    weight = check_weight(weight, rules)
    return (
        target_seeker_policy(rules, is_mixed(weight)),
        target_seeker_tables(rules, cache_dir, weight, joint),
    )


def turn_and_seat(own: State, others: State) -> tuple[jax.Array, jax.Array]:
    """One card's turn (its filled boxes) and seat: 1 where another card has more boxes filled
    (it played this round before me), else 0; the schedule's row and column."""
    filled = jnp.sum(own.filled)
    return filled, jnp.any(jnp.sum(others.filled, axis=-1) > filled).astype(jnp.int32)


def hindsight_share(
    tables: TargetSeekerTables, own: State, others: State, rules: Rules
) -> jax.Array:
    """T's share of my rows at one card's decision: 1 where every other card has at most one
    turn left (it will have finished by my next decision, so hindsight is exact), else the
    weight of my turn and seat (`turn_and_seat`)."""
    filled, after = turn_and_seat(own, others)
    exact = jnp.all(jnp.sum(others.filled, axis=-1) >= rules.num_boxes - 1)
    return jnp.where(exact, 1.0, tables.weights[jnp.minimum(filled, rules.num_boxes - 1), after])


def target_seeker_policy(rules: Rules, mixed: bool) -> Any:
    """The target-seeker's policy (`make_target_seeker`); `mixed` (static): some hindsight
    weight of its tables is below 1, so its rows read E as well as T."""

    def facing(tables: TargetSeekerTables, own: State, others: State, joint: bool) -> tuple:
        """What one card's decision faces: the best rival's final score, T's share of my rows
        and, with `joint` (static), where the joint endgame is and the opponent's turn in it."""
        rival = best_rival_distribution(tables, others, rules)
        share = hindsight_share(tables, own, others, rules)
        if not joint:
            return rival, share, None
        other = jax.tree.map(lambda part: part[0], others)
        turn = opponent_turn(tables.value, tables.joint, other, rules)
        return rival, share, (in_joint_endgame(own, other, rules), turn)

    def one(tables: TargetSeekerTables, own: State, faced: tuple, scoring: bool) -> jax.Array:
        rival, share, joint = faced
        act = score_action if scoring else keep_action
        return act(tables, own, rival, share, mixed, rules, joint)

    def decide(tables: TargetSeekerTables, own: State, others: State, joint: bool) -> jax.Array:
        # What the cards face, for the whole batch first: inside the chunks below XLA fused the
        # rival's distribution into each read of it (a keep 298 us a card, against 116).
        faced = jax.vmap(functools.partial(facing, joint=joint), in_axes=(None, 0, 0))(
            tables, own, others
        )
        # Lockstep matches take one kind of decision at a time: one branch runs.
        scoring = own.roll_index == LAST_ROLL
        branches = [
            functools.partial(
                jax.lax.map,
                lambda cards, kind=kind: one(tables, *cards, scoring=kind),
                (own, faced),
                batch_size=CARDS_AT_ONCE,
            )
            for kind in (False, True)
        ]

        def mixed_kinds() -> jax.Array:
            return jnp.where(scoring, branches[1](), branches[0]())

        uniform = jnp.all(scoring == scoring[0])
        return jax.lax.cond(
            uniform, lambda: jax.lax.switch(scoring[0].astype(jnp.int32), branches), mixed_kinds
        )

    def policy(tables: TargetSeekerTables, own: State, others: State, keys: jax.Array) -> jax.Array:
        if tables.joint is None or others.filled.shape[1] != 1:  # static: two players only
            return decide(tables, own, others, joint=False)
        first = jax.tree.map(lambda part: part[:, 0], others)
        inside = jax.vmap(in_joint_endgame, in_axes=(0, 0, None))(own, first, rules)
        # The joint endgame's work only at the decisions some card of the batch is in it.
        return jax.lax.cond(
            jnp.any(inside),
            lambda: decide(tables, own, others, joint=True),
            lambda: decide(tables, own, others, joint=False),
        )

    return policy
