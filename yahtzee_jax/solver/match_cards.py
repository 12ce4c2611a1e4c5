"""The cards of the exact match solve (`solver.match_exact`): what a card is, which cards each
turn holds, who moves when, and how large a solve is.

A card is its filled boxes and, in a game with an upper bonus, its capped upper total, named by
one integer (`card_id`: mask x totals + upper; the mask itself without a bonus). A turn's cards
are those with its boxes filled that can follow the position's card: a superset of its mask,
with the upper totals the newly filled upper boxes can add.
"""

from __future__ import annotations

import numpy as np

from yahtzee_jax.errors import UserError
from yahtzee_jax.game.rules import NUM_DICE, NUM_FACES, Joker, Rules
from yahtzee_jax.solver.states import num_upper_totals
from yahtzee_jax.solver.target_layout import most_to_come
from yahtzee_jax.solver.widget_tables import num_masks

ME, OPPONENT = 0, 1  # who moves


def check_rules(rules: Rules) -> None:
    """One line unless a card of `rules` is its filled boxes and upper total alone (no Yahtzee
    bonus, whose flag the solve does not carry; no Joker, the rule the solve was checked on)."""
    if rules.yahtzee_bonus or rules.joker is not Joker.NONE:
        raise UserError(
            f"rules {rules.name!r}: the exact match solve needs no Yahtzee bonus and no Joker "
            "(a card must be its filled boxes and upper total alone)"
        )


def card_id(rules: Rules, mask: int, upper: int = 0) -> int:
    """A card as the solve names it: its mask and capped upper total, mask x totals + upper
    (the mask itself in a game without an upper bonus)."""
    totals = num_upper_totals(rules)
    if not (0 <= mask < num_masks(rules) and 0 <= upper < totals):
        raise UserError(f"no card of {rules.name!r} has mask {mask} and upper total {upper}")
    return mask * totals + upper


def _upper_sums(mask: int, base_mask: int) -> set[int]:
    """The upper points the upper boxes of `mask` filled since `base_mask` can have added."""
    sums = {0}
    for box in range(NUM_FACES):
        if mask >> box & 1 and not base_mask >> box & 1:
            sums = {total + (box + 1) * count for total in sums for count in range(NUM_DICE + 1)}
    return sums


def _supersets(masks: np.ndarray, base: int) -> np.ndarray:
    """The masks that hold every box of `base`."""
    return masks[(masks & base) == base]


def layer(rules: Rules, filled: int, base: int) -> np.ndarray:
    """The cards with `filled` boxes filled that can follow the card `base`, ascending."""
    totals = num_upper_totals(rules)
    base_mask, base_upper = divmod(base, totals)
    masks = np.arange(num_masks(rules))
    counts = np.array([bin(mask).count("1") for mask in masks])
    masks = _supersets(masks[counts == filled], base_mask)
    if totals == 1:
        return masks
    cards = [
        card_id(rules, int(mask), upper)
        for mask in masks
        for upper in sorted({min(totals - 1, base_upper + s) for s in _upper_sums(mask, base_mask)})
    ]
    return np.array(cards, np.int64)


def schedule(rules: Rules, start: tuple[int, int], first: int) -> list[tuple[int, int, int]]:
    """Each turn's (mover, my boxes filled, its boxes filled) from the position to the end:
    the players alternate, but a player with a full card moves no more."""
    mine, its = (bin(card // num_upper_totals(rules)).count("1") for card in start)
    mover, turns = first, []
    full = rules.num_boxes
    while mine < full or its < full:
        if (mine, its)[mover] == full:
            mover = 1 - mover
        turns.append((mover, mine, its))
        mine, its = (mine + 1, its) if mover == ME else (mine, its + 1)
        mover = 1 - mover
    return turns


def win_columns(rules: Rules, first: int = ME, start: tuple[int, int] = (0, 0)) -> int:
    """The (pair, target) chances of a solve's win rows, counted without solving: what its time
    and memory grow with (about 3 us a column on one core; the draws as many again)."""
    check_rules(rules)
    most = most_to_come(rules)[:, :, 0].reshape(-1)
    total = 0
    for mover, mine, its in schedule(rules, start, first):
        movers = layer(rules, (mine, its)[mover], start[mover])
        others = layer(rules, (mine, its)[1 - mover], start[1 - mover])
        # each pair's row is 1 + most(mover) + most(other) long
        total += len(others) * (len(movers) + int(most[movers].sum()))
        total += len(movers) * int(most[others].sum())
    return total
