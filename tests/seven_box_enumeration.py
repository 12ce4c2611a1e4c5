"""Plain-Python enumeration for hand-made match positions of the seven-box game (the upper six
and a 50-point five of a kind, `positions.seven_box_rules`): the dice as sorted tuples and their
chances, a box's points, a card with some boxes open, values over margins read after a move."""

from __future__ import annotations

import itertools
from collections import Counter

import numpy as np

FULL = (1 << 7) - 1  # the seven-box card, full
YAHTZEE = 6


def open_only(*boxes: int) -> int:
    """The card with only `boxes` open."""
    return FULL & ~sum(1 << box for box in boxes)


def _rolls(count: int) -> dict[tuple[int, ...], float]:
    """Each sorted outcome of `count` dice and its probability, by enumerating 6^count."""
    outcomes = Counter(tuple(sorted(dice)) for dice in itertools.product(range(1, 7), repeat=count))
    return {dice: times / 6**count for dice, times in outcomes.items()}


ROLLS = {count: _rolls(count) for count in range(6)}

KEEPS = {
    roll: sorted({keep for size in range(6) for keep in itertools.combinations(roll, size)})
    for roll in ROLLS[5]
}


def played_turn(final) -> tuple[np.ndarray, np.ndarray]:
    """A turn from its start, (the value chosen by, the value carried): `final(roll)` gives both
    for each final roll; each keep is the first of the highest expected chosen value, per
    margin (where both are one value, the best keep's)."""
    chosen = {roll: final(roll) for roll in ROLLS[5]}
    for _ in range(2):  # the two re-rolls, last first
        by_keep = {}
        for keep in {keep for roll in ROLLS[5] for keep in KEEPS[roll]}:
            more = ROLLS[5 - len(keep)].items()
            by_keep[keep] = tuple(
                sum(p * chosen[tuple(sorted(keep + dice))][part] for dice, p in more)
                for part in (0, 1)
            )
        before = {}
        for roll in ROLLS[5]:
            best, carried = by_keep[KEEPS[roll][0]]
            for keep in KEEPS[roll][1:]:
                value, carry = by_keep[keep]
                better = value > best
                best, carried = np.where(better, value, best), np.where(better, carry, carried)
            before[roll] = (best, carried)
        chosen = before
    return tuple(sum(p * chosen[roll][part] for roll, p in ROLLS[5].items()) for part in (0, 1))


def points(roll: tuple[int, ...], box: int) -> int:
    """What `roll` scores in `box`: face x count in an upper box, 50 for five alike."""
    if box == YAHTZEE:
        return 50 if len(set(roll)) == 1 else 0
    return (box + 1) * roll.count(box + 1)


def shifted(values: np.ndarray, shift: int) -> np.ndarray:
    """`values` over consecutive margins read at margin + shift (the ends held)."""
    return values[np.clip(np.arange(len(values)) + shift, 0, len(values) - 1)]
