"""A turn planner for matches over a learned *afterstate win value* (`td-win`, issue 30).

W(afterstate) estimates P(win) + 1/2 P(draw) for a player right after it writes a box: its own
card (open boxes, capped upper total, Yahtzee-box flag, total) and every other card as they
stand then (those seated before it have played this turn, those after it have not: their filled
counts say which). The opponents' turns that follow are chance for it, as the dice are:
TD-Gammon's afterstates. At every decision the planner values each keep and box by the exact
expectation over the turn's remaining re-rolls (the solver's widget, as `agents.planner`)
with W at the leaves. Where the write ends the match (every card full: the player sits last and
this is its 13th box) the leaf is the exact outcome, 1, 1/2 or 0, not W.

**Why the leaves are grouped.** W is not additive in points, so the solitaire planner's
"points + V(next position)" split does not apply: a leaf is W at (next position, new total).
Evaluating the network at all 252 rolls x 13 boxes of every card at every keep decision is 3,276
evaluations a card. But a roll that is not a five of a kind scores its base points in any open box
(`widget_tables.base_points`, the Joker rules and the +100 touch only the six five-of-a-kinds), and
its next position and reward depend only on (box, those points) and the card: so the 246 other rolls
of a box share one leaf per distinct point value (an upper box: 5 counts; three of a kind: 0 and 24
sums; ...). The six five-of-a-kinds keep one leaf per (roll, box), their points read from the card
(`score_yahtzee_rolls`). That is 187 leaves a Yahtzee card instead of 3,276 (`leaf_slots`), spread
back to [252, boxes] by a static index; the test checks the spread values equal the naive per-(roll,
box) evaluation exactly. At a score decision the 13 boxes of the roll in hand are the only leaves.

Nothing here reads a solver table: W is whatever callable the caller gives (`algorithms.td_win`
plugs its network in).
"""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Callable
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from yahtzee_jax.agents.agent import Agent
from yahtzee_jax.agents.planner import card_positions, keep_values_by_action
from yahtzee_jax.errors import ConfigError
from yahtzee_jax.game.engine import (
    LAST_ROLL,
    State,
    current_score_options,
    empty_cards,
    total_score,
)
from yahtzee_jax.game.rules import NUM_KEEP_ACTIONS, Rules
from yahtzee_jax.solver.final_rolls import score_transition
from yahtzee_jax.solver.widget import best_keep_values, keep_values
from yahtzee_jax.solver.widget_tables import (
    ROLL_OF_CODE,
    YAHTZEE_ROLLS,
    base_points,
    dice_code,
    score_yahtzee_rolls,
)
from yahtzee_jax.solver.win_policy import best_by_chance_then_points, chance_and_points


class Standing(NamedTuple):
    """A card as the win value reads it: filled mask, capped upper total, Yahtzee-box flag and
    total score (int32 arrays that broadcast)."""

    mask: jax.Array
    upper: jax.Array
    flag: jax.Array
    total: jax.Array


# win(params, own [...], others [..., P-1]) -> W of those afterstates, float32[...]; the
# others' arrays broadcast against own's shape with the opponents' axis last
WinValue = Callable[[Any, Standing, Standing], jax.Array]


def standings(cards: State, rules: Rules) -> Standing:
    """The standing of each card of a batch of any shape."""
    shape = cards.filled.shape[:-1]
    flat = jax.tree.map(lambda leaf: leaf.reshape(-1, *leaf.shape[len(shape) :]), cards)
    mask, upper, flag = card_positions(flat, rules)
    total = jax.vmap(total_score, in_axes=(0, None))(flat, rules)
    return Standing(*(part.reshape(shape) for part in (mask, upper, flag, total)))


def outcome(own_total: jax.Array, others_total: jax.Array) -> jax.Array:
    """1 for beating every other total (last axis), 1/2 for tying the best, 0 below it."""
    best = jnp.max(others_total, axis=-1)
    return jnp.where(own_total > best, 1.0, jnp.where(own_total == best, 0.5, 0.0))


def match_over(own: Standing, others: Standing, rules: Rules) -> jax.Array:
    """Is every card full (own [...], others [..., P-1])?"""
    full = (1 << rules.num_boxes) - 1
    return (own.mask == full) & jnp.all(others.mask == full, axis=-1)


def leaf_values(
    win: WinValue, params: Any, own: Standing, others: Standing, rules: Rules
) -> jax.Array:
    """W of afterstates, or the exact outcome where every card is full (the match is over)."""
    over = match_over(own, others, rules)
    return jnp.where(over, outcome(own.total, others.total), win(params, own, others))


class LeafSlots(NamedTuple):
    """The distinct leaves of a turn (`leaf_slots`): the plain slots' box and base points, and
    the slot of each (roll, box); the five-of-a-kinds' slots follow the plain ones, roll-major."""

    box: np.ndarray  # int32[plain slots]
    points: np.ndarray  # int32[plain slots]
    slot_of: np.ndarray  # int32[252, boxes]


@functools.cache
def leaf_slots(rules: Rules) -> LeafSlots:
    """Group (roll, box) pairs whose afterstates are equal on every card (module docstring)."""
    points = base_points(rules)
    rolls, boxes = points.shape
    plain = np.setdiff1d(np.arange(rolls), YAHTZEE_ROLLS)
    slot_box, slot_points = [], []
    slot_of = np.empty((rolls, boxes), np.int32)
    for box in range(boxes):
        values, inverse = np.unique(points[plain, box], return_inverse=True)
        slot_of[plain, box] = len(slot_box) + inverse.ravel()
        slot_box += [box] * len(values)
        slot_points += values.tolist()
    fives = np.arange(len(YAHTZEE_ROLLS) * boxes).reshape(len(YAHTZEE_ROLLS), boxes)
    slot_of[YAHTZEE_ROLLS] = len(slot_box) + fives
    return LeafSlots(np.array(slot_box, np.int32), np.array(slot_points, np.int32), slot_of)


def _written(
    own: Standing, box: jax.Array, points: jax.Array, bonus: jax.Array, rules: Rules
) -> Standing:
    """The standing after writing `points` in `box` (+ the Yahtzee bonus where `bonus`)."""
    reward, upper, flag = score_transition(box, points, own.upper, own.flag, jnp, rules)
    total = own.total + reward + rules.yahtzee_bonus_points * bonus
    parts = jnp.broadcast_arrays(own.mask | (1 << box), upper, flag, total)
    return Standing(*(part.astype(jnp.int32) for part in parts))


def turn_leaves(
    win: WinValue, params: Any, cards: State, others: Standing, rules: Rules
) -> tuple[jax.Array, jax.Array]:
    """The leaf value of writing each roll in each box, float32[252, boxes, B] (-inf where
    illegal), for cards [B] against the others' standings [B, P-1]: W at the `leaf_slots` only;
    and the points that write scores this turn (bonuses included), int32[252, boxes, B]."""
    slots = leaf_slots(rules)
    own = standings(cards, rules)
    boxes = jnp.arange(rules.num_boxes)
    plain = _written(
        jax.tree.map(lambda part: part[None], own),
        jnp.asarray(slots.box)[:, None],
        jnp.asarray(slots.points)[:, None],
        jnp.zeros((), jnp.int32),
        rules,
    )  # [plain slots, B]
    yahtzee_box = cards.scores[:, rules.yahtzee_box]
    fives_points, fives_legal, fives_bonus = (
        jnp.moveaxis(part, 0, -1)  # [6, boxes, B] and [6, B]
        for part in jax.vmap(score_yahtzee_rolls, in_axes=(0, 0, None))(
            cards.filled, yahtzee_box, rules
        )
    )
    fives = _written(
        jax.tree.map(lambda part: part[None, None], own),
        boxes[None, :, None],
        fives_points,
        fives_bonus[:, None, :].astype(jnp.int32),
        rules,
    )  # [6, boxes, B]
    leaves = Standing(
        *(
            jnp.concatenate([a, b.reshape(-1, b.shape[-1])])
            for a, b in zip(plain, fives, strict=True)
        )
    )
    slot_of = jnp.asarray(slots.slot_of)
    values = leaf_values(win, params, leaves, others, rules)[slot_of]
    points = (leaves.total - own.total)[slot_of]
    is_open = ~cards.filled.T  # [boxes, B]: a plain roll may be written in any open box
    legal = jnp.broadcast_to(is_open[None], values.shape)
    legal = legal.at[jnp.asarray(YAHTZEE_ROLLS)].set(fives_legal)
    return jnp.where(legal, values, -jnp.inf), points


def box_leaves(
    win: WinValue, params: Any, cards: State, others: Standing, rules: Rules
) -> tuple[jax.Array, jax.Array]:
    """The leaf value of writing the roll in hand in each box, float32[B, boxes] (-inf where
    illegal): at a score decision only these 13 afterstates are read; and the points each
    write scores this turn, int32[B, boxes]."""
    own = standings(cards, rules)
    points, legal, bonus = jax.vmap(current_score_options, in_axes=(0, None))(cards, rules)
    after = _written(
        jax.tree.map(lambda part: part[:, None], own),
        jnp.arange(rules.num_boxes)[None],
        points,
        bonus[:, None].astype(jnp.int32),
        rules,
    )
    others = jax.tree.map(lambda part: part[:, None], others)  # [B, 1, P-1]
    values = jnp.where(legal, leaf_values(win, params, after, others, rules), -jnp.inf)
    return values, after.total - own.total[:, None]


def last_keep_values(
    win: WinValue, params: Any, cards: State, others: State, rules: Rules
) -> jax.Array:
    """Expected W of each of the 462 keeps with one re-roll to come, and the expected points of
    the box each roll would be written in (the near ties' tie-break), [462, B, 2], for cards [B]
    against the other cards [B, P-1]. Nothing it reads changes within a turn (the own card's
    boxes, the others' cards), so both keep decisions of a turn can share it."""
    values, points = turn_leaves(win, params, cards, standings(others, rules), rules)
    values, points = jnp.moveaxis(values, 1, -1), jnp.moveaxis(points, 1, -1)  # [252, B, boxes]
    return keep_values(chance_and_points(values, points), jnp)


def keep_actions(last_keep: jax.Array, cards: State, roll_index: int) -> jax.Array:
    """The best keep actions int32[B] at keep decision `roll_index` (static) from the turn's
    `last_keep_values` (two re-rolls to come: one more layer of the widget, each channel's
    best as the solver's win-seeker takes it): the highest expected W, near ties (a decided
    match) broken by the expected points."""
    keep_value = last_keep
    if roll_index == 0:
        keep_value = keep_values(best_keep_values(last_keep, jnp), jnp)
    roll = jnp.asarray(ROLL_OF_CODE)[dice_code(cards.dice, jnp)]
    by_action = keep_values_by_action(keep_value, roll)  # [B, 32, 2]
    return best_by_chance_then_points(by_action[..., 0], by_action[..., 1]).astype(jnp.int32)


def box_actions(win: WinValue, params: Any, cards: State, others: State, rules: Rules) -> jax.Array:
    """The best box actions int32[B] at the score decision: the highest W, near ties (a decided
    match) broken by the points the box scores."""
    values, points = box_leaves(win, params, cards, standings(others, rules), rules)
    return (NUM_KEEP_ACTIONS + best_by_chance_then_points(values, points)).astype(jnp.int32)


def plan_win_decision(
    win: WinValue, params: Any, cards: State, others: State, rules: Rules, roll_index: int
) -> jax.Array:
    """Actions int32[B] of cards [B] all at decision `roll_index` (static) against the other
    cards [B, P-1]: the keep or box of the highest expected W."""
    if roll_index == LAST_ROLL:
        return box_actions(win, params, cards, others, rules)
    return keep_actions(last_keep_values(win, params, cards, others, rules), cards, roll_index)


def plan_win_actions(
    win: WinValue, params: Any, cards: State, others: State, rules: Rules
) -> jax.Array:
    """The planner's action for each card of a batch, whatever decision each is at (each kind
    of decision is computed only when some card is at it: one of the three in lockstep)."""
    roll_index = cards.roll_index
    actions = jnp.zeros(roll_index.shape, jnp.int32)
    for kind in range(LAST_ROLL + 1):
        chosen = jax.lax.cond(
            jnp.any(roll_index == kind),
            functools.partial(plan_win_decision, win, params, cards, others, rules, kind),
            lambda: jnp.zeros(roll_index.shape, jnp.int32),
        )
        actions = jnp.where(roll_index == kind, chosen, actions)
    return actions


@dataclasses.dataclass(frozen=True)
class WinPlannerAct:
    """The policy of a win planner (and a `self` seat's): own cards [B] against the other
    cards [B, P-1], in seat order after the player; alone (no other cards) against empty
    opponents' cards (`evaluate`; the win value was never trained on such positions). Equal
    per (W, rules, players), so `jit` reuses its program."""

    win: WinValue
    rules: Rules
    players: int

    def __call__(self, params: Any, own: State, others: State, keys: jax.Array) -> jax.Array:
        """The planner's actions for a batch of cards against their opponents."""
        if others.dice.shape[1] == 0:  # alone: empty opponents' cards
            others = empty_cards((own.dice.shape[0], self.players - 1), self.rules)
        if others.dice.shape[1] != self.players - 1:
            raise ConfigError(
                f"this win value was trained for {self.players}-player matches; it cannot play "
                f"a {others.dice.shape[1] + 1}-player one (--players {self.players})"
            )
        return plan_win_actions(self.win, params, own, others, self.rules)


def make_win_planner_agent(
    name: str, win: WinValue, params: Any, rules: Rules, players: int
) -> Agent:
    """An agent that plans each turn exactly with `win(params, ...)` at the afterstates."""
    return Agent(name, WinPlannerAct(win, rules, players), params, rules, reads_others=True)
