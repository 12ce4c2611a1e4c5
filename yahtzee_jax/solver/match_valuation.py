"""The target-seeker's valuations as rows of the exact match solve: their exact win rates.

The target-seeker (`solver.seeker_policy`) values the end of my turn, my card a' and margin x'
(my total - its total) with the opponent's card b, by

    W(a', x', b) = sum_y P_b(y) [w T_a'(y + 1 - x') + (1 - w) E_a'(y + 1 - x')],

P_b the opponent's points to come from b under its own (expected-score) play, T_a' my best
chance of at least d more points (hindsight: as if told y), E_a' my chance under expected-score
play (an exact lower bound), w the hindsight weight (1 where the opponent will finish before my
next decision, where T is exact). `solver.match_exact` indexes my rows after a move at
j' = 1 - x' + most(b), so with u = most(b) - y the row is a convolution:

    W[j'] = sum_u P_b(most(b) - u) R_a'(j' - u),  R = w T + (1 - w) E, R(d < 0) = 1,

of the same length 1 + most(b) + most(a') as the exact rows. Given these rows as its
`valuation`, `solve_match` plays my turns by them and carries my exact chances through those
choices: the exact win rate of the valuation's player, with no simulation noise. On small games
(no bonuses) this measures how much of the best real player's win rate each valuation keeps, and
at which turns it loses the rest (a valuation that plays only the turns before some turn, the
best play after it).
"""

from __future__ import annotations

import os

import numpy as np

from yahtzee_jax.errors import UserError
from yahtzee_jax.game.rules import Rules
from yahtzee_jax.solver.ceiling import score_distribution
from yahtzee_jax.solver.match_cards import check_rules
from yahtzee_jax.solver.match_exact import Rows, Valuation, ValuationRows
from yahtzee_jax.solver.states import num_upper_totals
from yahtzee_jax.solver.target_table import target_tables


class _CardRows(dict):
    """A card's row of a target table, read when first asked for (`match_exact.card_id`)."""

    def __init__(self, rules: Rules, policy: str, cache_dir: str | os.PathLike | None) -> None:
        super().__init__()
        self.table = target_tables(rules, cache_dir=cache_dir, policy=policy)
        self.totals = num_upper_totals(rules)

    def __missing__(self, card: int) -> np.ndarray:
        mask, upper = divmod(card, self.totals)
        row = self[card] = np.asarray(self.table.chances((mask, upper, 0)))
        return row


def _weight_of(
    weights: np.ndarray, rules: Rules, its_card: int, my_card_after: int, totals: int
) -> float:
    """The hindsight weight of my turn (my boxes filled before the move) and seat (1 where the
    opponent has filled more boxes: it moved first this round), 1 where the opponent has at
    most one box open (it finishes before my next decision: T is exact), as
    `seeker_policy.hindsight_share` reads it."""
    its_filled = bin(its_card // totals).count("1")
    if its_filled >= rules.num_boxes - 1:
        return 1.0
    turn = bin(my_card_after // totals).count("1") - 1
    return float(weights[turn, int(its_filled > turn)])


def seeker_valuation(
    rules: Rules,
    weight: float | np.ndarray = 1.0,
    cache_dir: str | os.PathLike | None = None,
    exact_from_turn: int | None = None,
) -> Valuation:
    """The target-seeker's valuation for `solve_match`: a hindsight `weight` (a number, or one
    per turn and seat, [boxes][2]); `exact_from_turn` t: from my turn t on (my boxes filled) the
    best play instead, so that its exact win rate less the valuation's says what it loses there."""
    check_rules(rules)
    weights = np.asarray(weight, np.float64)
    if weights.ndim and weights.shape != (rules.num_boxes, 2):
        raise UserError(
            f"hindsight weights: one per turn and seat, [{rules.num_boxes}][2]; got {weights.shape}"
        )
    if np.any((weights < 0) | (weights > 1) | np.isnan(weights)):
        raise UserError(f"hindsight weights must lie in [0, 1]; got {weight}")
    weights = np.broadcast_to(weights, (rules.num_boxes, 2))
    target = _CardRows(rules, "target", cache_dir)
    expected = _CardRows(rules, "expected", cache_dir)  # the opponent's, and my lower bound
    totals = num_upper_totals(rules)

    def turn_rows(others: np.ndarray, after: np.ndarray, most: np.ndarray) -> ValuationRows | None:
        turn = bin(int(after[0]) // totals).count("1") - 1
        if exact_from_turn is not None and turn >= exact_from_turn:
            return None

        def other_card_rows(k: int) -> Rows:
            its_card = int(others[k])
            out = Rows.empty(1 + most[its_card] + most[after][None, :])
            # P_b(most(b) - u) over u, and the chance that u exceeds each j' < most(b), summed
            # from the far end (1 - a running sum would leave rounding where it should be 0)
            reversed_chances = score_distribution(expected[its_card])[::-1]
            beyond = np.cumsum(reversed_chances[::-1])[::-1][1:]
            for i, my_card in enumerate(after.tolist()):
                w = _weight_of(weights, rules, its_card, my_card, totals)
                mine = (
                    target[my_card] if w == 1 else w * target[my_card] + (1 - w) * expected[my_card]
                )
                row = np.convolve(reversed_chances, mine)
                row[: len(beyond)] += beyond
                out.row(0, i)[:] = row
            return out

        return other_card_rows

    return turn_rows
