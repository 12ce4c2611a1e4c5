"""The joint endgame of two cards, solved exactly: the first seat's second-to-last turn (issue 63).

Against the optimal-solitaire agent the target-seeker's turn ends are exact wherever the
opponent finishes before my next decision (`solver.seeker_policy`). One turn earlier they are
not: with two boxes open on both cards (I play first), the opponent plays a turn between mine,
and I play my last turn knowing its result, before its last. Hindsight values my turn's end as
if I knew its final score; the exact value is

    W(s', X') = sum_o P(o) L(s', o, X' - Y_o),

o the opponent's turn: the roll it writes and the box, under its own play (the box and keeps of
highest expected score, read from the same value table, first of the best as the optimal agent
takes them), leading to its card with one box open and total Y_o; L my best chance to win from
my last turn against its last:

    L(s', t', m) = max over my last turn's play of P(m + my points > its points),

its points distributed as the expected-score player's from t' (the "expected" target table). A
last turn depends on the card only through the reward each final roll would bring to the box
left (its points, upper bonus and Yahtzee bonus): the one-box-open states fall into a few dozen
classes by that reward vector (85 in Yahtzee), and L is a table over (my class, its class,
margin), margins -MARGINS .. MARGINS (below: 0, above: 1; a box brings at most REWARD_BINS - 1
points). It is the solver's widget on every (class, margin) column at once, cached beside the
value table. In play a turn end costs one product over the 252 rolls the opponent can end on.
"""

from __future__ import annotations

import functools
import os
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from yahtzee_jax.files import cached, read_arrays
from yahtzee_jax.game.engine import State, total_score
from yahtzee_jax.game.rules import NUM_DICE, Rules
from yahtzee_jax.solver.moments import (
    box_outcomes,
    box_rewards,
    distinct_next_states,
    next_state_of_roll,
)
from yahtzee_jax.solver.position import card_context
from yahtzee_jax.solver.states import full_mask, num_upper_totals, table_shape
from yahtzee_jax.solver.target_layout import state_chances, target_layout
from yahtzee_jax.solver.value_table import cache_file, keep_archive
from yahtzee_jax.solver.widget import (
    best_keep_values,
    keep_action_values,
    keep_values,
    turn_start_value,
)
from yahtzee_jax.solver.widget_tables import (
    KEEP_OF_ACTION,
    NUM_FLAGS,
    ROLL_PROBABILITIES,
    WIDGET_ORDER,
    mask_to_filled,
    score_all_rolls,
)
from yahtzee_jax.solver.win_policy import REWARD_BINS

MARGINS = REWARD_BINS  # L is kept for margins -MARGINS .. MARGINS
OPEN = 2  # boxes open on both cards where the joint endgame is solved
# Columns a widget pass takes at a time: its gathers stay in the CPU's caches (official rules'
# 32,725 columns at once took 1.03 s a pass, in 16 passes of 2,048 0.16 s; 2-core AMD EPYC)
WIDGET_COLUMNS = 2048


class JointEndgame(NamedTuple):
    """What the exact joint endgame plays by, as device arrays."""

    classes: jax.Array  # int32[masks, totals, 2]: a one-box-open state's class, -1 elsewhere
    last_turn: jax.Array  # float32[classes, classes, 2 MARGINS + 1]: L[mine, its, m + MARGINS]


def last_turn_rewards(rules: Rules) -> tuple[tuple[np.ndarray, ...], np.ndarray]:
    """Every one-box-open state (mask, upper, flag) [n] and the reward int[n, 252] each final
    roll brings in the box left (points, upper bonus, Yahtzee bonus)."""
    states, rewards = [], []
    yahtzee = rules.yahtzee_box
    for box in range(rules.num_boxes):
        mask = full_mask(rules) & ~(1 << box)
        filled = mask_to_filled(np.array(mask), rules)
        for flag in range(NUM_FLAGS):
            if flag and box == yahtzee:
                continue  # the Yahtzee box open holds nothing yet
            points, legal, bonus = score_all_rolls(filled, flag * rules.yahtzee_score, rules)
            # The box left takes every roll: a last turn has no other choice.
            assert legal[:, box].all(), (rules.name, box)
            for upper in range(num_upper_totals(rules)):
                reward = box_rewards(points, upper, np, rules)[:, box]
                rewards.append(reward + rules.yahtzee_bonus_points * bonus)
                states.append((mask, upper, flag))
    return tuple(np.array(part) for part in zip(*states, strict=True)), np.array(rewards)


def last_turn_classes(rules: Rules) -> tuple[np.ndarray, np.ndarray, tuple[np.ndarray, ...]]:
    """(class of each state int32[masks, totals, 2] (-1: not one box open), the classes'
    reward vectors int[classes, 252], each class's states (mask, upper, flag) [n])."""
    states, rewards = last_turn_rewards(rules)
    vectors, inverse = np.unique(rewards, axis=0, return_inverse=True)
    classes = np.full(table_shape(rules), -1, np.int32)
    classes[states] = inverse.reshape(-1)
    return classes, vectors, states


def its_points(rules: Rules, follow: np.ndarray, classes: np.ndarray, states: tuple) -> np.ndarray:
    """P(the expected-score player's last turn brings p points), p < REWARD_BINS, of each
    class [classes, REWARD_BINS], from the flat "expected" target table at a reachable state
    of the class (a class's states share their play: their rewards are the same)."""
    layout = target_layout(rules)
    mass = np.zeros((int(classes.max()) + 1, REWARD_BINS))
    for state in zip(*states, strict=True):
        klass = classes[state]
        if layout.rows[state] < 0 or mass[klass].any():
            continue  # unreachable, or the class has its distribution
        at_least = np.append(state_chances(follow, layout, state), 0.0)  # P(F >= d), then 0
        mass[klass, : len(at_least) - 1] = at_least[:-1] - at_least[1:]
    return mass


def last_turn_chances(rewards: np.ndarray, points: np.ndarray) -> np.ndarray:
    """L[mine, its, m + MARGINS] (float32): my best chance that m plus my last turn's points beat
    its last turn's (`points`, [classes, REWARD_BINS]), my rewards per final roll [classes, 252];
    the widget on every (my class, margin) column, one of its classes at a time."""
    count = len(rewards)
    margins = np.arange(-MARGINS, MARGINS + 1)
    below = np.cumsum(points, axis=1)  # P(its points <= k)
    # Its most points: from there on `below` adds zeros, so it stays exactly at its last value.
    tops = np.array([np.flatnonzero(row).max(initial=0) for row in points])
    # Final rolls in the widget's order (`turn_start_value` reads them so), a column for each
    # (my class, margin): I win when its points are at most m + mine - 1.
    needed = rewards.T[WIDGET_ORDER[NUM_DICE]][:, :, None] + margins - 1  # [252, mine, m]
    needed = needed.reshape(len(needed), -1)
    fewest, most = needed.min(axis=0), needed.max(axis=0)
    out = np.zeros((count, count, len(margins)), np.float32)
    for its in range(count):
        # Only the columns where the roll matters go through the widget (a quarter of plain
        # rules', half of Yahtzee's): with every roll needing below 0 the column is 0, and with
        # every roll past its most points each final roll wins with the same chance, a column
        # the same for every such margin.
        live = np.flatnonzero((most >= 0) & (fewest < tops[its]))
        sure = np.flatnonzero(fewest >= tops[its])
        columns = np.append(live, sure[:1])
        values = np.empty(len(columns))
        for start in range(0, len(columns), WIDGET_COLUMNS):
            ahead = np.ascontiguousarray(needed[:, columns[start : start + WIDGET_COLUMNS]])
            final = np.where(ahead < 0, 0.0, below[its][np.clip(ahead, 0, REWARD_BINS - 1)])
            values[start : start + WIDGET_COLUMNS] = turn_start_value(final)
        row = np.zeros(needed.shape[1])
        row[live] = values[: len(live)]
        row[sure] = values[len(live) :]  # none, or the one every such column shares
        out[:, its] = row.reshape(count, -1)
    return out


def solve_joint_endgame(rules: Rules, follow: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(classes int32[masks, totals, 2], L float32[classes, classes, 2 MARGINS + 1]) of `rules`
    from its flat "expected" target table."""
    classes, rewards, states = last_turn_classes(rules)
    points = its_points(rules, follow, classes, states)
    return classes, last_turn_chances(rewards, points)


def joint_endgame_tables(
    rules: Rules, cache_dir: str | os.PathLike | None, follow: np.ndarray
) -> JointEndgame:
    """`solve_joint_endgame` on the device, cached beside the value table (`files.cached`:
    checksummed, written whole; about 10 s the first time in Yahtzee on two cores, once its
    "expected" target table is there: `experiments/joint_endgame_speed.py`)."""
    path = cache_file(rules, cache_dir, table="joint-endgame")

    def make() -> tuple[np.ndarray, np.ndarray]:
        classes, chances = solve_joint_endgame(rules, follow)
        keep_archive(path, "joint endgame", classes=classes, chances=chances)
        return classes, chances

    classes, chances = cached(path, functools.partial(load, rules=rules), make, "joint endgame")
    return JointEndgame(jnp.asarray(classes), jnp.asarray(chances))


def load(path: os.PathLike, rules: Rules) -> tuple[np.ndarray, np.ndarray] | None:
    """The cached (classes, L), or None if missing or not this solver's output (shapes, class
    range, chances in [0, 1])."""
    found = read_arrays(path, ("classes", "chances"))
    if found is None:
        return None  # missing or damaged: solve again
    classes, chances = found
    count = len(chances)
    if (
        classes.shape != table_shape(rules)
        or chances.shape != (count, count, 2 * MARGINS + 1)
        or classes.min() < -1
        or classes.max() >= count
        or not np.all((chances >= 0.0) & (chances <= 1.0))
    ):
        return None
    return classes, chances


# P(next roll | keep) [462, 252]: a keep's expectation of each roll's indicator.
_KEEP_ROLLS = np.asarray(keep_values(np.eye(len(ROLL_PROBABILITIES))), np.float32)


def _chosen_keeps(keep_value: jax.Array) -> jax.Array:
    """The keep [252] each roll takes: the first of its 32 keep actions of highest value, as the
    optimal agent takes them."""
    by_action = keep_action_values(keep_value, jnp.arange(len(ROLL_PROBABILITIES)), jnp)
    action = jnp.argmax(by_action, axis=1)
    return jnp.asarray(KEEP_OF_ACTION)[jnp.arange(len(action)), action]


def opponent_choices(
    value: jax.Array, other: State, rules: Rules
) -> tuple[jax.Array, jax.Array, jax.Array, jax.Array]:
    """The optimal agent's play of one card's turn, for every roll [252]: its keep with two
    re-rolls to come and with one, the box it writes a final roll in and the reward there."""
    mask, upper, flag = card_context(other.filled, other.scores, jnp, rules)
    points, legal, bonus = score_all_rolls(other.filled, other.scores[rules.yahtzee_box], rules)
    reward, future, _ = box_outcomes(
        points, legal, bonus, mask, upper, flag, (value, value), jnp, rules
    )
    worth = jnp.where(legal, reward + future, -jnp.inf)
    box = jnp.argmax(worth, axis=1)  # the first best, as the optimal agent's
    last = keep_values(worth.max(axis=1), jnp)
    first = keep_values(best_keep_values(last, jnp), jnp)
    written = jnp.take_along_axis(reward, box[:, None], axis=1)[:, 0]
    return _chosen_keeps(first), _chosen_keeps(last), box, written


def opponent_turn(
    value: jax.Array, joint: JointEndgame, other: State, rules: Rules
) -> tuple[jax.Array, jax.Array, jax.Array]:
    """The optimal agent's turn on one card: for each roll it can end on [252], its chance,
    the class of the card it leaves and its total there."""
    first, last, box, reward = opponent_choices(value, other, rules)
    keep_rolls = jnp.asarray(_KEEP_ROLLS)
    second_roll = jnp.asarray(ROLL_PROBABILITIES, jnp.float32) @ keep_rolls[first]
    chance = second_roll @ keep_rolls[last]
    after = distinct_next_states(*card_context(other.filled, other.scores, jnp, rules), jnp, rules)
    state = jnp.asarray(next_state_of_roll(rules))[jnp.arange(len(box)), box]
    klass = joint.classes[tuple(part[state] for part in after)]
    return chance, klass, total_score(other, rules) + reward


def joint_chances(
    joint: JointEndgame,
    mine: jax.Array,
    totals: jax.Array,
    turn: tuple[jax.Array, jax.Array, jax.Array],
) -> jax.Array:
    """W of my turn ends [n]: my classes and totals there, against the opponent's turn to come
    (`opponent_turn`)."""
    chance, its, its_totals = turn
    margin = jnp.clip(totals[:, None] - its_totals[None, :], -MARGINS, MARGINS) + MARGINS
    last = joint.last_turn[jnp.maximum(mine, 0)[:, None], jnp.maximum(its, 0)[None, :], margin]
    return last @ chance


def joint_roll_chances(
    joint: JointEndgame,
    chances: jax.Array,
    own: State,
    reward: jax.Array,
    turn: tuple[jax.Array, jax.Array, jax.Array],
    rules: Rules,
) -> jax.Array:
    """The keeps' turn-end chances [252, boxes] (`seeker_policy.keep_action`) with those of my
    `OPEN` open boxes replaced by their exact W: each roll written there for its `reward`
    [252, boxes] (2 x 252 turn ends, each one product over the opponent's final rolls)."""
    mask, upper, flag = card_context(own.filled, own.scores, jnp, rules)
    boxes = jnp.nonzero(~own.filled, size=OPEN)[0]
    state = jnp.asarray(next_state_of_roll(rules))[:, boxes]  # [252, OPEN]
    mine = joint.classes[
        tuple(part[state] for part in distinct_next_states(mask, upper, flag, jnp, rules))
    ]
    totals = total_score(own, rules) + reward[:, boxes]
    exact = joint_chances(joint, mine.reshape(-1), totals.reshape(-1), turn)
    return chances.at[:, boxes].set(exact.reshape(state.shape))


def in_joint_endgame(own: State, other: State, rules: Rules) -> jax.Array:
    """Whether a card's decision lies in the joint endgame: it and the other card (one
    opponent) each have `OPEN` boxes open, so the other plays a turn between my last two."""
    boxes = rules.num_boxes - OPEN
    return (jnp.sum(own.filled) == boxes) & (jnp.sum(other.filled) == boxes)
