"""Hand-made positions shared by the tests."""

from __future__ import annotations

import functools
import itertools
from collections.abc import Callable

import jax.numpy as jnp
import numpy as np

from yahtzee_jax.game import OFFICIAL, Rules, State


def card(
    dice=(1, 1, 1, 1, 1), scores=None, roll_index=0, rules: Rules = OFFICIAL, **fields
) -> State:
    """A card of `rules` with the given dice, written boxes {category: points} and roll index."""
    points = np.zeros(rules.num_boxes, np.int32)
    used = np.zeros(rules.num_boxes, bool)
    for category, value in (scores or {}).items():
        used[category], points[category] = True, value
    return State(
        dice=jnp.int32(sorted(dice)),
        roll_index=jnp.int32(roll_index),
        scores=jnp.asarray(points),
        filled=jnp.asarray(used),
        turns_left=jnp.int32(rules.num_turns - used.sum()),
        **fields,
    )


# A finished official card (the solver's and the target tables' hand-made end games open boxes
# of it): every box written, the upper section at 62, no Yahtzee.
FULL_CARD = {
    "ones": 2,
    "twos": 6,
    "threes": 9,
    "fours": 12,
    "fives": 15,
    "sixes": 18,
    "three_of_a_kind": 20,
    "four_of_a_kind": 0,
    "full_house": 25,
    "small_straight": 30,
    "large_straight": 40,
    "yahtzee": 0,
    "chance": 22,
}


def card_without(*open_boxes: str, **changes: int) -> dict[str, int]:
    """`FULL_CARD` with some boxes open and some points changed."""
    card = {**FULL_CARD, **changes}
    return {box: points for box, points in card.items() if box not in open_boxes}


def card_state(card: dict[str, int]) -> tuple[int, int, int]:
    """The turn-start state (mask, capped upper total, flag) of a Yahtzee card {box: points}."""
    names = OFFICIAL.box_names
    mask = sum(1 << names.index(box) for box in card)
    upper = min(sum(points for box, points in card.items() if box in names[:6]), 63)
    return mask, upper, int(card.get("yahtzee") == 50)


def seven_box_rules(name: str) -> Rules:
    """The smallest game of the family: the upper six and a 50-point five of a kind, no bonus
    and no Joker (a card is its filled boxes alone; its longest target row, 156, is shorter
    than the target-seeker's window)."""
    from yahtzee_jax.game.rules import UPPER_BOXES, Box, Joker, Kind

    five = Box("yahtzee", Kind.OF_A_KIND, 5, 50)
    return Rules(name, False, Joker.NONE, (*UPPER_BOXES, five), upper_bonus_points=0)


def enumerated_turn(score_now: Callable[[tuple[int, ...]], float], gamma: float = 1.0) -> float:
    """A turn's value by plain enumeration of its rolls and keeps (sorted dice, every keep
    mask): `score_now(dice)` values the final roll, and each keep decision is worth gamma times
    its best keep's mean over the re-rolled dice (1: the undiscounted turn). The first roll is
    no decision: the turn is the first keep's mean over it."""

    @functools.cache
    def roll_value(dice: tuple[int, ...], rerolls_left: int) -> float:
        if rerolls_left == 0:
            return score_now(dice)
        keeps = {tuple(dice[i] for i in range(5) if mask >> i & 1) for mask in range(32)}
        return gamma * max(keep_value(kept, rerolls_left) for kept in keeps)

    @functools.cache
    def keep_value(kept: tuple[int, ...], rerolls_left: int) -> float:
        outcomes = itertools.product(range(1, 7), repeat=5 - len(kept))
        values = [roll_value(tuple(sorted(kept + rolled)), rerolls_left - 1) for rolled in outcomes]
        return sum(values) / len(values)

    return keep_value((), 3)
