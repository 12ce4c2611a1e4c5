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


def points(roll: tuple[int, ...], box: int) -> int:
    """What `roll` scores in `box`: face x count in an upper box, 50 for five alike."""
    if box == YAHTZEE:
        return 50 if len(set(roll)) == 1 else 0
    return (box + 1) * roll.count(box + 1)


def shifted(values: np.ndarray, shift: int) -> np.ndarray:
    """`values` over consecutive margins read at margin + shift (the ends held)."""
    return values[np.clip(np.arange(len(values)) + shift, 0, len(values) - 1)]
